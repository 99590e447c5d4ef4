"""Evaluation metrics for fine-tuning: GLUE, SQuAD, entity-level F1 (numpy only).

Plain Python functions over Python lists or numpy arrays, so they run anywhere
(no TensorFlow needed) and give the numbers papers and leaderboards report:

* classification (`classification.py`): `accuracy`, `f1` (binary / macro / micro,
  as scikit-learn, over `precision_recall_f1` of counts, which entity F1 shares),
  `matthews_corrcoef` (multi-class generalisation, as scikit-learn);
* regression (`classification.py`): `pearson`, `spearman` (average ranks for ties, as scipy);
* GLUE (`classification.py`): `glue_metrics(task, y_true, y_pred)` picks each task's
  official metrics;
* SQuAD (`squad.py`): `squad_normalize_answer`, `squad_exact_match`, `squad_f1` and
  `squad_evaluate`, following the official v1.1 / v2.0 evaluation scripts;
* tagging (`entities.py`): `get_entities` and `entity_scores`, with seqeval's default
  (conlleval-style, non-strict) chunking rules for IOB1 / IOB2 / IOBES tags.

Example:
    >>> from bert_keras import metrics
    >>> metrics.f1([1, 0, 1, 1], [1, 0, 0, 1])
    0.8
    >>> metrics.squad_exact_match("The Eiffel Tower!", ["eiffel tower"])
    1.0
    >>> metrics.entity_scores([["B-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]])["f1"]
    1.0
"""

from bert_keras.metrics import classification, entities, squad
from bert_keras.metrics.classification import (
    GLUE_TASK_METRICS,
    accuracy,
    binary_f1,
    f1,
    glue_metrics,
    macro_f1,
    matthews_corrcoef,
    pearson,
    precision_recall_f1,
    rankdata,
    spearman,
)
from bert_keras.metrics.entities import entity_f1, entity_scores, get_entities
from bert_keras.metrics.squad import (
    squad_evaluate,
    squad_exact_match,
    squad_f1,
    squad_normalize_answer,
)

__all__ = classification.__all__ + squad.__all__ + entities.__all__
