"""How a checkpoint's tensors become one of our variables: the `combine` functions of the name
maps (`bert_keras.checkpoints.assign`), here so that the family modules can name them without
importing the checkpoint readers.

>>> transpose([[1, 2, 3]]).shape
(3, 1)
"""

import numpy as np


def identity(x):
    """The tensor as it is."""
    return x


def transpose(w):
    """A PyTorch Linear weight, stored (out, in), as a Keras Dense kernel (in, out)."""
    return np.asarray(w).T


def concat_columns(*kernels):
    """Separate query, key and value kernels (or biases) as our fused qkv."""
    return np.concatenate(kernels, axis=-1)


def transpose_concat(*weights):
    """Separate PyTorch query, key and value weights as our fused qkv kernel."""
    return np.concatenate([np.asarray(w).T for w in weights], axis=-1)


def split(combine, value, count):
    """The `count` source tensors that `combine` made `value` of: the writing direction of a
    name map (transformers' tensors from our variables), exact (transposes and column splits
    only).

    >>> [a.tolist() for a in split(transpose_concat, np.arange(6).reshape(1, 6), 3)]
    [[[0], [1]], [[2], [3]], [[4], [5]]]
    """
    value = np.asarray(value)
    if combine is identity or combine is transpose:
        if count != 1:
            raise ValueError(f"{combine.__name__} has one source tensor, not {count}.")
        return [np.ascontiguousarray(value.T if combine is transpose else value)]
    if combine is concat_columns:
        return [np.ascontiguousarray(part) for part in np.split(value, count, axis=-1)]
    if combine is transpose_concat:
        return [np.ascontiguousarray(part.T) for part in np.split(value, count, axis=-1)]
    raise ValueError(f"No inverse of the combine function {combine!r}.")
