"""`residual_dropout_norm`: a transformer block's `LayerNorm(x + dropout(h))` for train steps,
as two XLA-compiled functions, the forward and its gradient.

TensorFlow runs the dropout, the residual add and the layer norm as about a dozen ops
forward and twice that backward, each a pass over memory; compiled, each way reads its
inputs once or twice: 1-3% of a bfloat16 train step on CPU. The
dropout mask is computed inside, from a seed (`dropout_mask`), both ways. XLA's CPU reductions
are slow (a row mean of 4,096 x 768 float32 took 1.6 ms, a copy 0.5), its dot is not: the
row means inside are matmuls with a column of ones (`row_mean`; the layer norm forward took
1.7 against 4.4 ms), and the column sums of the gamma and beta gradients, outside, are
`dense.sum_rows` matmuls. Inference keeps `norm(x + h)`, whose add oneDNN can fuse
into the matmul before it.
"""

import functools

import tensorflow as tf

from bert_keras.models.layers.dense import sum_rows
from bert_keras.models.layers.dropout_mask import keep_mask


def normalize(x, gamma, beta, epsilon, mean_of_rows=None):
    """Layer norm of float32 `x` over its last axis: (beta + (x - mean) * rstd * gamma, mean,
    rstd). `layers.layer_norm` (TensorFlow's ops) and the compiled forward here (with
    `mean_of_rows=row_mean`) share it. `mean_of_rows`: (rows, H) -> (rows, 1), by default
    `tf.reduce_mean` over the last axis.

    Example:
    >>> import tensorflow as tf
    >>> y, mean, rstd = normalize(tf.constant([[1.0, 3.0]]), tf.ones(2), tf.zeros(2), 1e-12)
    >>> y.numpy().tolist(), float(mean[0, 0]), float(rstd[0, 0])
    ([[-1.0, 1.0]], 2.0, 1.0)
    """
    mean_of_rows = mean_of_rows or functools.partial(tf.reduce_mean, axis=-1, keepdims=True)
    mean = mean_of_rows(x)
    centered = x - mean
    rstd = tf.math.rsqrt(mean_of_rows(tf.square(centered)) + epsilon)
    return beta + centered * (rstd * gamma), mean, rstd


def fusable_layer_norm(x, gamma, beta, epsilon):
    """Layer norm of `x` over its last axis in the form oneDNN's `_MklLayerNorm` fusion
    matches (TensorFlow's remapper: each row a channel of a training-mode FusedBatchNormV3,
    then `* gamma + beta`), for bfloat16 inference: one op instead of about a dozen, which
    computes in float32 inside and rounds once; 1.18-1.24x the 32x128 throughput of a
    bfloat16 L-4/H-512 encoder on an AMX Xeon (batch 1 unchanged). `x` of any rank, normalized
    as (rows, H): the remapper fuses only where it proves the output's shape the input's,
    which it could not for the embeddings' (B, T, H) sum (their position rows a slice);
    `gamma`, `beta` in `x`'s dtype. Where oneDNN is off, TensorFlow runs the
    FusedBatchNormV3 itself, exact but slower than `normalize`.

    Example:
    >>> import tensorflow as tf
    >>> y = fusable_layer_norm(tf.constant([[1.0, 3.0]]), tf.ones(2), tf.zeros(2), 1e-12)
    >>> y.numpy().tolist()
    [[-1.0, 1.0]]
    """
    if x.shape.rank != 2:  # H static where known: the fusion wants it so
        width = x.shape[-1] or tf.shape(x)[-1]
        rows = fusable_layer_norm(tf.reshape(x, [-1, width]), gamma, beta, epsilon)
        return tf.reshape(rows, tf.shape(x))
    shape = tf.shape(x)
    rows = shape[0]
    ones, zeros, empty = tf.ones([rows]), tf.zeros([rows]), tf.constant([], tf.float32)
    normalized = tf.raw_ops.FusedBatchNormV3(
        x=tf.reshape(x, [1, rows, shape[-1], 1]), scale=ones, offset=zeros, mean=empty,
        variance=empty, epsilon=epsilon, data_format="NCHW", is_training=True)[0]
    return tf.reshape(normalized, shape) * gamma + beta


def row_mean(x):
    """The mean of each row of float32 (rows, H) `x`, (rows, 1), as a matmul with a column of
    ones: inside XLA for CPU, 3x faster than its reduction."""
    width = tf.shape(x)[-1]  # (traced with relaxed shapes, so not always static)
    return tf.matmul(x, tf.ones([width, 1], x.dtype)) / tf.cast(width, x.dtype)


def residual_dropout_norm(x, h, seed, rate, gamma, beta, epsilon):
    """`LayerNorm(x + dropout(h))` over the last axis of (rows, H) `x` and `h`, computed in
    float32 and returned in `x`'s dtype.

    `seed`: the (2,) integer seed of the dropout mask (`dropout_mask.keep_mask`, as
    `layers.Dropout.next_seed` draws it), None when `rate` is 0; kept elements of `h` are
    scaled by 1 / (1 - rate). `gamma`, `beta`: the norm's float32 weights.

    Example:
    >>> import tensorflow as tf
    >>> x, h = tf.constant([[1.0, 2.0, 3.0]]), tf.constant([[0.0, 0.0, 3.0]])
    >>> y = residual_dropout_norm(x, h, None, 0.0, tf.ones(3), tf.zeros(3), 1e-12)
    >>> [round(float(v), 4) for v in y[0]]
    [-0.9258, -0.4629, 1.3887]
    """
    return _compiled(float(rate), float(epsilon))(x, h, seed, gamma, beta)


@functools.cache
def _compiled(rate, epsilon):
    scale = 1.0 / (1.0 - rate)

    def dropped(t, seed):  # dropout of h (forward) or of its gradient (backward), in float32
        t = tf.cast(t, tf.float32)
        return t if seed is None else tf.where(keep_mask(seed, tf.shape(t), rate), t * scale, 0.0)

    # autograph=False: no Python control flow on tensors to convert (as in dropout_mask).
    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def forward(x, h, seed, gamma, beta):
        y, mean, rstd = normalize(tf.cast(x, tf.float32) + dropped(h, seed), gamma, beta, epsilon,
                                  row_mean)
        return tf.cast(y, x.dtype), mean, rstd

    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def backward(dy, x, h, seed, mean, rstd, gamma):
        s = tf.cast(x, tf.float32) + dropped(h, seed)  # recomputed: cheaper than a float32 copy
        normalized = (s - mean) * rstd
        dy = tf.cast(dy, tf.float32)
        g = dy * gamma
        ds = rstd * (g - row_mean(g) - normalized * row_mean(g * normalized))
        dh = dropped(ds, seed)
        return tf.cast(ds, x.dtype), tf.cast(dh, h.dtype), dy * normalized

    def apply(x, h, seed, gamma, beta):
        @tf.custom_gradient
        def norm(x, h, gamma, beta):
            y, mean, rstd = forward(x, h, seed, gamma, beta)

            def grad(dy):
                dx, dh, dy_normalized = backward(dy, x, h, seed, mean, rstd, gamma)
                return dx, dh, sum_rows(dy_normalized), tf.cast(sum_rows(dy), tf.float32)

            return y, grad

        return norm(x, h, gamma, beta)

    return apply
