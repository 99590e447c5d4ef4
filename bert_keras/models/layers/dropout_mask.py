"""Dropout masks from a counter-based hash, computed inside the XLA kernels that apply them.

Element i of a mask (flat, row-major) is kept when the top 32 bits of SplitMix64's output
for counter i, `mix64(key + (i + 1) * GAMMA)` (Steele, Lea and Flood, "Fast splittable
pseudorandom number generators", OOPSLA 2014; it passes BigCrush), are >= round(rate * 2^32):
dropped with probability `rate` to within 2^-32. The 64-bit `key` is mixed from the layer's
(2,) seed (`keras.random.SeedGenerator.next()`), so each call draws a new mask.

Why not `tf.random`: TensorFlow's Philox kernel is its own pass over memory (about 380 M
32-bit words per second on 2 cores), and the boolean mask it leads to is written once and
read forward and backward. Here the mask is a few integer operations per element inside the
one compiled pass that applies it, forward and again backward: the dropout of a 32 x 8 x
128 x 128 bfloat16 attention took 2.1 ms instead of 10.3. XLA's
own Philox is slower than TensorFlow's on CPU.
"""

import functools

import tensorflow as tf

GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment: 2^64 / the golden ratio, odd


def mix64(z):
    """SplitMix64's finalizer (Stafford's "Mix13") of a uint64 tensor.

    Example: SplitMix64 seeded with 0 starts 0xE220A8397B1DCDAF.
    >>> import tensorflow as tf
    >>> hex(int(mix64(tf.constant(GAMMA, tf.uint64))))
    '0xe220a8397b1dcdaf'
    """
    z = (z ^ _shift(z, 30)) * tf.constant(0xBF58476D1CE4E5B9, tf.uint64)
    z = (z ^ _shift(z, 27)) * tf.constant(0x94D049BB133111EB, tf.uint64)
    return z ^ _shift(z, 31)


def _shift(z, bits):
    return tf.bitwise.right_shift(z, tf.constant(bits, tf.uint64))


def keep_mask(seed, shape, rate):
    """The boolean keep mask shaped `shape` for the (2,) integer `seed`; True where an element
    is kept. Meant for use inside a compiled function, where it fuses with its consumer."""
    seed = tf.bitcast(tf.cast(seed, tf.int64), tf.uint64)
    key = mix64(mix64(seed[0] + tf.constant(GAMMA, tf.uint64)) ^ seed[1])
    count = tf.reduce_prod(tf.cast(shape, tf.int64))
    counter = tf.bitcast(tf.range(1, count + 1, dtype=tf.int64), tf.uint64)
    bits = mix64(key + counter * tf.constant(GAMMA, tf.uint64))
    threshold = tf.constant(round(rate * 2**32), tf.uint64)
    return tf.reshape(_shift(bits, 32) >= threshold, shape)


def dropout(x, seed, rate):
    """`x` with each element dropped with probability `rate` (0 < rate < 1) and the rest scaled
    by 1 / (1 - rate) in `x`'s dtype, the mask from `seed` (`keep_mask`); its gradient draws
    the same mask again. Compiled with XLA, forward and backward.

    Example:
    >>> import numpy as np, tensorflow as tf
    >>> y = dropout(tf.ones((1000, 100)), tf.constant([1, 7]), 0.1).numpy()
    >>> round(float((y == 0).mean()), 2), float(y.max())
    (0.1, 1.1111111640930176)
    """
    return _compiled(float(rate))(x, seed)


@functools.cache
def _compiled(rate):
    # autograph=False here and in the other compiled functions of the layers: they have no
    # Python control flow on tensors, and converting their code cost ~0.5 s of CPU in the
    # first train step of every process.
    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def apply_mask(x, seed):
        scale = tf.constant(1.0 / (1.0 - rate), x.dtype)
        return tf.where(keep_mask(seed, tf.shape(x), rate), x * scale, tf.zeros_like(x))

    @tf.custom_gradient
    def masked(x, seed):
        return apply_mask(x, seed), lambda dy: (apply_mask(dy, seed), None)

    return masked
