"""DeBERTa's disentangled attention: the relative-position terms that `SelfAttention` adds to
its content scores, and the table of relative-position embeddings they read.

Shape legend: B batch, N heads, Q query rows, T keys, D head size, H hidden size, S span (the
table has 2S rows: distances -S..S-1 after bucketing and clipping).

With `c2p` a query row i scores the embedding of its distance to key j through its own
content: Q_i . K_rel[idx(i, j)]; with `p2c` the key scores it: K_j . Q_rel[idx(i, j)], where
idx(i, j) = clip(bucket(i - j) + S, 0, 2S - 1) and Q_rel, K_rel are the table projected by the
layer's own query and key projections (`share_att_key`). Distances beyond half the buckets are
bucketed logarithmically up to `max_relative_positions` (transformers'
`make_log_bucket_position`, in float32 as it computes them).

>>> import numpy as np
>>> rows = np.arange(10, dtype="int32")[None]
>>> relative_index(rows, 10, span=4, buckets=True, max_distance=16).numpy()[0, 9]
array([7, 7, 7, 7, 7, 7, 7, 6, 5, 4], dtype=int32)
"""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from bert_keras.models.layers.residual_norm import normalize

TERMS = ("c2p", "p2c", "c2p|p2c")  # the values of EncoderConfig.disentangled_attention


def log_buckets(relative, buckets, max_distance):
    """Distances `relative` (int32) -> transformers' log buckets: exact within
    buckets // 2, then log-spaced up to `max_distance` (float32, as transformers)."""
    mid = buckets // 2
    sign = tf.sign(relative)
    magnitude = tf.where((relative < mid) & (relative > -mid), mid - 1, tf.abs(relative))
    ratio = tf.cast(magnitude, tf.float32) / np.float32(mid)
    scale = tf.math.log(tf.constant(np.float32((max_distance - 1) / mid)))
    log_position = tf.math.ceil(tf.math.log(ratio) / scale * np.float32(mid - 1)) + mid
    return tf.where(magnitude <= mid, relative, tf.cast(log_position, tf.int32) * sign)


def relative_index(query_rows, length, span, buckets, max_distance):
    """(B|1, Q, T) int32 rows of the relative table: clip(bucket(i - j) + span, 0, 2 span - 1)
    for query rows `query_rows` (B|1, Q) and keys 0..length-1."""
    keys = tf.range(length, dtype=tf.int32)
    relative = tf.cast(query_rows, tf.int32)[:, :, None] - keys[None, None, :]
    if buckets:
        relative = log_buckets(relative, span, max_distance)
    return tf.clip_by_value(relative + span, 0, 2 * span - 1)


def _gather_rows(scores, index):
    """scores (B, N, R, 2S), index (B|1, R, C) -> (B, N, R, C): scores[b, n, r, index[b, r, c]]."""
    shape = tf.concat([tf.shape(scores)[:2], tf.shape(index)[1:]], 0)
    index = tf.broadcast_to(index[:, None], shape)
    return tf.gather(scores, index, batch_dims=3)


def position_scores(terms, query, key, relative_query, relative_key, index):
    """The c2p and p2c scores (B, N, Q, T), unscaled: query (B, N, Q, D), key (B, N, T, D),
    relative_query / relative_key (N, 2S, D) (the projected table), index (B|1, Q, T)."""
    scores = 0.0
    if "c2p" in terms:  # query content -> key position
        c2p = ops.matmul(query, ops.transpose(relative_key, (0, 2, 1)))  # (B, N, Q, 2S)
        scores += _gather_rows(c2p, index)
    if "p2c" in terms:  # query position -> key content, gathered per key row
        p2c = ops.matmul(key, ops.transpose(relative_query, (0, 2, 1)))  # (B, N, T, 2S)
        scores += ops.transpose(_gather_rows(p2c, tf.transpose(index, (0, 2, 1))), (0, 1, 3, 2))
    return scores


def scale_factor(terms):
    """The number of score terms (content + each relative one): scores are divided by
    sqrt(D * this)."""
    return 1 + len(terms.split("|")) if terms else 1


@keras.saving.register_keras_serializable(package="bert_keras")
class RelativeEmbedding(keras.layers.Layer):
    """The encoder's table of relative-position embeddings (2 * span rows, H wide), layer
    normalized with its own `gamma` and `beta` (`normalize`, DeBERTa's `norm_rel_ebd`) once
    per call and read by every layer.

    Called on the hidden states (B, T, H) only for their width and dtype; returns (2S, H).

    >>> import numpy as np
    >>> table = RelativeEmbedding(span=4)(np.zeros((1, 3, 8), "float32"))
    >>> tuple(table.shape)
    (8, 8)
    """

    def __init__(self, span, normalize=True, layer_norm_epsilon=1e-7, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.span = span
        self.normalize = normalize
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def build(self, input_shape):
        width = input_shape[-1]
        self.embeddings = self.add_weight(
            name="embeddings", shape=(2 * self.span, width),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range))
        if self.normalize:  # the layer norm's scale and shift
            self.gamma = self.add_weight(name="gamma", shape=(width,), initializer="ones")
            self.beta = self.add_weight(name="beta", shape=(width,), initializer="zeros")

    def call(self, inputs):
        if not self.normalize:
            return ops.cast(self.embeddings, self.compute_dtype)
        table, _, _ = normalize(ops.cast(self.embeddings, "float32"),
                                ops.cast(self.gamma, "float32"), ops.cast(self.beta, "float32"),
                                self.layer_norm_epsilon)
        return ops.cast(table, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(span=self.span, normalize=self.normalize,
                      layer_norm_epsilon=self.layer_norm_epsilon,
                      initializer_range=self.initializer_range)
        return config
