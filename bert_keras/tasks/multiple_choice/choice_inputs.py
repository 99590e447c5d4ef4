"""Contexts and their choices in `fit`, `evaluate` and `predict` of a multiple-choice model:
`x = (contexts, choices)`, `contexts` N strings, `choices` N rows of K strings (a list of
lists, a 2-D string array or tensor), `y` N choice indices in [0, K).

They become the rows `tools/finetune.py --task=multiple_choice` trains on
(`featurizer.choice_features`), so user code and the tool train alike.

>>> is_choices((["He wept."], [["A.", "B."]])), is_choices((["He wept."], ["A."]))
(True, False)
>>> choice_examples((["He wept."], [["A.", "B."]]), [1], "Model")[0].label
1
"""

import numpy as np
import tensorflow as tf

from bert_keras.tasks import targets
from bert_keras.tasks.multiple_choice.reader import MultipleChoiceExample


def _rows(choices):
    if isinstance(choices, tf.Tensor):
        choices = choices.numpy()
    return [[c.decode("utf-8") if isinstance(c, bytes) else c for c in row] for row in choices]


def is_choices(x):
    """Whether `x` is (contexts, choices): a pair whose second part is rows of strings."""
    if not (isinstance(x, tuple) and len(x) == 2):
        return False
    choices = x[1]
    if isinstance(choices, tf.Tensor):
        return choices.dtype == tf.string and choices.shape.rank == 2
    if isinstance(choices, np.ndarray) and choices.ndim == 2:
        return choices.dtype.kind in "OSU"
    return (isinstance(choices, (list, tuple)) and len(choices) > 0
            and all(isinstance(row, (list, tuple, np.ndarray)) for row in choices)
            and any(isinstance(c, (str, bytes)) for row in choices for c in row))


def _contexts(contexts, owner):
    if isinstance(contexts, tf.Tensor):
        contexts = contexts.numpy()
    contexts = list(np.asarray(contexts, dtype=object).reshape(-1))
    for i, text in enumerate(contexts):
        if not isinstance(text, (str, bytes)):
            raise ValueError(f"{owner}: context {i} is {text!r} ({type(text).__name__}), not a "
                             "string.")
    return [t.decode("utf-8") if isinstance(t, bytes) else t for t in contexts]


def choice_examples(x, y, owner):
    """MultipleChoiceExamples of `x` (is_choices) and labels `y` (None: unlabeled); ValueError
    naming the first row, choice or label that does not fit."""
    contexts, rows = _contexts(x[0], owner), _rows(x[1])
    if len(rows) != len(contexts):
        raise ValueError(f"{owner}: {len(contexts)} context(s) but {len(rows)} row(s) of "
                         "choices; give one row of choices per context.")
    if not contexts:
        raise ValueError(f"{owner}: no contexts: x is empty.")
    k = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != k or k < 2:
            raise ValueError(f"{owner}: row {i} of choices has {len(row)} choices and row 0 "
                             f"{k}; every row needs the same number, at least 2.")
        for j, choice in enumerate(row):
            if not isinstance(choice, str):
                raise ValueError(f"{owner}: choice {j} of row {i} is {choice!r} "
                                 f"({type(choice).__name__}), not a string.")
    labels = [None] * len(contexts)
    if y is not None:
        labels = [int(v) for v in targets.check_class_ids(y, k, owner)]
        if len(labels) != len(contexts):
            raise ValueError(f"{owner}: {len(contexts)} context(s) but {len(labels)} label(s).")
    return [MultipleChoiceExample(c, row, label) for c, row, label in zip(contexts, rows, labels)]


def split_off(x, y, fraction):
    """`((x, y), validation)`: the last `fraction` of the examples split off, as Keras'
    `validation_split` does with arrays."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split must be in (0, 1), got {fraction!r}.")
    contexts, rows = list(x[0]), _rows(x[1])
    cut = int(len(contexts) * (1.0 - fraction))
    if cut == 0:
        raise ValueError(f"validation_split={fraction!r} of {len(contexts)} examples leaves no "
                         "training examples.")
    if y is None:
        return ((contexts[:cut], rows[:cut]), None), ((contexts[cut:], rows[cut:]),)
    y = np.asarray(y)
    return ((contexts[:cut], rows[:cut]), y[:cut]), ((contexts[cut:], rows[cut:]), y[cut:])
