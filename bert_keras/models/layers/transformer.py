"""`TransformerBlock`: one layer of the encoder, post-norm (BERT) or pre-norm (ModernBERT).

Shape legend: B batch, T sequence length, H hidden size, N attention heads, D = H / N head size,
I intermediate (feed-forward) size.

Every layer follows the Keras layer contract: each constructor argument is stored under its
own name and returned by `get_config()`, `**kwargs` go to `super()`, sizes are inferred in
`build()`.
"""

import keras
import tensorflow as tf
from keras import ops

from bert_keras.models.layers import attention
from bert_keras.models.layers.activations import get_activation, training_activation
from bert_keras.models.layers.attention import SelfAttention
from bert_keras.models.layers.dense import dense_initializer
from bert_keras.models.layers.dropout import Dropout
from bert_keras.models.layers.normalization import LayerNorm
from bert_keras.models.layers.residual_norm import residual_dropout_norm
from bert_keras.models.layers.transposed_dense import dense


@keras.saving.register_keras_serializable(package="bert_keras")
class TransformerBlock(keras.layers.Layer):
    """A transformer block: post-layer-norm as in BERT, or pre-layer-norm as in ModernBERT.

    Post-norm: x = LayerNorm(x + Dropout(SelfAttention(x)));  x = LayerNorm(x + Dropout(FFN(x))).
    Pre-norm (`pre_norm`): x = x + Dropout(SelfAttention(LayerNorm(x)));
    x = x + Dropout(FFN(LayerNorm(x))), the first norm left out with `attention_norm=False`
    (ModernBERT's first layer: its input is the embeddings' norm already).
    `gated`: the FFN is GeGLU-style, act(x W_in) * (x W_gate) then W_out, one intermediate
    dense of 2 x intermediate_size giving the input half then the gate half (ModernBERT's Wi).
    `use_bias` / `norm_bias`: biases in the dense layers / the layer norms.
    `rotary_theta`, `half_window`, `disentangled_attention`, `relative_span`,
    `position_buckets`, `max_relative_positions`, `max_length`: of the attention
    (`SelfAttention`).

    Example:
    >>> import numpy as np
    >>> block = TransformerBlock(num_heads=2, intermediate_size=16)
    >>> x = np.random.rand(1, 4, 8).astype("float32")
    >>> tuple(block(x, np.ones((1, 4), "int32")).shape)
    (1, 4, 8)
    >>> modern = TransformerBlock(num_heads=2, intermediate_size=16, pre_norm=True, gated=True,
    ...     use_bias=False, norm_bias=False, rotary_theta=10000.0, half_window=1)
    >>> tuple(modern(x, np.ones((1, 4), "int32")).shape)
    (1, 4, 8)
    """

    def __init__(
        self,
        num_heads,
        intermediate_size,
        activation="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        transposed_kernels=False,
        pre_norm=False,
        attention_norm=True,
        gated=False,
        use_bias=True,
        norm_bias=True,
        rotary_theta=None,
        half_window=None,
        disentangled_attention=None,
        relative_span=None,
        position_buckets=False,
        max_relative_positions=None,
        max_length=None,
        **kwargs,
    ):
        """`transposed_kernels`: the four dense kernels in the inference layout
        (`TransposedDense`); False (Keras' layout) for training and checkpoints."""
        super().__init__(**kwargs)
        get_activation(activation)  # Fail early on an unknown name.
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.transposed_kernels = transposed_kernels
        self.pre_norm = pre_norm
        self.attention_norm = attention_norm
        self.gated = gated
        self.use_bias = use_bias
        self.norm_bias = norm_bias
        self.rotary_theta = rotary_theta
        self.half_window = half_window
        self.disentangled_attention = disentangled_attention
        self.relative_span = relative_span
        self.position_buckets = position_buckets
        self.max_relative_positions = max_relative_positions
        self.max_length = max_length

    def build(self, input_shape):
        hidden_size = input_shape[-1]
        init = dense_initializer(self.initializer_range)
        policy = self.dtype_policy
        self.attention = SelfAttention(
            self.num_heads,
            dropout=self.attention_dropout,
            **{name: getattr(self, name) for name in attention.OPTIONS},
            dtype=policy,
            name="attention",
        )
        self.attention.build(input_shape)
        # Pre-norm: the norm before the attention (none in ModernBERT's first layer).
        self.attention_layer_norm = None
        if self.attention_norm or not self.pre_norm:
            self.attention_layer_norm = LayerNorm(
                epsilon=self.layer_norm_epsilon, center=self.norm_bias, dtype=policy,
                name="attention_layer_norm")
            self.attention_layer_norm.build(input_shape)
        self.intermediate = dense(  # The activation is applied in call().
            self.intermediate_size * (2 if self.gated else 1), self.transposed_kernels,
            kernel_initializer=init, use_bias=self.use_bias, dtype=policy, name="intermediate")
        self.intermediate.build(input_shape)
        self.output_dense = dense(hidden_size, self.transposed_kernels, kernel_initializer=init,
                                  use_bias=self.use_bias, dtype=policy, name="output")
        self.output_dense.build(tuple(input_shape[:-1]) + (self.intermediate_size,))
        # The feed-forward's norm: after it (post-norm), before it (pre-norm).
        self.output_layer_norm = LayerNorm(
            epsilon=self.layer_norm_epsilon, center=self.norm_bias, dtype=policy,
            name="output_layer_norm"
        )
        self.output_layer_norm.build(input_shape)
        self.dropout_layer = Dropout(self.dropout, dtype=policy)

    def compute_output_spec(self, inputs, input_mask, training=None, query_positions=None,
                            relative_embeddings=None, packed=None):
        """The output's shape and dtype, which Keras would otherwise learn by tracing `call`
        in a scratch graph each time a model calls the block on symbolic inputs (most of the
        time it takes to build an encoder)."""
        shape = tuple(inputs.shape)
        if query_positions is not None and packed is None:
            shape = (shape[0], query_positions.shape[1], shape[-1])
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def call(self, inputs, input_mask, training=None, query_positions=None,
             relative_embeddings=None, packed=None):
        """inputs (B, T, H) -> (B, T, H); with `query_positions` (B, Q) int, the block's
        output at those rows only, (B, Q, H), for a fraction of the work: keys and values
        still come from every row, but the rest of the block runs on Q rows.
        `relative_embeddings`: the encoder's relative table, for disentangled attention.
        `packed` (`packing.PackedRows`): inputs and outputs are the real tokens' rows (R, H)."""
        if self.pre_norm:
            return self._pre_norm_call(inputs, input_mask, training, query_positions,
                                       relative_embeddings, packed)
        hidden_size = inputs.shape[-1]
        attended = self.attention(inputs, input_mask, training=training,
                                  query_positions=query_positions,
                                  relative_embeddings=relative_embeddings,
                                  packed=packed, flat_output=True)  # (B*T or B*Q or R, H)
        if query_positions is not None:
            inputs = tf.gather(inputs, query_positions, batch_dims=1)  # (B, Q, H)
        # Rank 2 (B*T, H) from here, so the feed-forward matmuls fuse bias and GELU.
        x = ops.reshape(inputs, (-1, hidden_size))
        x = self._add_and_norm(x, attended, self.attention_layer_norm, training)
        x = self._add_and_norm(x, self._feed_forward(x, training), self.output_layer_norm,
                               training)
        return x if packed is not None else tf.reshape(x, tf.shape(inputs))  # (B, T or Q, H)

    def _pre_norm_call(self, inputs, input_mask, training, query_positions,
                       relative_embeddings, packed):
        hidden_size = inputs.shape[-1]
        normed = self.attention_layer_norm(inputs) if self.attention_layer_norm else inputs
        attended = self.attention(normed, input_mask, training=training,
                                  query_positions=query_positions,
                                  relative_embeddings=relative_embeddings,
                                  packed=packed, flat_output=True)  # (B*T or B*Q or R, H)
        if query_positions is not None:
            inputs = tf.gather(inputs, query_positions, batch_dims=1)  # (B, Q, H)
        x = ops.reshape(inputs, (-1, hidden_size))  # (B*T, H)
        x = x + self.dropout_layer(attended, training=training)
        hidden = self._feed_forward(self.output_layer_norm(x), training)
        x = x + self.dropout_layer(hidden, training=training)
        return x if packed is not None else tf.reshape(x, tf.shape(inputs))  # (B, T or Q, H)

    def _feed_forward(self, x, training):
        """(B*T, H) -> (B*T, H): the intermediate dense, its activation (gated or not), the
        output dense."""
        hidden = self.intermediate(x)  # (B*T, I), or (B*T, 2I) gated
        if self.gated:
            hidden, gate = ops.split(hidden, 2, axis=-1)
            return self.output_dense(self._activate(hidden, training) * gate)
        return self.output_dense(self._activate(hidden, training))

    def _add_and_norm(self, x, hidden, norm, training):
        """norm(x + dropout(hidden)); train steps run it XLA-compiled (residual_norm.py)."""
        dropout = self.dropout_layer
        if not training or dropout.rate >= 1.0:
            # Inference (no dropout): oneDNN can fuse the add into the matmul before it.
            return norm(x + dropout(hidden, training=training))
        seed = dropout.next_seed() if dropout.rate > 0 else None
        gamma = tf.convert_to_tensor(norm.gamma)
        beta = tf.convert_to_tensor(norm.beta) if norm.center else tf.zeros_like(gamma)
        return residual_dropout_norm(x, hidden, seed, dropout.rate, gamma, beta, norm.epsilon)

    def _activate(self, hidden, training):
        if not training:
            # Inference: oneDNN fuses matmul + bias + activation into one kernel.
            return get_activation(self.activation)(hidden)
        # Training: that fusion is off (the gradient needs the pre-activation).
        return training_activation(self.activation)(hidden)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            intermediate_size=self.intermediate_size,
            activation=self.activation,
            dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            layer_norm_epsilon=self.layer_norm_epsilon,
            initializer_range=self.initializer_range,
            transposed_kernels=self.transposed_kernels,
            pre_norm=self.pre_norm,
            attention_norm=self.attention_norm,
            gated=self.gated,
            use_bias=self.use_bias,
            norm_bias=self.norm_bias,
            rotary_theta=self.rotary_theta,
            half_window=self.half_window,
            disentangled_attention=self.disentangled_attention,
            relative_span=self.relative_span,
            position_buckets=self.position_buckets,
            max_relative_positions=self.max_relative_positions,
            max_length=self.max_length,
        )
        return config
