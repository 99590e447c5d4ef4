"""The problem types of sequence classification: each named once here and mapped, once, to
every name the others use for it.

=============  ================  =============================  =======================
problem type   task type         transformers' problem_type     label_type (readers,
(BertClassifier)  (--task)       (config.json)                  features)
=============  ================  =============================  =======================
single_label   classification    single_label_classification    single
multi_label    multi_label       multi_label_classification     multi
regression     regression        regression                     regression
=============  ================  =============================  =======================

Each also holds what differs in the model: how `fit` checks labels given as arrays, the
default loss and the default metrics. `BertClassifier(problem_type=...)` takes the name (the
one its config saves, so `.keras` files keep it) or the object.

>>> get("multi_label").task, get(MULTI_LABEL).transformers, REGRESSION.label_type
('multi_label', 'multi_label_classification', 'regression')
>>> from_transformers({"id2label": {"0": "score"}}).name  # transformers: one label regresses
'regression'
>>> get("binary")
Traceback (most recent call last):
ValueError: problem_type must be one of ('single_label', 'multi_label', 'regression'), got 'binary'.
"""

import keras

from bert_keras.tasks import targets


class ProblemType:
    """A problem type of `BertClassifier`: its names (`name`, `task`, `transformers`,
    `label_type`) and its labels, loss and metrics."""

    name = None  # BertClassifier's problem_type
    task = None  # the task type's name (--task, task.json)
    transformers = None  # config.json's problem_type
    label_type = None  # readers' and features' label_type

    def check_targets(self, y, num_classes, owner):
        """`y` (labels as an array) as the loss takes them; ValueError naming a bad label."""
        raise NotImplementedError

    def loss(self):
        """The default loss on the logits."""
        raise NotImplementedError

    def weighted_metrics(self):
        """The default metrics (None: the loss only)."""
        return None

    def __repr__(self):
        return f"ProblemType({self.name!r})"


class _SingleLabel(ProblemType):
    name, task = "single_label", "classification"
    transformers, label_type = "single_label_classification", "single"

    def check_targets(self, y, num_classes, owner):
        return targets.check_class_ids(y, num_classes, owner)

    def loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def weighted_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]


class _MultiLabel(ProblemType):
    name, task = "multi_label", "multi_label"
    transformers, label_type = "multi_label_classification", "multi"

    def check_targets(self, y, num_classes, owner):
        return targets.check_label_columns(y, num_classes, owner, low=0, high=1)

    def loss(self):
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def weighted_metrics(self):
        return [keras.metrics.BinaryAccuracy(name="binary_accuracy", threshold=0.0)]


class _Regression(ProblemType):
    name = task = transformers = label_type = "regression"

    def check_targets(self, y, num_classes, owner):
        return targets.check_label_columns(y, num_classes, owner)

    def loss(self):
        return keras.losses.MeanSquaredError()


SINGLE_LABEL, MULTI_LABEL, REGRESSION = _SingleLabel(), _MultiLabel(), _Regression()
PROBLEM_TYPES = (SINGLE_LABEL, MULTI_LABEL, REGRESSION)
NAMES = tuple(p.name for p in PROBLEM_TYPES)


def get(problem_type):
    """The ProblemType of a name (or the object itself); ValueError naming the known ones."""
    if isinstance(problem_type, ProblemType):
        return problem_type
    for known in PROBLEM_TYPES:
        if known.name == problem_type:
            return known
    raise ValueError(f"problem_type must be one of {NAMES}, got {problem_type!r}.")


def from_transformers(config):
    """The ProblemType of a transformers config.json dict (None: a problem_type we do not
    know), with transformers' default where it names none: one label is a regression, more
    are single-label classes."""
    name = config.get("problem_type")
    if name:
        return next((p for p in PROBLEM_TYPES if p.transformers == name), None)
    num_labels = len(config.get("id2label") or (0, 1))  # transformers' default: 2 labels
    return REGRESSION if num_labels == 1 else SINGLE_LABEL
