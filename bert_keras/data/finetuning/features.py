"""What the featurizers of every task type share: texts tokenized in chunks, ragged rows as
numpy rows, and the feature count.

The readers give Python examples; each task type's featurizer (`tasks/<name>/featurizer.py`:
`classification_features`, `tagging_features`, `span_features`, ...) turns them into the
model's inputs (`input_word_ids`, `input_type_ids`; `input_mask` is added when batching) and
targets, one unpadded int32 row per feature; `batching` pads the rows of a batch only to its
longest row, which on CPU is several times faster than padding everything to `seq_length`.
The public face of the featurizers is `bk.task_features`.

>>> import numpy as np
>>> num_features({"input_word_ids": [np.array([2, 5, 3]), np.array([2, 3])]})
2
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

TOKENIZE_CHUNK = 1024  # texts tokenized per eager call


def num_features(features: dict) -> int:
    """The number of feature rows (N)."""
    return len(features["input_word_ids"])


def tokenize_texts(tokenizer, texts: Sequence[str]) -> list[np.ndarray]:
    """Texts -> list of int32 piece-id arrays (no special tokens), tokenized in chunks."""
    out = []
    for i in range(0, len(texts), TOKENIZE_CHUNK):
        out.extend(ragged_rows(tokenizer.tokenize(
            tf.constant(list(texts[i:i + TOKENIZE_CHUNK]), tf.string))))
    return out


def ragged_rows(ragged) -> list[np.ndarray]:
    """A [B, (n)] ragged tensor as B numpy rows: one conversion, not one eager slice per row."""
    values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
    return [values[splits[b]:splits[b + 1]] for b in range(len(splits) - 1)]


__all__ = [
    "TOKENIZE_CHUNK",
    "num_features",
    "tokenize_texts",
    "ragged_rows",
]
