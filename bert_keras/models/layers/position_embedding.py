"""Positions: learned absolute embeddings (`PositionEmbedding`) and rotary embeddings of
queries and keys (`rotary`).

Shape legend: B batch, T sequence length, H hidden size, N attention heads, D = H / N head size,
I intermediate (feed-forward) size.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from bert_keras.models.layers.dense import dense_initializer


def rotary(x, theta):
    """Rotary position embedding of (B, N, T, D) queries or keys, position t = row t, computed
    in float32 with the halves layout of transformers' `rotate_half` (GPT-NeoX's, ModernBERT's):
    x * cos + concat(-x2, x1) * sin, frequencies theta^(-2i / D)."""
    head_size = x.shape[-1]
    inverse = 1.0 / (np.float32(theta) ** (np.arange(0, head_size, 2, dtype=np.float32)
                                           / np.float32(head_size)))
    positions = ops.cast(ops.arange(ops.shape(x)[2]), "float32")  # (T,)
    angles = positions[:, None] * ops.convert_to_tensor(inverse)[None, :]  # (T, D/2)
    angles = ops.concatenate([angles, angles], axis=-1)  # (T, D)
    x32 = ops.cast(x, "float32")
    first, second = x32[..., :head_size // 2], x32[..., head_size // 2:]
    rotated = ops.concatenate([-second, first], axis=-1)
    return ops.cast(x32 * ops.cos(angles) + rotated * ops.sin(angles), x.dtype)



@keras.saving.register_keras_serializable(package="bert_keras")
class PositionEmbedding(keras.layers.Layer):
    """Learned absolute position embeddings, sliced to the input's length.

    Example:
    >>> import numpy as np
    >>> layer = PositionEmbedding(max_positions=16)
    >>> tuple(layer(np.zeros((2, 5, 8), "float32")).shape)
    (5, 8)
    """

    def __init__(self, max_positions, initializer_range=0.02, offset=0, **kwargs):
        super().__init__(**kwargs)
        self.max_positions = max_positions
        self.initializer_range = initializer_range
        self.offset = offset  # row of the first position (RoBERTa: 2)

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_positions, input_shape[-1]),
            initializer=dense_initializer(self.initializer_range),
        )

    def call(self, inputs):
        # inputs: (B, T, H) token embeddings; returns (T, H), broadcast by the caller.
        length = inputs.shape[1]  # static where known; else one slice of the shape
        length = tf.shape(inputs)[1] if length is None else length
        if isinstance(length, int) and length > self.max_positions - self.offset:
            raise ValueError(
                f"Sequence length {length} exceeds max_positions={self.max_positions} "
                f"(minus position offset {self.offset}) of this encoder; truncate the input "
                "(e.g. BertPreprocessor(seq_length=...))."
            )
        return ops.cast(self.embeddings[self.offset:self.offset + length], self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(max_positions=self.max_positions, initializer_range=self.initializer_range,
                      offset=self.offset)
        return config
