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
