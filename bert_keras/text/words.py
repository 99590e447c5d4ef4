"""Pieces grouped into words: [B, (pieces)] -> [B, (words), (pieces)], in core TF ops.

Every tokenizer says which of its pieces start a word (WordPiece: not a "##" suffix; byte-level
BPE: the first piece of a pre-tokenized piece; SentencePiece: a piece that starts with "▁"),
and `group_words` turns that into the word dimension that tagging and whole-word masking use.

>>> import tensorflow as tf
>>> ids = tf.ragged.constant([[5, 6, 7], [8]])
>>> starts = tf.ragged.constant([[True, False, True], [True]])
>>> group_words(starts, ids)[0].to_list()
[[[5, 6], [7]], [[8]]]
"""

import tensorflow as tf


def group_words(is_start, *pieces):
    """Ragged [B, (P)] tensors with the row partition of the bool `is_start` -> the same tensors
    as [B, (W), (P)]. The first piece of a row always starts a word."""
    rows = is_start.value_rowids()
    row_first = tf.range(tf.size(rows, out_type=tf.int64)) == tf.gather(is_start.row_starts(), rows)
    start = is_start.flat_values | row_first
    word_of_piece = tf.cumsum(tf.cast(start, tf.int64)) - 1
    num_words = tf.reduce_sum(tf.cast(start, tf.int64))
    word_row = tf.boolean_mask(rows, start)
    grouped = []
    for ragged in pieces:
        words = tf.RaggedTensor.from_value_rowids(ragged.flat_values, word_of_piece,
                                                  nrows=num_words, validate=False)
        grouped.append(tf.RaggedTensor.from_value_rowids(words, word_row,
                                                         nrows=is_start.nrows(), validate=False))
    return tuple(grouped)
