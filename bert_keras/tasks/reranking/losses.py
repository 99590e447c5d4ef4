"""The reranker's losses over groups of candidates: y (B, K) relevance, 1 a positive, 0 a
negative, -1 an absent candidate (a group shorter than the batch's longest); y_pred the
logits of the B*K pairs, (B*K, 1), row b*K + k the pair (query b, candidate k).

>>> import numpy as np
>>> y = np.array([[1.0, 0.0, -1.0]])
>>> logits = np.array([[2.0], [0.0], [9.0]])  # the absent third candidate is left out
>>> round(float(ListwiseRankingLoss()(y, logits)), 4)  # -log softmax([2, 0])[0]
0.1269
>>> round(float(PointwiseRankingLoss()(y, logits)), 4)  # mean BCE of logits 2 (1) and 0 (0)
0.41
"""

import keras
from keras import ops

ABSENT = -1.0


def _groups(y_true, y_pred):
    """(relevance (B, K), logits (B, K), present (B, K) bool) in float32."""
    relevance = ops.cast(y_true, "float32")
    logits = ops.reshape(ops.cast(y_pred, "float32"), ops.shape(relevance))
    return relevance, logits, relevance > ABSENT / 2


@keras.saving.register_keras_serializable(package="bert_keras")
class ListwiseRankingLoss(keras.losses.Loss):
    """Softmax cross entropy over each group's present candidates, the target the relevance
    normalized to sum 1 (one positive: -log softmax(logits)[positive], sentence-transformers'
    MultipleNegativesRankingLoss of a cross-encoder; graded relevance: ListNet)."""

    def __init__(self, name="listwise_ranking_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        relevance, logits, present = _groups(y_true, y_pred)
        logits = ops.where(present, logits, -1e9)
        target = ops.where(present, relevance, 0.0)
        target = target / ops.maximum(ops.sum(target, axis=-1, keepdims=True), 1e-9)
        return -ops.sum(target * ops.log_softmax(logits, axis=-1), axis=-1)  # (B,)


@keras.saving.register_keras_serializable(package="bert_keras")
class PointwiseRankingLoss(keras.losses.Loss):
    """Binary cross entropy of each present pair's logit against its 0/1 relevance, the mean
    over a group's pairs (sentence-transformers' BinaryCrossEntropyLoss)."""

    def __init__(self, name="pointwise_ranking_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        relevance, logits, present = _groups(y_true, y_pred)
        target = ops.clip(relevance, 0.0, 1.0)
        # log(1 + exp(-|x|)) + max(x, 0) - x * t: stable for any logit.
        per_pair = (ops.log1p(ops.exp(-ops.abs(logits))) + ops.maximum(logits, 0.0)
                    - logits * target)
        weights = ops.cast(present, "float32")
        return ops.sum(per_pair * weights, axis=-1) / ops.maximum(ops.sum(weights, axis=-1),
                                                                  1.0)


LOSSES = {"listwise": ListwiseRankingLoss, "pointwise": PointwiseRankingLoss}
