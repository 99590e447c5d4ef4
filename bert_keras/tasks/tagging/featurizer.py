"""Tagged sentences -> model features: pre-split words (CoNLL), tokenized as the text they
make; a word's tag goes on its first piece and every other position gets `IGNORE_LABEL`; a
sentence longer than seq_length goes on in further rows (`example_index`). `word_index` [T]
gives each token's word (-1 for [CLS], [SEP] and non-first pieces), so `word_predictions`
maps token predictions back to one prediction per word.

Shape legend: N features, T tokens of one feature (before padding), C classes.

Example:
    >>> from bert_keras import finetuning_data as fd
    >>> from bert_keras.data.finetuning.label_map import LabelMap
    >>> from bert_keras.data.pretraining.pipeline import default_vocab_file
    >>> from bert_keras.text.tokenizer import WordPieceTokenizer
    >>> tok = WordPieceTokenizer(default_vocab_file())
    >>> ner = fd.load_bundled_task("bible_ner", "dev")[:2]
    >>> feats = tagging_features(ner, tok, 64, LabelMap.from_examples(ner))
    >>> back = word_predictions(feats["labels"], feats["word_index"], feats["num_words"])
    >>> [len(tags) for tags in back] == [len(ex.words) for ex in ner]
    True
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning.features import TOKENIZE_CHUNK, ragged_rows
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.names import IGNORE_LABEL
from bert_keras.tasks.tagging.reader import TaggingExample
from bert_keras.text.packing import pack_with, segment_starts


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
    "tagging_features",
    "word_predictions",
]
