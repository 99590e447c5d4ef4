"""Checks on the values of checkpoint tensors, whatever the layout they were read from.

A NaN or an infinity in a weight is never a value to load: it spreads through every output
(a diverged run saved its weights, or the file is damaged), so it is refused naming the tensor
before any model is built from it.

>>> import numpy as np
>>> check_finite({"w": np.array([1.0, np.nan, np.inf], "float32")}, "ckpt/")
... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
bert_keras.errors.InputError: ckpt/: tensor w has 2 of its 3 values not finite
(1 NaN, 1 infinite)...
"""

import numpy as np

from bert_keras.errors import InputError


def _is_float(array):
    # bfloat16 from a TF1 checkpoint is a numpy extension type whose kind is "V", not "f".
    return array.dtype.kind in "fc" or array.dtype.name == "bfloat16"


def check_finite(tensors, source):
    """InputError naming `source` (the checkpoint) and the first tensor of {name: array}
    `tensors` that holds a NaN or an infinity, with how many; integer and string tensors are
    not looked at."""
    for name in sorted(tensors):
        array = np.asarray(tensors[name])
        if not _is_float(array) or np.isfinite(array).all():
            continue
        nans = int(np.isnan(array).sum())
        bad = int(array.size - np.isfinite(array).sum())
        raise InputError(
            f"{source}: tensor {name} has {bad:,} of its {array.size:,} values not finite "
            f"({nans:,} NaN, {bad - nans:,} infinite); the weights are damaged (a run that "
            "diverged, or a corrupt file): use another checkpoint.")


__all__ = ["check_finite"]
