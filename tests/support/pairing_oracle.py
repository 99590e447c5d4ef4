"""Test oracle: Google's pretraining-instance algorithm in Python/numpy (`InstanceBuilder`).

The library pairs in-graph (`bert_keras.data.pretraining.pairing.build_instances`); this is
the straightforward Python version of the same rules (`create_instances_from_document` of
Google's `create_pretraining_data.py`, plus SOP and FULL-SENTENCES), kept only as the reference
that tests/data/test_pretraining_data.py compares the in-graph pairing against (equal in
distribution, not in values: the random draws differ).
"""

import numpy as np

from bert_keras.data.pretraining.documents import PAIR_MODES, DocumentStats


def _truncated_lengths(la, lb, max_tokens):
    """Lengths after Google's truncate_seq_pair (trim the longer one; ties trim B)."""
    extra = la + lb - max_tokens
    if extra <= 0:
        return la, lb
    cut = min(abs(la - lb), extra)
    if la > lb:
        la -= cut
    else:
        lb -= cut
    extra -= cut
    return la - extra // 2, lb - (extra + 1) // 2


def _trim(ids, starts, keep, rng):
    """Keeps `keep` tokens, dropping each removed one from the front or back with p = 0.5."""
    drop = len(ids) - keep
    if drop <= 0:
        return ids, starts
    front = int(rng.binomial(drop, 0.5))
    ids, starts = ids[front:front + keep], starts[front:front + keep].copy()
    starts[0] = True  # a word cut at the front still starts where the segment starts
    return ids, starts


def _concat(segments):
    return (np.concatenate([s[0] for s in segments]), np.concatenate([s[1] for s in segments]))


class InstanceBuilder:
    """Turns tokenized documents into packed, unmasked instances.

    pair_mode: "nsp" (BERT: B is the next span, label 0, or from a random other document,
    label 1), "sop" (ALBERT: B is the next span, swapped with p = 0.5, label 1 = swapped; a
    one-sentence chunk is split at a random token), "none" (RoBERTa FULL-SENTENCES: whole
    sentences packed across documents, [SEP] between documents, segment ids 0, label 0).

    `build(documents, rng)` returns a dict of numpy arrays, N instances:
    input_ids, input_mask, segment_ids, word_starts: int32 [N, T]; next_sentence_labels int32 [N];
    source int32 [N, 6] = (doc_a, first_seg_a, end_seg_a, doc_b, first_seg_b, end_seg_b), document
    indices into `documents` (for tests and debugging; -1 where it does not apply).
    """

    def __init__(self, cls_id, sep_id, pad_id, max_seq_length=128, short_seq_prob=0.1,
                 pair_mode="nsp"):
        if pair_mode not in PAIR_MODES:
            raise ValueError(f"pair_mode must be one of {PAIR_MODES}, got {pair_mode!r}")
        if max_seq_length < 5:
            raise ValueError(f"max_seq_length must be >= 5, got {max_seq_length}")
        self.cls_id, self.sep_id, self.pad_id = int(cls_id), int(sep_id), int(pad_id)
        self.max_seq_length = int(max_seq_length)
        self.short_seq_prob = float(short_seq_prob)
        self.pair_mode = pair_mode

    def _target_length(self, max_tokens, rng):
        if rng.random() < self.short_seq_prob:
            return int(rng.integers(2, max_tokens + 1))
        return max_tokens

    def build(self, documents, rng, stats=None):
        stats = stats if stats is not None else DocumentStats()
        rows = []  # (a, b or None, label, source)
        if self.pair_mode == "none":
            rows = self._pack_full_sentences(documents, rng)
        else:
            for index in range(len(documents)):
                rows.extend(self._pairs_from_document(documents, index, rng, stats))
        stats.instances += len(rows)
        return self._to_arrays(rows)

    def _pairs_from_document(self, documents, index, rng, stats):
        doc = documents[index]
        max_tokens = self.max_seq_length - 3
        target = self._target_length(max_tokens, rng)
        if self.pair_mode == "sop" and len(doc) == 1 and len(doc[0][0]) < 2:
            stats.skipped_documents += 1
            return []
        rows, chunk, chunk_len, first, i = [], [], 0, 0, 0
        while i < len(doc):
            chunk.append(doc[i])
            chunk_len += len(doc[i][0])
            if i == len(doc) - 1 or chunk_len >= target:
                a_end = 1 if len(chunk) < 2 else int(rng.integers(1, len(chunk)))
                a = _concat(chunk[:a_end])
                src = [index, first, first + a_end, index, first + a_end, first + len(chunk)]
                label = 0
                if self.pair_mode == "nsp" and (len(chunk) == 1 or rng.random() < 0.5):
                    label = 1
                    b, src[3:] = self._random_b(documents, index, target - len(a[0]), rng)
                    i -= len(chunk) - a_end  # put the unused segments back
                elif len(chunk) == 1:  # sop, a single segment: split it at a random token
                    if len(a[0]) < 2:
                        chunk, chunk_len, first, i = [], 0, i + 1, i + 1
                        continue
                    cut = int(rng.integers(1, len(a[0])))
                    b = (a[0][cut:], a[1][cut:].copy())
                    b[1][0] = True
                    a = (a[0][:cut], a[1][:cut])
                    src[4:] = [first, first + 1]
                else:
                    b = _concat(chunk[a_end:])
                if self.pair_mode == "sop" and rng.random() < 0.5:
                    a, b, label, src = b, a, 1, src[3:] + src[:3]
                la, lb = _truncated_lengths(len(a[0]), len(b[0]), max_tokens)
                rows.append((_trim(*a, la, rng), _trim(*b, lb, rng), label, src))
                first = i + 1
                chunk, chunk_len = [], 0
            i += 1
        return rows

    def _random_b(self, documents, index, target_b, rng):
        n = len(documents)
        other = int(rng.integers(0, n - 1)) if n > 1 else 0
        if n > 1 and other >= index:
            other += 1  # any document but this one (a one-document pool falls back to itself)
        doc = documents[other]
        start = int(rng.integers(0, len(doc)))
        end = start
        length = 0
        while end < len(doc):
            length += len(doc[end][0])
            end += 1
            if length >= target_b:
                break
        return _concat(doc[start:end]), [other, start, end]

    def _pack_full_sentences(self, documents, rng):
        max_tokens = self.max_seq_length - 2
        rows, buf, buf_len = [], [], 0
        target = self._target_length(max_tokens, rng)
        sep = (np.array([self.sep_id], np.int32), np.array([True]))
        for index, doc in enumerate(documents):
            for s, (ids, starts) in enumerate(doc):
                for lo in range(0, len(ids), max_tokens):  # over-long sentences are split
                    piece = [(ids[lo:lo + max_tokens], starts[lo:lo + max_tokens])]
                    if s == 0 and lo == 0 and buf:
                        piece.insert(0, sep)  # document boundary inside a sequence
                    size = sum(len(p[0]) for p in piece)
                    if buf and buf_len + size > target:
                        rows.append((_concat(buf), None, 0, [index, -1, -1, -1, -1, -1]))
                        buf, buf_len = [], 0
                        target = self._target_length(max_tokens, rng)
                        piece = piece[-1:]
                        size = len(piece[0][0])
                    buf.extend(piece)
                    buf_len += size
        if buf:
            rows.append((_concat(buf), None, 0, [len(documents) - 1, -1, -1, -1, -1, -1]))
        return rows

    def _to_arrays(self, rows):
        n, t = len(rows), self.max_seq_length
        out = {
            "input_ids": np.full((n, t), self.pad_id, np.int32),
            "input_mask": np.zeros((n, t), np.int32),
            "segment_ids": np.zeros((n, t), np.int32),
            "word_starts": np.zeros((n, t), np.int32),
            "next_sentence_labels": np.zeros((n,), np.int32),
            "source": np.full((n, 6), -1, np.int32),
        }
        ids_out, ws_out, seg_out = out["input_ids"], out["word_starts"], out["segment_ids"]
        for r, (a, b, label, src) in enumerate(rows):
            la = len(a[0])
            ids_out[r, 0] = self.cls_id
            ids_out[r, 1:la + 1] = a[0]
            ws_out[r, 1:la + 1] = a[1]
            ids_out[r, la + 1] = self.sep_id
            end = la + 2
            if b is not None:
                lb = len(b[0])
                ids_out[r, end:end + lb] = b[0]
                ws_out[r, end:end + lb] = b[1]
                ids_out[r, end + lb] = self.sep_id
                seg_out[r, end:end + lb + 1] = 1
                end += lb + 1
            out["input_mask"][r, :end] = 1
            out["next_sentence_labels"][r] = label
            out["source"][r] = src
        return out


# Tokenized documents for the oracle: list of documents, each a list of segments.

def tokenize_documents(tokenizer, documents, stats=None):
    """Tokenizes documents in one batched call -> list of documents, each a list of segments.

    A segment is `(ids int32 [n], word_starts bool [n])`, word_starts True at the first
    WordPiece of each word. Lines with no tokens and documents left empty are dropped (counted).
    """
    stats = stats if stats is not None else DocumentStats()
    lines = [line for doc in documents for line in doc]
    if not lines:
        stats.documents += len(documents)
        return []
    words = tokenizer.tokenize_words(lines)  # int32 [N, (words), (pieces)]
    return split_tokenized([len(doc) for doc in documents], words.flat_values.numpy(),
                           words.values.row_splits.numpy(), words.row_splits.numpy(), stats)


def split_tokenized(lines_per_document, pieces, word_splits, line_splits, stats=None):
    """Flat tokenizer output (ragged [lines, (words), (pieces)] components) -> documents of
    `(ids, word_starts)` segments; empty lines and documents are dropped and counted."""
    stats = stats if stats is not None else DocumentStats()
    stats.documents += len(lines_per_document)
    stats.lines += int(np.sum(lines_per_document))
    pieces = np.asarray(pieces, np.int32)
    starts = np.zeros(len(pieces) + 1, bool)
    starts[word_splits[:-1]] = True
    starts = starts[:-1]
    offsets = np.asarray(word_splits)[np.asarray(line_splits)]  # piece offset of each line
    out, k = [], 0
    for num_lines in lines_per_document:
        segments = []
        for _ in range(num_lines):
            lo, hi = offsets[k], offsets[k + 1]
            k += 1
            if hi > lo:
                segments.append((pieces[lo:hi], starts[lo:hi]))
            else:
                stats.empty_token_lines += 1
        if segments:
            out.append(segments)
        else:
            stats.skipped_documents += 1
    return out
