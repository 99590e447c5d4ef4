"""`Int8Dense`: a dense layer for inference whose kernel is stored in int8 (per output channel,
symmetric) and dequantized before the matmul, which runs in the layer's compute dtype.

Weights only, not int8 matmuls: on TensorFlow 2.21's CPU kernels no int8 matmul that a stock
model server has beats the float ones (BENCHMARKS.md, "int8 export"): `MatMul` / `BatchMatMulV3`
with int8 inputs and int32 output ran at 46-73 GFLOP/s against bfloat16's 250-400 on an
AVX512-VNNI EPYC, and oneDNN's `QuantizedMatMulWithBias` family, fast there with constant
weights, returned wrong products. The int8 kernel saves 3/4 of the kernel's memory and disk;
rounding each weight to 1/254 of its column's largest magnitude moves a matmul's output by
under 1% (relative error 7e-3 at BERT's shapes; bfloat16 compute: 3e-3), and the bundled
tasks' test scores by less than a point (BENCHMARKS.md).
"""

import keras
import numpy as np
import tensorflow as tf


def quantize_kernel(kernel):
    """(int8 kernel, float32 scale per output column): `kernel ~= int8 * scale`, symmetric
    per column (the last axis), the largest magnitude of each column mapped to 127.

    Example:
    >>> import numpy as np
    >>> q, scale = quantize_kernel(np.array([[1.0, -0.5], [-2.0, 0.25]], "float32"))
    >>> q.tolist(), [round(float(s), 4) for s in scale]
    ([[64, -127], [-127, 64]], [0.0157, 0.0039])
    """
    kernel = np.asarray(kernel, np.float32)
    largest = np.abs(kernel).max(axis=0)
    scale = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
    quantized = np.clip(np.round(kernel / scale), -127, 127).astype(np.int8)
    return quantized, scale


@keras.saving.register_keras_serializable(package="bert_keras")
class Int8Dense(keras.layers.Layer):
    """`x @ (int8_kernel * scale) + bias`, the kernel (input_dim, units) kept in int8 and
    dequantized to the compute dtype on each call; for inference copies
    (`inference.cast_for_inference(model, "int8")`), never trained.

    Example:
    >>> import numpy as np
    >>> dense = Int8Dense.from_kernel(np.eye(3, 2, dtype="float32"), np.zeros(2, "float32"))
    >>> dense(np.array([[1.0, 2.0, 3.0]], "float32")).numpy().tolist()
    [[1.0, 2.0]]
    >>> dense.int8_kernel.dtype
    'int8'
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.int8_kernel = self.add_weight(name="int8_kernel", shape=(input_shape[-1], self.units),
                                           dtype="int8", initializer="zeros", trainable=False)
        self.kernel_scale = self.add_weight(name="kernel_scale", shape=(self.units,),
                                            dtype="float32", initializer="ones", trainable=False)
        self.bias = self.add_weight(name="bias", shape=(self.units,), initializer="zeros",
                                    trainable=False)

    @classmethod
    def from_kernel(cls, kernel, bias, **kwargs):
        """An Int8Dense holding `kernel` (input_dim, units) quantized, and `bias`."""
        quantized, scale = quantize_kernel(kernel)
        layer = cls(quantized.shape[1], **kwargs)
        layer.build((None, quantized.shape[0]))
        layer.int8_kernel.assign(quantized)
        layer.kernel_scale.assign(scale)
        layer.bias.assign(np.asarray(bias, np.float32))
        return layer

    def call(self, inputs):
        dtype = inputs.dtype
        # Scaling the kernel, not the output: a fixed cost per call, where scaling the output
        # grows with the batch (4,096 rows of a 32 x 128 batch against 512-3,072 kernel rows).
        kernel = tf.cast(self.int8_kernel, dtype) * tf.cast(self.kernel_scale, dtype)
        return tf.nn.bias_add(tf.linalg.matmul(inputs, kernel), tf.cast(self.bias, dtype))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        return dict(super().get_config(), units=self.units)
