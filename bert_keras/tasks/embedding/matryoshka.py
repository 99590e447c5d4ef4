"""Matryoshka training (sentence-transformers' `MatryoshkaLoss`): the embedder's loss taken
on the first D values of each embedding, renormalized, for each D of `matryoshka_dims`, and
summed with `matryoshka_weights` (1 each by default), so that the embeddings stay good when
cut short (`BertEmbedder(truncate_dim=D)`).

Shape legend: N rows (2B for pairs: anchors then positives), H embedding width, D a cut.

>>> import numpy as np
>>> cuts = matryoshka_cuts([2, 4], None, width=4)
>>> cuts
((4, 1.0), (2, 1.0))
>>> embeddings = np.array([[3., 4., 1., 0.]], "float32")
>>> [round(float(v), 4) for v in shrink(embeddings, 2)[0]]
[0.6, 0.8]
>>> float(matryoshka_loss(lambda e: e.shape[-1], embeddings, cuts))  # 4 + 2
6.0
>>> matryoshka_cuts([8], None, width=4)
Traceback (most recent call last):
...
ValueError: matryoshka_dims: 8 is more than the embedding's 4 values.
"""

import numbers

from keras import ops


def matryoshka_cuts(dims, weights, width):
    """((D, weight), ...) widest first, from `dims` (positive integers, each at most the
    embedding `width`, no repeats) and `weights` (None: 1 each; else as many non-negative
    numbers); ValueError naming the option and value otherwise."""
    dims = list(dims)
    if not dims:
        raise ValueError("matryoshka_dims: give at least one dimension, got [].")
    for dim in dims:
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 1:
            raise ValueError(f"matryoshka_dims: each must be a positive integer, got {dim!r}.")
        if dim > width:
            raise ValueError(f"matryoshka_dims: {dim} is more than the embedding's {width} "
                             "values.")
    if len(set(dims)) != len(dims):
        raise ValueError(f"matryoshka_dims: {dims} repeats a dimension.")
    weights = [1.0] * len(dims) if weights is None else list(weights)
    if len(weights) != len(dims):
        raise ValueError(f"matryoshka_weights: {len(weights)} weights for {len(dims)} "
                         "matryoshka_dims; give one per dimension.")
    for weight in weights:
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or weight < 0:
            raise ValueError(f"matryoshka_weights: each must be a non-negative number, got "
                             f"{weight!r}.")
    return tuple(sorted(((int(d), float(w)) for d, w in zip(dims, weights)), reverse=True))


def shrink(embeddings, dim):
    """The first `dim` values of each row, L2-normalized (float32): sentence-transformers'
    `shrink`. (N, H) -> (N, D)."""
    cut = ops.cast(embeddings, "float32")[..., :dim]
    norm = ops.sqrt(ops.sum(ops.square(cut), axis=-1, keepdims=True))
    return cut / ops.maximum(norm, 1e-12)


def matryoshka_loss(loss_of, embeddings, cuts):
    """sum over `cuts` ((D, weight), ...) of weight * `loss_of(shrink(embeddings, D))`: the
    embeddings are computed once and each cut reuses them, as sentence-transformers' cache."""
    return sum(weight * loss_of(shrink(embeddings, dim)) for dim, weight in cuts)
