"""SQuAD-style span-QA features: questions and (windows of) contexts -> packed rows.

Long contexts are split into windows that fill the rest of `seq_length` after the question
and start every `doc_stride` tokens (Google BERT's `run_squad.py` scheme), packed by
`text.packing.pack_with` as the family packs pairs: `[CLS] question [SEP] window [SEP]`
(RoBERTa: `<s> question </s></s> window </s>`). `start_positions` / `end_positions` point at
the answer's first / last token in the window, or 0 ([CLS]) when the window does not hold
the whole answer or there is none. `token_offsets` [T, 2] are character offsets of each token
in the context ((-1, -1) outside it), `token_is_max_context` [T] marks the window where a
token has the most context, and `example_index` ties each window to its question.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning.features import TOKENIZE_CHUNK, ragged_rows, tokenize_texts
from bert_keras.errors import InputError
from bert_keras.tasks.span_qa.reader import SpanExample
from bert_keras.text.packing import pack_with, segment_starts


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
    questions = tokenize_texts(tokenizer, [ex.question for ex in examples])
    out = {k: [] for k in ("input_word_ids", "input_type_ids", "token_offsets",
                           "token_is_max_context", "example_index", "start_positions",
                           "end_positions")}
    for i in range(0, len(examples), TOKENIZE_CHUNK):
        chunk = examples[i:i + TOKENIZE_CHUNK]
        ids, starts, ends = (ragged_rows(x) for x in tokenizer.tokenize_with_offsets(
            tf.constant([ex.context for ex in chunk], tf.string)))
        windows = []  # (example, query, its windows, (first, last) answer token, char offsets)
        for j, ex in enumerate(chunk):
            query = questions[i + j][:max_query_length]
            # [CLS] question [SEP] (RoBERTa: [SEP][SEP]) window [SEP]
            window = seq_length - len(query) - 2 - tokenizer.separators_between
            if window < 1:
                raise ValueError(f"seq_length={seq_length} leaves no room for the context after a "
                                 f"{len(query)}-token question "
                                 f"(max_query_length={max_query_length})")
            to_char = _byte_to_char(ex.context)
            doc_starts, doc_ends = to_char[starts[j]], to_char[ends[j]]  # (D,)
            answer = _answer_tokens(ex, doc_starts, doc_ends)
            windows.append((i + j, query, _windows(len(ids[j]), window, doc_stride), answer,
                            doc_starts, doc_ends))
        # One packing call per chunk, for every window of every example in it.
        queries = [query for _, query, spans, *_ in windows for _ in spans]
        pieces = [ids[n - i][s:s + k] for n, _, spans, *_ in windows for s, k in spans]
        packed, kept = pack_with(tokenizer, [_ragged(queries), _ragged(pieces)], seq_length)
        word_ids, type_ids = packed["input_word_ids"].numpy(), packed["input_type_ids"].numpy()
        firsts = segment_starts(kept, tokenizer.separators_between)[1].numpy()  # (windows,)
        row = 0
        for n, _, spans, answer, doc_starts, doc_ends in windows:
            for s, (start, length) in enumerate(spans):
                first = firsts[row]
                k = first + length + 1  # the packed row: up to the closing [SEP]
                offsets = np.full((k, 2), -1, np.int32)
                offsets[first:first + length, 0] = doc_starts[start:start + length]
                offsets[first:first + length, 1] = doc_ends[start:start + length]
                max_ctx = np.zeros(k, bool)
                for t in range(length):
                    max_ctx[first + t] = _max_context(spans, s, start + t)
                start_pos = end_pos = 0
                if answer is not None and start <= answer[0] and answer[1] < start + length:
                    start_pos, end_pos = (a - start + first for a in answer)
                out["input_word_ids"].append(word_ids[row, :k])
                out["input_type_ids"].append(type_ids[row, :k])
                out["token_offsets"].append(offsets)
                out["token_is_max_context"].append(max_ctx)
                out["example_index"].append(n)
                out["start_positions"].append(start_pos)
                out["end_positions"].append(end_pos)
                row += 1
    for key in ("example_index", "start_positions", "end_positions"):
        out[key] = np.array(out[key], np.int32)
    return out


def _ragged(rows: list[np.ndarray]) -> tf.RaggedTensor:
    """int32 ragged [len(rows), (n)] from numpy rows (tf.ragged.constant is slow on many)."""
    lengths = np.array([len(r) for r in rows], np.int64)
    values = np.concatenate(rows).astype(np.int32) if rows else np.zeros(0, np.int32)
    return tf.RaggedTensor.from_row_lengths(values, lengths)


def _answer_tokens(ex: SpanExample, doc_starts: np.ndarray, doc_ends: np.ndarray):
    """(first, last) context token of the first answer, or None (no answer / no token)."""
    if ex.is_impossible or not ex.answers:
        return None
    text, char_start = ex.answers[0]
    char_end = char_start + len(text)
    if ex.context[char_start:char_end] != text:
        raise InputError(f"{ex.source}: answer {text!r} is not at character {char_start} of the "
                         f"context (found {ex.context[char_start:char_end]!r}).")
    inside = np.flatnonzero((doc_ends > char_start) & (doc_starts < char_end))
    if inside.size == 0:
        return None
    return int(inside[0]), int(inside[-1])
