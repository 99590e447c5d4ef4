"""In-graph helpers of the serving functions (core TF ops only, so TF Serving runs them).

Shape legend: B batch, K offsets per text.
"""

import tensorflow as tf


def byte_to_char(texts, byte_offsets):
    """Byte offsets [B, K] into texts [B] -> character offsets (invalid bytes count as one
    character each, as the tokenizer's U+FFFD replacement does).

    >>> byte_to_char(tf.constant(["héllo"]), tf.constant([[3]])).numpy().tolist()
    [[2]]
    """
    _, starts = tf.strings.unicode_decode_with_offsets(
        texts, "UTF-8", errors="replace", replacement_char=0xFFFD)
    starts = tf.cast(starts, tf.int32).to_tensor(tf.int32.max)  # (B, chars)
    return tf.searchsorted(starts, byte_offsets, side="left")


def rows(values, row_ids, nrows):
    """Flat values with their row ids -> a ragged tensor of `nrows` rows."""
    return tf.RaggedTensor.from_value_rowids(values, tf.cast(row_ids, tf.int64),
                                             nrows=tf.cast(nrows, tf.int64))
