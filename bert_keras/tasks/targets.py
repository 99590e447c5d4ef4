"""Checks of the labels that `fit` and `evaluate` take as arrays, before any step runs.

A label out of range found inside a train step is a TensorFlow op error (an
InvalidArgumentError of the loss), and a first step that fails leaves the model's train
function half-built, so that the next `fit` fails too. Checked here, the user gets one
ValueError that names the label, and the model is untouched.

>>> check_class_ids([[0], [2], [1]], num_classes=3, owner="BertClassifier")
array([0, 2, 1])
>>> check_class_ids([0, 3], num_classes=3, owner="BertClassifier")
Traceback (most recent call last):
ValueError: BertClassifier: y[1] = 3 is not a class id in [0, 3).
"""

import numpy as np


def _array(y, owner):
    array = np.asarray(y)
    if array.dtype.kind in "OSU":
        sample = ", ".join(repr(v) for v in array.reshape(-1)[:3].tolist())
        raise ValueError(f"{owner}: y holds strings ({sample}, ...), not numbers: map label "
                         "names to class ids first.")
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{owner}: y of dtype {array.dtype} is not numbers.")
    return array


def _first_bad(array, bad, owner, what):
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = "".join(f"[{i}]" for i in index)
    raise ValueError(f"{owner}: y{where} = {array[index].item()!r} is not {what}.")


def check_class_ids(y, num_classes, owner, per_token=False):
    """`y` as an array, (B,) or with `per_token` (B, T); ValueError unless it holds whole
    numbers in [0, num_classes): one per example, (B,) or (B, 1), or one per token, where
    any negative number is ignored by the loss (padding and sub-word labels).

    (B, 1) comes back as (B,): Keras traces a train step per shape of y, and after a (B,)
    run a (B, 1) one relaxes y to unknown rank, which its losses cannot take."""
    array = _array(y, owner)
    if per_token and array.ndim != 2:
        raise ValueError(f"{owner}: y has shape {array.shape}; it takes class ids "
                         "(batch, length), one per token.")
    if not per_token and not (array.ndim == 1 or array.ndim == 2 and array.shape[1] == 1):
        raise ValueError(f"{owner}: y has shape {array.shape}; it takes class ids (batch,) "
                         "(one-hot rows: take their argmax, or use problem_type='multi_label').")
    if array.dtype.kind == "f":
        fractional = array != np.round(array)
        if fractional.any():
            _first_bad(array, fractional, owner, "a whole class id")
    low = -np.inf if per_token else 0
    outside = (array < low) | (array >= num_classes)
    if outside.any():
        ignored = " or negative (ignored)" if per_token else ""
        _first_bad(array, outside, owner, f"a class id in [0, {num_classes}){ignored}")
    return array if per_token else array.reshape(-1)


def check_label_columns(y, num_classes, owner, low=None, high=None):
    """`y` as an array; ValueError unless it is (B, num_classes) numbers (in [low, high]
    where given): the multi-hot targets of multi-label classification, or regression's
    targets (B, C)."""
    array = _array(y, owner)
    if array.ndim == 1 and num_classes == 1:
        return array  # (B,) regression targets of one output
    if array.ndim != 2 or array.shape[1] != num_classes:
        raise ValueError(f"{owner}: y has shape {array.shape}; it takes (batch, {num_classes}).")
    if low is not None:
        outside = (array < low) | (array > high)
        if outside.any():
            _first_bad(array, outside, owner, f"in [{low}, {high}]")
    return array
