"""Context windows of span QA in the graph: the rows `featurizer.span_features` makes, in TF ops.

A context longer than the room a row leaves after the question is cut into windows that
start every `doc_stride` tokens (Google BERT's run_squad.py scheme, as `featurizer._windows`
cuts them), and each window token's "max context" flag says whether its window gives it the
most context among the windows holding it (`featurizer._max_context`), so an answer is decoded
from the window that sees the most around its start. Core TF ops only (TF Serving runs them).

Shape legend: B batch, N windows (rows) of the batch, D context tokens of a text,
T packed row length.

>>> import tensorflow as tf
>>> lengths, room = tf.constant([10, 3]), tf.constant([4, 4])
>>> w = windows(lengths, room, doc_stride=3)
>>> w.example.numpy().tolist(), w.start.numpy().tolist(), w.length.numpy().tolist()
([0, 0, 0, 1], [0, 3, 6, 0], [4, 4, 4, 3])
"""

import collections

import tensorflow as tf

Windows = collections.namedtuple("Windows", "example start length count")


def windows(num_tokens, room, doc_stride):
    """The windows of contexts of `num_tokens` [B] tokens, each at most `room` [B] tokens,
    starting every min(room, doc_stride) tokens; every context (an empty one too) has one.

    Returns `Windows`: `example`, `start` (first context token) and `length` [N] of every
    window, in example order, and `count` [B], each context's number of windows.
    """
    num_tokens, room = tf.cast(num_tokens, tf.int32), tf.cast(room, tf.int32)
    stride = tf.minimum(room, doc_stride)
    beyond = tf.maximum(num_tokens - room, 0)
    count = 1 + (beyond + stride - 1) // stride  # (B,)
    example = tf.repeat(tf.range(tf.size(count)), count)  # (N,)
    first_row = tf.cumsum(count, exclusive=True)
    k = tf.range(tf.reduce_sum(count)) - tf.gather(first_row, example)  # window of its example
    start = k * tf.gather(stride, example)
    length = tf.minimum(tf.gather(num_tokens, example) - start, tf.gather(room, example))
    return Windows(example, start, length, count)


def window_pieces(pieces, w):
    """The context pieces (ragged [B, (D)], any dtype) of each window: ragged [N, (length)]."""
    first = tf.gather(tf.cast(pieces.row_starts(), tf.int32), w.example) + w.start
    return tf.gather(pieces.values, tf.ragged.range(first, first + w.length))


def max_context(w, context_first, width):
    """bool [N, T]: whether row n's token t is a context token whose window gives it the most
    context, `min(tokens left, tokens right) + 0.01 * window length` (ties: the earlier
    window; run_squad.py's `_check_is_max_context`), with each row's context starting at
    position `context_first` [N] of a row `width` tokens wide."""
    pos = tf.range(width)[None, :] - context_first[:, None]  # (N, T): the token's place in window
    inside = (pos >= 0) & (pos < w.length[:, None])
    score = (tf.cast(tf.minimum(pos, w.length[:, None] - 1 - pos), tf.float64)
             + 0.01 * tf.cast(w.length[:, None], tf.float64))  # as run_squad.py computes it
    token = w.start[:, None] + pos  # the token's index in its context
    # One segment per (example, context token); a window starts its context's tokens at
    # `start` <= the largest start of any window, so `offset` leaves room for every token.
    offset = tf.reduce_max(tf.concat([w.start + w.length, [0]], 0)) + 1
    segment = tf.boolean_mask(w.example[:, None] * offset + token, inside)
    score = tf.boolean_mask(score, inside)
    row = tf.boolean_mask(tf.broadcast_to(tf.range(tf.size(w.example))[:, None], tf.shape(pos)),
                          inside)
    segments = tf.size(w.count) * offset
    best = tf.gather(tf.math.unsorted_segment_max(score, segment, segments), segment)
    first_best = tf.math.unsorted_segment_min(tf.where(score == best, row, tf.int32.max),
                                              segment, segments)
    chosen = tf.gather(first_best, segment) == row
    return tf.scatter_nd(tf.where(inside), chosen, tf.shape(pos, out_type=tf.int64))
