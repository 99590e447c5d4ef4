"""`SelfAttention`: multi-head self-attention, with the masks, sliding windows, rotary
positions, relative (disentangled) terms and chunked or blocked forms the families need.

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

from bert_keras.models.layers import disentangled, local_attention, query_chunks
from bert_keras.models.layers.dense import dense_initializer
from bert_keras.models.layers.dropout import Dropout
from bert_keras.models.layers.position_embedding import rotary
from bert_keras.models.layers.transposed_dense import dense

# SelfAttention's constructor arguments besides num_heads and dropout, which a
# TransformerBlock takes under the same names and passes on.
OPTIONS = ("initializer_range", "transposed_kernels", "use_bias", "rotary_theta", "half_window",
           "disentangled_attention", "relative_span", "position_buckets",
           "max_relative_positions", "max_length")


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
        config.update(num_heads=self.num_heads, dropout=self.dropout,
                      **{name: getattr(self, name) for name in OPTIONS})
        return config
