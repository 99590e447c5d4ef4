"""Keras 3 layers of the BERT encoder: position embedding, self-attention, transformer block.

Shape legend: B batch, T sequence length, H hidden size, N attention heads, D = H / N head size,
I intermediate (feed-forward) size.

Every layer follows the Keras layer contract: each constructor argument is stored under its
own name and returned by `get_config()`, `**kwargs` go to `super()`, sizes are inferred in
`build()`.
"""

import math

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from bert_keras.models.layers import disentangled, dropout_mask, local_attention, query_chunks
from bert_keras.models.layers.activations import get_activation, training_activation
from bert_keras.models.layers.residual_norm import (
    fusable_layer_norm,
    normalize,
    residual_dropout_norm,
)
from bert_keras.models.layers.transposed_dense import dense


def dense_initializer(initializer_range):
    return keras.initializers.TruncatedNormal(stddev=initializer_range)


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


@keras.saving.register_keras_serializable(package="bert_keras")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` whose mask comes from a counter-based hash inside one
    XLA-compiled pass, forward and backward (`dropout_mask`), instead of TensorFlow's Philox
    kernel and a boolean mask written and read. An element is dropped with probability
    `rate` to within 2^-32.

    Example:
    >>> import numpy as np
    >>> y = np.asarray(Dropout(0.1, seed=1)(np.ones((1000, 100), "float32"), training=True))
    >>> round(float((y == 0).mean()), 2), float(y.max())
    (0.1, 1.1111111640930176)
    """

    def call(self, inputs, training=False, mask_seed=None):
        """`mask_seed`: the seed `seed_if_dropping` drew earlier for this call (where drawing
        it here would be inside a tf.cond branch), instead of the next one."""
        seed = self.seed_if_dropping(training) if mask_seed is None else mask_seed
        if seed is None:
            return super().call(inputs, training=training)
        return dropout_mask.dropout(ops.convert_to_tensor(inputs), seed, self.rate)

    def seed_if_dropping(self, training):
        """The next mask seed (`next_seed`) where `call` would drop with `dropout_mask`,
        else None."""
        if not training or not 0.0 < self.rate < 1.0 or self.noise_shape is not None:
            return None
        return self.next_seed()

    def next_seed(self):
        """A new (2,) int64 seed of a mask (`dropout_mask.keep_mask`): the seed generator's
        state, then advanced by (0, 1) as `SeedGenerator.next()` does, in 5 traced ops
        instead of its 8 (it reads the state twice and copies it with a `* 1`, which a
        TensorFlow read needs not: the read is a snapshot, ordered before the assign)."""
        state = self.seed_generator.state
        seed = tf.convert_to_tensor(state.value)  # a read now (`.value` is the variable)
        state.assign(seed + np.array([0, 1], seed.dtype.as_numpy_dtype))
        return tf.cast(seed, tf.int64)


def _mask_bias(input_mask, dtype):
    """(B, T) mask (1 = real token) -> (B, 1, 1, T) additive bias: 0 or a large negative."""
    large_negative = -6e4 if dtype == "float16" else -1e9  # float16 has no -1e9.
    bias = (1.0 - ops.cast(input_mask, dtype)) * ops.cast(large_negative, dtype)
    return bias[:, None, None, :]


def _window_bias(query_rows, length, half_window, dtype):
    """The additive bias of a sliding window: query row i sees key j when |i - j| <=
    `half_window`. `query_rows`: None (every row, (1, 1, T, T)) or int (B, Q) ((B, 1, Q, T))."""
    large_negative = -6e4 if dtype == "float16" else -1e9
    keys = ops.arange(length, dtype="int32")
    rows = keys[None, :] if query_rows is None else ops.cast(query_rows, "int32")  # (1|B, Q)
    outside = ops.abs(rows[:, :, None] - keys[None, None, :]) > half_window  # (1|B, Q, T)
    return ops.cast(outside, dtype)[:, None] * ops.cast(large_negative, dtype)


def _either(condition, true_fn, false_fn):
    """true_fn() or false_fn() by `condition`: a Python bool where the shapes are known when
    tracing, else a tf.cond in the graph (one branch runs)."""
    if isinstance(condition, (bool, np.bool_)):
        return true_fn() if condition else false_fn()
    return tf.cond(condition, true_fn, false_fn)


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


@keras.saving.register_keras_serializable(package="bert_keras")
class SelfAttention(keras.layers.Layer):
    """Multi-head self-attention with one fused query/key/value projection.

    The fused (H, 3H) kernel does one large matmul instead of three; checkpoint import
    concatenates the query, key and value kernels (in that order) into it.

    Example:
    >>> import numpy as np
    >>> attention = SelfAttention(num_heads=2)
    >>> x = np.random.rand(1, 4, 8).astype("float32")
    >>> tuple(attention(x, np.ones((1, 4), "int32")).shape)
    (1, 4, 8)
    """

    def __init__(self, num_heads, dropout=0.0, initializer_range=0.02, transposed_kernels=False,
                 use_bias=True, rotary_theta=None, half_window=None, disentangled_attention=None,
                 relative_span=None, position_buckets=False, max_relative_positions=None,
                 max_length=None, **kwargs):
        """`use_bias`: biases in the projections; `rotary_theta`: rotary position embeddings
        of queries and keys with this base (None: none); `half_window`: a row attends only to
        keys at most this far (None: to all). `disentangled_attention`: DeBERTa's relative
        terms ("c2p", "p2c", "c2p|p2c"; `disentangled.py`) over a relative table of
        2 * `relative_span` rows given to `call`, log-bucketed (`position_buckets`) up to
        `max_relative_positions`; None: none. `max_length`: the longest input it takes
        (None: any); the paths for longer inputs than that (blocked windows, chunked rows)
        then stay out of graphs traced with the length unknown."""
        super().__init__(**kwargs)
        self.max_length = max_length
        self.disentangled_attention = disentangled_attention
        self.relative_span = relative_span
        self.position_buckets = position_buckets
        self.max_relative_positions = max_relative_positions
        self.num_heads = num_heads
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.transposed_kernels = transposed_kernels
        self.use_bias = use_bias
        self.rotary_theta = rotary_theta
        self.half_window = half_window

    def build(self, input_shape):
        hidden_size = input_shape[-1]
        if hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size={hidden_size} is not divisible by num_heads={self.num_heads}."
            )
        self.head_size = hidden_size // self.num_heads
        init = dense_initializer(self.initializer_range)
        self.qkv = dense(3 * hidden_size, self.transposed_kernels, kernel_initializer=init,
                         use_bias=self.use_bias, dtype=self.dtype_policy, name="qkv")
        self.qkv.build(input_shape)
        # Square, so in the inference layout, bfloat16, batch 1, TensorFlow's fused MatMul
        # would run it on one thread (TransposedDense).
        self.output_dense = dense(hidden_size, self.transposed_kernels, batch_matmul=True,
                                  kernel_initializer=init, use_bias=self.use_bias,
                                  dtype=self.dtype_policy, name="output")
        self.output_dense.build(input_shape)
        self.attention_dropout = Dropout(self.dropout, dtype=self.dtype_policy)

    def call(self, inputs, input_mask, training=None, query_positions=None,
             relative_embeddings=None, packed=None, flat_output=False):
        """inputs (B, T, H) -> (B, T, H); with `query_positions` (B, Q) int, only those
        rows attend (to every key): (B, Q, H). `relative_embeddings` (2S, H): the encoder's
        relative table, with `disentangled_attention`. `packed` (`packing.PackedRows`):
        inputs and outputs are the real tokens' rows (R, H), attention runs padded.
        `flat_output`: the output as rows (B*T or B*Q, H), the layout a block goes on in
        (no reshape to trace there and back)."""
        # The dense layers run on (B*T, H): oneDNN fuses a rank-2 matmul with its bias
        # add, but not the tensordot Keras uses on rank 3.
        hidden_size = self.num_heads * self.head_size
        qkv = self.qkv(ops.reshape(inputs, (-1, hidden_size)))  # (B*T or R, 3H)
        # (B, T) as one shape op, not `ops.shape`'s slice per size: fewer ops to trace.
        batch_length = tf.shape(inputs)[:2] if packed is None else packed.shape
        if packed is not None:
            qkv = packed.unpack(qkv)  # (B, T, 3H)
        qkv = tf.reshape(qkv, tf.concat(
            [batch_length, (3, self.num_heads, self.head_size)], axis=0))
        qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))  # (3, B, N, T, D)
        # unstack, not qkv[0], qkv[1], qkv[2]: the gradient of a slice writes a zero-filled
        # full-size tensor per slice (11% of a training step), the gradient of unstack one stack.
        query, key, value = ops.unstack(qkv, 3, axis=0)  # 3 x (B, N, T, D)
        if self.rotary_theta is not None:
            query, key = rotary(query, self.rotary_theta), rotary(key, self.rotary_theta)
        if self.disentangled_attention:  # the relative table's row of each (query, key)
            length = ops.shape(inputs)[1] if packed is None else packed.length
            rows = (ops.arange(length, dtype="int32")[None] if query_positions is None
                    else query_positions)  # (B|1, Q)
            relative_embeddings, relative_index = disentangled.relative_rows(
                relative_embeddings, rows, length, self.relative_span, self.position_buckets,
                self.max_relative_positions)  # the table's rows read (R, H), (B|1, Q, T)
        if query_positions is not None:
            query = tf.gather(query, query_positions, axis=2, batch_dims=1)  # (B, N, Q, D)
        if self.disentangled_attention or query_positions is not None:
            position_scores = None
            if self.disentangled_attention:
                position_scores = disentangled.position_scores(
                    self.disentangled_attention, query, key,
                    *self._relative_qk(relative_embeddings), relative_index)
            context = self._attend(query, key, value,
                                   self._full_bias(input_mask, query_positions, key),
                                   training, position_scores)  # (B, N, Q, D)
        else:
            context = self._self_attend(query, key, value, input_mask, training)  # (B, N, T, D)
        context = ops.transpose(context, (0, 2, 1, 3))  # (B, Q, N, D)
        if packed is not None:
            return self.output_dense(packed.pack(context))  # (R, H)
        output = self.output_dense(ops.reshape(context, (-1, hidden_size)))  # (B*Q, H)
        if flat_output:
            return output
        if query_positions is None:
            return tf.reshape(output, tf.shape(inputs))
        return tf.reshape(output, tf.concat([tf.shape(context)[:2], (hidden_size,)], axis=0))

    def _self_attend(self, query, key, value, input_mask, training):
        """Every row attends: (B, N, T, D) context by the cheapest exact path for this
        length (chosen at run time where the length is unknown at trace time): the full
        scores, the blocked sliding window (`local_attention`), or in inference global
        attention a chunk of rows at a time (`query_chunks`), whose peak memory is bounded."""
        # The dropout seed drawn here, not inside a tf.cond branch below: the gradient of a
        # branch that reads the seed variable cannot find that read.
        seed = self.attention_dropout.seed_if_dropping(training)

        def full():
            return self._attend(query, key, value, self._full_bias(input_mask, None, key),
                                training, seed=seed)

        if self.half_window is not None:
            block, length = self.half_window, ops.shape(query)[2]

            def blocked():
                bias = local_attention.local_attention_bias(
                    input_mask, length, self.half_window, self._softmax_dtype)
                context = self._attend(local_attention.to_query_blocks(query, block),
                                       local_attention.to_key_blocks(key, block),
                                       local_attention.to_key_blocks(value, block), bias,
                                       training, seed=seed)  # (B, N, K, b, D)
                return local_attention.from_query_blocks(context, length)

            return _either(self._may(local_attention.use_blocks, query, self.half_window),
                           blocked, full)
        if training:  # the gradient keeps every chunk's probabilities anyway
            return full()

        def chunked():
            bias = self._full_bias(input_mask, None, key)
            return query_chunks.attend_in_chunks(
                lambda rows: self._attend(rows, key, value, bias, training), query,
                query_chunks.rows_per_chunk(ops.shape(query)[2], self.num_heads))

        return _either(self._may(query_chunks.needs_chunks, query, self.num_heads), chunked, full)

    def _may(self, condition, query, argument):
        """`condition(length, argument)` of the (B, N, T, D) `query`'s length T: a bool where
        T is known when tracing or `max_length` rules the path out (no shape ops traced),
        else a scalar tensor (a tf.cond)."""
        length = query.shape[2]
        if length is None and self.max_length is not None and not condition(self.max_length,
                                                                             argument):
            return False
        return condition(ops.shape(query)[2] if length is None else length, argument)

    @property
    def _softmax_dtype(self):
        # Scores and softmax stay in the compute dtype except float16: bfloat16 has
        # float32's range, and oneDNN's bfloat16 softmax accumulates in float32 (same
        # outputs as a float32 softmax, measured; the casts cost ~10% of the encoder).
        return "float32" if self.compute_dtype == "float16" else self.compute_dtype

    def _full_bias(self, input_mask, query_positions, key):
        """The additive bias of (B, N, Q|T, T) scores: padded keys, and keys outside the
        window of a local layer, -1e9."""
        bias = _mask_bias(input_mask, self._softmax_dtype)  # (B, 1, 1, T)
        if self.half_window is not None:
            bias = bias + _window_bias(query_positions, ops.shape(key)[2], self.half_window,
                                       self._softmax_dtype)
        return bias

    def _attend(self, query, key, value, bias, training, position_scores=None, seed=None):
        """softmax(q k^T / sqrt(D) + bias) v over the last two axes of (..., Q, D) queries
        and (..., K, D) keys and values: (..., Q, D). `position_scores`: disentangled
        attention's relative terms, scaled (`disentangled.score_scale`). `seed`: the
        probabilities' dropout seed, drawn by the caller (`Dropout.seed_if_dropping`)."""
        if position_scores is None:
            scores = ops.matmul(query, ops.swapaxes(key, -1, -2))  # (..., Q, K)
            scores = ops.cast(scores, self._softmax_dtype) * ops.cast(
                1.0 / math.sqrt(self.head_size), self._softmax_dtype)
        else:  # every term scaled before their sum, as transformers: float16 would overflow
            scale = disentangled.score_scale(self.disentangled_attention, self.head_size)
            scores = ops.matmul(query * ops.cast(scale, query.dtype), ops.swapaxes(key, -1, -2))
            scores = ops.cast(scores + position_scores, self._softmax_dtype)
        probs = ops.cast(ops.softmax(scores + bias, axis=-1), self.compute_dtype)
        probs = self.attention_dropout(probs, training=training, mask_seed=seed)
        return ops.matmul(probs, value)  # (..., Q, D)

    def _relative_qk(self, table):
        """The relative table's rows (R, H) through this layer's query and key projections
        (DeBERTa's `share_att_key`): 2 x (N, R, D)."""
        projected = ops.reshape(self.qkv(table), (-1, 3, self.num_heads, self.head_size))
        projected = ops.transpose(projected, (1, 2, 0, 3))  # (3, N, R, D)
        return projected[0], projected[1]

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            dropout=self.dropout,
            initializer_range=self.initializer_range,
            transposed_kernels=self.transposed_kernels,
            use_bias=self.use_bias,
            rotary_theta=self.rotary_theta,
            half_window=self.half_window,
            disentangled_attention=self.disentangled_attention,
            relative_span=self.relative_span,
            position_buckets=self.position_buckets,
            max_relative_positions=self.max_relative_positions,
            max_length=self.max_length,
        )
        return config


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
            initializer_range=self.initializer_range,
            transposed_kernels=self.transposed_kernels,
            use_bias=self.use_bias,
            rotary_theta=self.rotary_theta,
            half_window=self.half_window,
            disentangled_attention=self.disentangled_attention,
            relative_span=self.relative_span,
            position_buckets=self.position_buckets,
            max_relative_positions=self.max_relative_positions,
            max_length=self.max_length,
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
