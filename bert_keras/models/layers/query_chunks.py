"""Global attention over long inputs, a chunk of query rows at a time: the peak memory of
the scores is one chunk's (B, N, C, T), not the whole (B, N, T, T).

Shape legend: B batch, N heads, T sequence length, D head size, C rows of a chunk.

At 8,192 tokens and 12 heads one float32 T x T score matrix is 3.2 GB, and the softmax
writes another: chunking the rows, each chunk's softmax is the same (a row's softmax reads
only that row). The chunks run one after another in a `tf.map_fn` loop (core ops, so the
export serves it), with T known or not until run time.

>>> import numpy as np
>>> q = np.ones((1, 2, 10, 4), "float32")
>>> out = attend_in_chunks(lambda chunk: chunk * 2.0, q, rows=3)
>>> tuple(out.shape), float(out[0, 0, 9, 0])
((1, 2, 10, 4), 2.0)
"""

import tensorflow as tf
from keras import ops

# Score elements (N * rows * T) of one sequence's chunk: 32 Mi, 128 MB in float32. Per
# sequence, so that the choice needs only the length (known when tracing more often than
# the batch size), and peak memory grows with the batch as everything else's does.
SCORE_BUDGET = 2 ** 25
MIN_ROWS = 64  # fewer rows per chunk only loop longer


def rows_per_chunk(length, heads):
    """Query rows whose scores fit SCORE_BUDGET (at least MIN_ROWS)."""
    return ops.maximum(SCORE_BUDGET // (heads * length), MIN_ROWS)


def needs_chunks(length, heads):
    """Whether one sequence's (N, T, T) scores exceed SCORE_BUDGET (an int or scalar tensor
    `length`)."""
    return length > SCORE_BUDGET // (heads * length)


def attend_in_chunks(attend, query, rows):
    """`attend` ((B, N, C, D) queries -> (B, N, C, D) context) over the rows of `query`
    (B, N, T, D) in ceil(T / rows) chunks of equal size (the last padded with zero rows,
    then cut), one after another."""
    batch, heads, length, size = (ops.shape(query)[0], ops.shape(query)[1],
                                  ops.shape(query)[2], query.shape[-1])
    chunks = (length + rows - 1) // rows
    chunk = (length + chunks - 1) // chunks  # < `chunks` rows of padding, not < `rows`
    query = ops.pad(query, [[0, 0], [0, 0], [0, chunks * chunk - length], [0, 0]])
    query = ops.reshape(query, (batch, heads, chunks, chunk, size))
    query = ops.transpose(query, (2, 0, 1, 3, 4))  # (chunks, B, N, C, D)
    # parallel_iterations=1: one chunk's scores alive at a time, the point of chunking.
    context = tf.map_fn(attend, query, parallel_iterations=1)
    context = ops.transpose(context, (1, 2, 0, 3, 4))
    return ops.reshape(context, (batch, heads, -1, size))[:, :, :length]
