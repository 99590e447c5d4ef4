"""Sequence classification: one text or a pair in, one head on [CLS], as three task types,
one per problem type (`problem_types`: single_label `classification`, `multi_label`,
`regression`).

`model.BertClassifier` (the Keras task model; raw texts and pairs through
`tasks.text_inputs`), `task` (`Classification`, `MultiLabel`, `Regression`: reading TSV/CSV/
JSONL, features, predictions, scores, baselines, serving functions).
"""

from bert_keras.tasks.classification.model import BertClassifier
from bert_keras.tasks.classification.problem_types import ProblemType
from bert_keras.tasks.classification.task import Classification, MultiLabel, Regression

__all__ = ["BertClassifier", "Classification", "MultiLabel", "ProblemType", "Regression"]
