"""Equal-score ties of a SentencePiece Unigram model put in transformers' order (`TieOrder`,
which `SentencePieceTokenizer` applies to the pieces it gets from tf-text)."""

import collections

import numpy as np
import tensorflow as tf


class TieOrder:
    """The order that transformers' Unigram gives to the equal-score ties of the model whose
    vocabulary is `pieces` (`word_start_marker`: its word-start mark, "▁"): called on ids
    [B, (P)] (and their byte offsets), it returns them in that order (`__call__`). A model
    with no two pieces of one repeated root costs nothing.

    Example:
    >>> order = TieOrder(["<unk>", "-", "--", "-----"], "\u2581")
    >>> ids = tf.ragged.constant([[3, 2], [2, 3]], tf.int32)
    >>> order(ids).to_list()
    [[2, 3], [2, 3]]
    """

    def __init__(self, pieces, word_start_marker):
        self.codes, self.base, self.limit = _tie_codes(pieces, word_start_marker)
        self.codes_np = None if self.codes is None else self.codes.numpy()

    def __call__(self, ids, begins=None, ends=None):
        """Pieces in the order of transformers' Unigram where the two differ: equal-score ties.

        A run of one repeated character (or root: "haha") split into pieces of different
        lengths ("-----" + "--" or "--" + "-----") scores exactly the same in any order of its
        pieces. Both Viterbi searches keep, at each end position, the first (longest) last piece
        of equal score; but tokenizers adds the scores in float64 (per word), where these sums are
        equal, while SentencePiece (tf-text) adds them in float32 (over the whole text), where
        their rounding differs with the order and decides which order wins. transformers' result
        is thus each such run's pieces sorted by length, shortest first: sorted here. (Scores
        rounded to a coarse grid would make float32 exact, but only while the text's running
        total is small, and they change near-ties between different pieces.) Cost when no run is
        out of order: one gather and a comparison of neighbours (in NumPy when eager).

        ids [B, (P)] -> the same ids reordered; with begins/ends (byte offsets in the text that
        SentencePiece tokenized), also the offsets of the reordered pieces.
        """
        unchanged = ids if begins is None else (ids, begins, ends)
        if self.codes is None:
            return unchanged
        flat = ids.flat_values
        flats = (flat,) if begins is None else (flat, begins.flat_values, ends.flat_values)
        limit = 2 * self.limit  # see `_tie_codes`
        if tf.executing_eagerly():
            # The test below in NumPy: as TF ops it cost as much as the eager `tokenize` of a
            # few texts (TF's per-op overhead).
            code = self.codes_np.take(flat.numpy())
            step = code[:-1] - code[1:]
            if not np.any((step > 0) & (step < limit)):
                return unchanged
        code = tf.gather(self.codes, flat)

        def reorder():
            slot = tf.math.floordiv(code, self.base)
            row = tf.searchsorted(ids.row_splits, tf.range(tf.size(flat, out_type=tf.int64)),
                                  side="right")  # row + 1 of each piece
            new_run = tf.concat([[True], (slot[1:] != slot[:-1]) | (row[1:] != row[:-1])], 0)
            run = tf.cumsum(tf.cast(new_run, tf.int64)) - 1
            # UTF-8 bytes of a root piece, 0 for the others
            length = tf.cast(code % self.base // 2, tf.int64)
            order = tf.argsort(run * self.base + length, stable=True)
            if begins is None:
                return (tf.gather(flat, order),)
            # The pieces of a run tile its span, which ends where its last piece ends (a begin
            # may include deleted characters before it): each starts where the shorter end.
            num_runs = run[-1] + 1
            length = tf.gather(length, order)
            before = tf.cumsum(length, exclusive=True)
            run_begin = (tf.math.unsorted_segment_max(flats[2], run, num_runs)
                         - tf.math.unsorted_segment_sum(length, run, num_runs))
            run_before = tf.math.unsorted_segment_min(before, run, num_runs)
            run_size = tf.math.unsorted_segment_sum(tf.ones_like(run), run, num_runs)
            new_begin = tf.gather(run_begin, run) + before - tf.gather(run_before, run)
            tiled = (tf.gather(run_size, run) > 1) & (length > 0)  # runs of root pieces
            return (tf.gather(flat, order),
                    tf.where(tiled, new_begin, tf.gather(flats[1], order)),
                    tf.where(tiled, new_begin + length, tf.gather(flats[2], order)))

        if tf.executing_eagerly():
            flats = reorder()
        else:
            step = code[:-1] - code[1:]
            out_of_order = tf.reduce_any((step > 0) & (step < limit))
            flats = tf.cond(out_of_order, reorder, lambda: flats)
        if begins is None:
            return ids.with_flat_values(flats[0])
        return tuple(ids.with_flat_values(f) for f in flats)


def _root(piece):
    """The shortest string whose repetition is `piece` ("-" for "---", "ha" for "haha")."""
    for size in range(1, len(piece) // 2 + 1):
        if len(piece) % size == 0 and piece[:size] * (len(piece) // size) == piece:
            return piece[:size]
    return piece


def _tie_codes(vocab, marker):
    """The table of `TieOrder`: (codes int32 [V], base, limit), or
    (None, 1, 0) if no two pieces repeat the same root.

    Pieces that repeat a root which other pieces repeat too ("-", "--", "-----"; not word
    starts) share a slot; every other piece has a slot of its own. codes = slot * base + 2 *
    (UTF-8 bytes of a root piece, else 0), where limit is the longest root piece in bytes and
    base = 4 * (limit + 1). A longer root piece comes right before a shorter one of the same root
    exactly when 0 < codes[prev] - codes[next] < 2 * limit (other slots are > 2 * limit away).
    """
    roots = collections.defaultdict(list)
    for i, piece in enumerate(vocab):
        if piece and not piece.startswith(marker):
            roots[_root(piece)].append(i)
    shared = [ids for ids in roots.values() if len({vocab[i] for i in ids}) > 1]
    if not shared:
        return None, 1, 0
    limit = max(len(vocab[i].encode("utf-8")) for ids in shared for i in ids)
    base = 4 * (limit + 1)
    codes = [(len(shared) + i) * base for i in range(len(vocab))]
    for slot, ids in enumerate(shared):
        for i in ids:
            codes[i] = slot * base + 2 * len(vocab[i].encode("utf-8"))
    dtype = tf.int32 if (len(shared) + len(vocab)) * base < 2**31 else tf.int64
    return tf.constant(codes, dtype), base, limit


__all__ = ["TieOrder"]
