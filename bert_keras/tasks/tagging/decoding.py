"""A tag per word from the words' logits: each word's argmax (and softmax probability), or,
with a CRF (`crf.CRF`), the Viterbi path over all the words of a text (its rows'
words concatenated, so a long text is one chain) and each word's marginal probability of
its tag (forward-backward). The same function serves `predict`, the fine-tuning task and
the export.

Shape legend: B texts, W words of a text, N words of the batch, C tags.

>>> import numpy as np
>>> logits = tf.ragged.constant([[[0., 1.], [2., 0.]], []], ragged_rank=1)
>>> word_tags(None, logits).to_list()
[[1, 0], []]
"""

import numpy as np
import tensorflow as tf

from bert_keras.tasks.graph_ops import rows


def word_tags(crf, word_logits):
    """Tag ids tf.RaggedTensor (B, (W)) int32 of word logits (B, (W), C) (`crf` None:
    argmax); -1 for a word whose logits are not finite (no piece)."""
    if not isinstance(word_logits, tf.RaggedTensor):
        word_logits = tf.RaggedTensor.from_row_lengths(
            np.concatenate(word_logits) if len(word_logits) else np.zeros((0, 1), np.float32),
            [len(row) for row in word_logits])
    flat = tf.convert_to_tensor(word_logits.flat_values, tf.float32)
    word_text = tf.cast(word_logits.value_rowids(), tf.int32)
    batch = tf.cast(word_logits.nrows(), tf.int32)
    ids, _ = tag_ids_and_scores(crf, flat, word_text, batch)
    return word_logits.with_flat_values(ids)


def tag_ids_and_scores(crf, word_logits, word_text, batch):
    """(tag ids, scores) [N] of the words' logits [N, C] of texts `word_text` [N] (in
    order, of `batch` texts): the argmax and its softmax probability, or with `crf` the
    Viterbi path of each text and each word's marginal probability of its tag. A word
    whose logits are not finite is left out of its text's chain (-1, 0)."""
    finite = tf.reduce_all(tf.math.is_finite(word_logits), axis=-1)  # (N,)
    logits = tf.where(finite[:, None], word_logits, 0.0)
    if crf is None:
        ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        scores = tf.reduce_max(tf.nn.softmax(logits, axis=-1), axis=-1)
    else:
        per_text = rows(logits, word_text, batch)
        emissions = per_text.to_tensor()  # (B, W, C)
        mask = rows(finite, word_text, batch).to_tensor(False)  # (B, W): on the chain
        path = crf.decode(emissions, mask)  # (B, W)
        probs = crf.marginals(emissions, mask)  # (B, W, C)
        ids = tf.gather_nd(path, _positions(per_text))
        scores = tf.gather(tf.gather_nd(probs, _positions(per_text)), tf.maximum(ids, 0),
                           batch_dims=1)
    return tf.where(finite, ids, -1), tf.where(finite, scores, 0.0)


def _positions(ragged):
    """(N, 2) int (text, word in text) of a ragged tensor's flat values."""
    text = ragged.value_rowids()
    first = tf.gather(ragged.row_starts(), text)
    return tf.stack([text, tf.range(tf.size(text, out_type=text.dtype)) - first], -1)
