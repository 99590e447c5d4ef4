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

import math

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


def table_rows(length, span, buckets, max_distance):
    """(first, count): the rows of the relative table that `length` keys read. Distances are
    at most length - 1 and buckets grow with the distance, so rows span +- bucket(length - 1),
    clipped to the table: 255 of 512 at the base shape's 128 tokens.

    >>> [int(v) for v in table_rows(128, 256, True, 512)]
    [129, 255]
    """
    far = tf.maximum(tf.cast(length, tf.int32) - 1, 0)
    if buckets:
        far = log_buckets(far, span, max_distance)
    far = tf.minimum(far, span)
    return span - far, tf.minimum(span + far, 2 * span - 1) - (span - far) + 1


def relative_rows(table, query_rows, length, span, buckets, max_distance):
    """The rows of the relative table (2S, H) that query rows `query_rows` (B|1, Q) and
    keys 0..length-1 read, (R, H), and each (query, key)'s row among them, (B|1, Q, T):
    short inputs project and score only those (`table_rows`)."""
    first, count = table_rows(length, span, buckets, max_distance)
    index = relative_index(query_rows, length, span, buckets, max_distance) - first
    return table[first:first + count], index


def _gather_rows(scores, index):
    """scores (B, N, R, W), index (B|1, Q, T) into the flattened (R * W) axis -> (B, N, Q, T):
    one index for every head, and for every batch row when it is shared (batch 1), instead
    of a (B, N, Q, T) copy of it."""
    shape = tf.shape(scores)
    flat = tf.reshape(scores, tf.concat([shape[:2], [-1]], 0))  # (B, N, R * W)
    if index.shape[0] == 1:
        return tf.gather(flat, index[0], axis=2)
    return tf.gather(flat, index, axis=2, batch_dims=1)


def position_scores(terms, query, key, relative_query, relative_key, index):
    """The c2p and p2c scores (B, N, Q, T), each scaled by `score_scale`: query (B, N, Q, D),
    key (B, N, T, D), relative_query / relative_key (N, R, D) (the projected rows of the
    table), index (B|1, Q, T) of each (query, key)'s row among them. Each term is a
    (B, N, rows, R) product read at one flat index per (query, key)."""
    scale = score_scale(terms, query.shape[-1])
    query = query * ops.cast(scale, query.dtype)  # scaling the factors is cheaper than
    relative_query = relative_query * ops.cast(scale, relative_query.dtype)  # the products
    scores = 0.0
    width = tf.shape(relative_key)[1]  # R
    if "c2p" in terms:  # query i's content . the embedding of row index[i, j]
        c2p = ops.matmul(query, ops.transpose(relative_key, (0, 2, 1)))  # (B, N, Q, R)
        rows = tf.range(tf.shape(index)[1], dtype=tf.int32)[:, None] * width
        scores += _gather_rows(c2p, index + rows)
    if "p2c" in terms:  # key j's content . the query-projected embedding of row index[i, j]
        p2c = ops.matmul(key, ops.transpose(relative_query, (0, 2, 1)))  # (B, N, T, R)
        rows = tf.range(tf.shape(index)[2], dtype=tf.int32)[None, :] * width
        scores += _gather_rows(p2c, index + rows)
    return scores


def scale_factor(terms):
    """The number of score terms (content + each relative one): scores are divided by
    sqrt(D * this)."""
    return 1 + len(terms.split("|")) if terms else 1


def score_scale(terms, head_size):
    """What each score term is multiplied by before their sum, as transformers does (an
    unscaled float16 sum of three terms can overflow): 1 / sqrt(D * `scale_factor`)."""
    return 1.0 / math.sqrt(head_size * scale_factor(terms))


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
