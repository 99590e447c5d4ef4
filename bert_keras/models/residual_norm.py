"""`residual_dropout_norm`: a transformer block's `LayerNorm(x + dropout(h))` for train steps,
as two XLA-compiled functions, the forward and its gradient.

TensorFlow runs the dropout, the residual add and the layer norm as about a dozen ops
forward and twice that backward, each a pass over memory; compiled, each way reads its
inputs once or twice. 1-3% of a bfloat16 train step on CPU (BENCHMARKS.md, History). The
dropout mask is drawn outside, by TensorFlow (XLA's CPU Philox is several times slower),
and the column sums of the gamma and beta gradients are matmuls with a ones row (XLA's
column reductions on CPU are slow). Inference keeps `norm(x + h)`, whose add oneDNN can fuse
into the matmul before it.
"""

import functools

import tensorflow as tf


def residual_dropout_norm(x, h, keep, rate, gamma, beta, epsilon):
    """`LayerNorm(x + dropout(h))` over the last axis of (rows, H) `x` and `h`, computed in
    float32 and returned in `x`'s dtype.

    `keep`: a boolean mask shaped like `h` (`layers.Dropout.keep_mask`), None when `rate`
    is 0; kept elements of `h` are scaled by 1 / (1 - rate). `gamma`, `beta`: the norm's
    float32 weights.

    Example:
    >>> import tensorflow as tf
    >>> x, h = tf.constant([[1.0, 2.0, 3.0]]), tf.constant([[0.0, 0.0, 3.0]])
    >>> y = residual_dropout_norm(x, h, None, 0.0, tf.ones(3), tf.zeros(3), 1e-12)
    >>> [round(float(v), 4) for v in y[0]]
    [-0.9258, -0.4629, 1.3887]
    """
    return _compiled(float(rate), float(epsilon))(x, h, keep, gamma, beta)


@functools.cache
def _compiled(rate, epsilon):
    scale = 1.0 / (1.0 - rate)

    def summed(x, h, keep):  # x + dropout(h) in float32
        h = tf.cast(h, tf.float32)
        return tf.cast(x, tf.float32) + (h if keep is None else tf.where(keep, h * scale, 0.0))

    @tf.function(jit_compile=True, reduce_retracing=True)
    def forward(x, h, keep, gamma, beta):
        s = summed(x, h, keep)
        mean = tf.reduce_mean(s, axis=-1, keepdims=True)
        centered = s - mean
        rstd = tf.math.rsqrt(tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True) + epsilon)
        return tf.cast(centered * rstd * gamma + beta, x.dtype), mean, rstd

    @tf.function(jit_compile=True, reduce_retracing=True)
    def backward(dy, x, h, keep, mean, rstd, gamma):
        s = summed(x, h, keep)  # recomputed: cheaper than keeping a float32 copy
        normalized = (s - mean) * rstd
        dy = tf.cast(dy, tf.float32)
        g = dy * gamma
        ds = rstd * (g - tf.reduce_mean(g, axis=-1, keepdims=True)
                     - normalized * tf.reduce_mean(g * normalized, axis=-1, keepdims=True))
        dh = ds if keep is None else tf.where(keep, ds * scale, 0.0)
        return tf.cast(ds, x.dtype), tf.cast(dh, h.dtype), dy * normalized

    def column_sums(rows):  # float32 accumulation whatever the dtype
        ones = tf.ones((1, tf.shape(rows)[0]), rows.dtype)
        return tf.cast(tf.linalg.matmul(ones, rows)[0], tf.float32)

    def apply(x, h, keep, gamma, beta):
        @tf.custom_gradient
        def norm(x, h, gamma, beta):
            y, mean, rstd = forward(x, h, keep, gamma, beta)

            def grad(dy):
                dx, dh, dy_normalized = backward(dy, x, h, keep, mean, rstd, gamma)
                return dx, dh, column_sums(dy_normalized), column_sums(dy)

            return y, grad

        return norm(x, h, gamma, beta)

    return apply
