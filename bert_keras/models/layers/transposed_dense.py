"""The inference copies' dense layout: `TransposedDense` (kernels stored (units, input_dim),
which oneDNN multiplies faster at serving shapes), `dense` to pick it or Keras' `Dense`, and
`copy_weights` to fill a transposed copy from a trained model."""

import keras
import tensorflow as tf
from keras import ops

from bert_keras.models.layers.dense import Dense


@keras.saving.register_keras_serializable(package="bert_keras")
class TransposedDense(keras.layers.Layer):
    """`x @ kernel^T + bias` with the kernel stored transposed, (units, input_dim): for inference.

    At serving shapes (128 rows per matmul: one sequence) oneDNN's float32 inner product
    runs 1.2-2x faster with its weights in this layout (PyTorch's) than in Keras'
    (input_dim, units) on AVX2-only CPUs, but 1.4-1.5x slower on AVX-512 ones (bfloat16
    there: no different); no different at batch 32 on AVX2. Training keeps
    `dense.Dense` (the layout checkpoints use, and no faster this way); inference
    copies (`cast_for_inference`) pick by `inference.uses_transposed_kernels`. The kernel is
    named `transposed_kernel`, so a checkpoint loader matching names never fills it with an
    untransposed one.

    Example:
    >>> import numpy as np
    >>> dense = TransposedDense(3)
    >>> x = np.ones((2, 4), "float32")
    >>> tuple(dense(x).shape), tuple(dense.kernel.shape)
    ((2, 3), (3, 4))
    """

    KERNEL_NAME = "transposed_kernel"

    def __init__(self, units, kernel_initializer="glorot_uniform", batch_matmul=False,
                 use_bias=True, **kwargs):
        """`batch_matmul`: multiply as `BatchMatMulV2` (oneDNN's matmul primitive) and add the
        bias after, instead of MatMul + BiasAdd (oneDNN's inner product, which TensorFlow
        fuses with an activation that follows). TensorFlow runs that fused MatMul on one
        thread when its operands fit the L2 cache, which at serving shapes catches a square
        kernel in bfloat16 (128 x 512 -> 512: 0.38 against 0.21-0.24 ms here); BatchMatMulV2
        escapes that rule."""
        super().__init__(**kwargs)
        self.units = units
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.batch_matmul = bool(batch_matmul)
        self.use_bias = use_bias

    def build(self, input_shape):
        # The initializer sees (units, input_dim): truncated normal, the encoder's, is symmetric.
        self.kernel = self.add_weight(name=self.KERNEL_NAME, shape=(self.units, input_shape[-1]),
                                      initializer=self.kernel_initializer)
        self.bias = self.use_bias and self.add_weight(name="bias", shape=(self.units,),
                                                      initializer="zeros")

    def call(self, inputs):
        if self.batch_matmul:
            product = tf.linalg.matmul(inputs[None], self.kernel[None], adjoint_b=True)[0]
            return product + self.bias if self.use_bias else product
        product = tf.linalg.matmul(inputs, self.kernel, transpose_b=True)
        return tf.nn.bias_add(product, self.bias) if self.use_bias else product

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units,
                      kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
                      batch_matmul=self.batch_matmul, use_bias=self.use_bias)
        return config


def dense(units, transposed, batch_matmul=False, **kwargs):
    """A `Dense` layer (Keras' with an accurate bfloat16 bias gradient), or a
    TransposedDense (same math) if `transposed`, with its `batch_matmul`."""
    if transposed:
        return TransposedDense(units, batch_matmul=batch_matmul, **kwargs)
    return Dense(units, **kwargs)


def copy_weights(source, target):
    """Assigns `source`'s weights to `target`, a model of the same architecture, casting to
    `target`'s dtypes and transposing each kernel that one of them keeps transposed."""
    kernel = TransposedDense.KERNEL_NAME
    for theirs, mine in zip(source.weights, target.weights, strict=True):
        value = ops.convert_to_numpy(theirs)
        mine.assign(value.T if (mine.name == kernel) != (theirs.name == kernel) else value)
