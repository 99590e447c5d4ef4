"""`LayerNorm`: the encoder's layer normalization, and `layer_norm`, its computation in
fewer ops."""

import keras
import tensorflow as tf
from keras import ops

from bert_keras.models.layers.residual_norm import fusable_layer_norm, normalize


def layer_norm(layer, x):
    """Applies the `keras.layers.LayerNormalization` `layer` (last axis) to `x`, in float32.

    The same math as calling the layer (its weights, its epsilon) in fewer ops: one pass for
    the mean, one for the variance of the centred values, one scale-and-shift. Under
    mixed_bfloat16 on CPU, where every elementwise op is a full pass over memory, this
    made the whole encoder ~10% faster than calling the Keras layer. A bfloat16 layer (an
    inference copy) takes the form oneDNN fuses into one op (`fusable_layer_norm`).
    """
    if layer.dtype_policy.name == "bfloat16":  # an inference copy (cast_for_inference)
        beta = layer.beta if layer.center else tf.zeros_like(layer.gamma)
        return fusable_layer_norm(x, layer.gamma, beta, layer.epsilon)
    y, _, _ = normalize(ops.cast(x, "float32"), ops.cast(layer.gamma, "float32"),
                        _beta(layer), layer.epsilon)
    return ops.cast(y, layer.compute_dtype)


def _beta(layer):
    """The float32 shift of a layer norm: its beta, or 0.0 for one without (`center=False`,
    ModernBERT's bias-free norms)."""
    return ops.cast(layer.beta, "float32") if layer.center else 0.0


@keras.saving.register_keras_serializable(package="bert_keras")
class LayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` over the last axis, computed by `layer_norm`.

    Same weights (`gamma`, `beta`), config and outputs; faster on CPU under mixed precision.
    Other axes or options fall back to the Keras implementation.

    Example:
    >>> import numpy as np
    >>> layer = LayerNorm(epsilon=1e-12)
    >>> y = layer(np.array([[1.0, 2.0, 3.0]], "float32"))
    >>> [round(float(v), 4) for v in y[0]]
    [-1.2247, 0.0, 1.2247]
    """

    def call(self, inputs):
        last_axis = self.axis in ([-1], [len(inputs.shape) - 1])
        if last_axis and self.scale and not self.rms_scaling:
            return layer_norm(self, inputs)
        return super().call(inputs)

