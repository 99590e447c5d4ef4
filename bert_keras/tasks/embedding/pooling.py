"""The sentence embedder's poolings: sentence-transformers' mean, cls and max (`POOLINGS`),
computed by the shared layer `models.layers.pooling.SentencePooling`. Its learned
"attention" pooling is not offered here: an export pools a bare encoder too
(`tools/export.py --pooling`), which has no trained score for it.

>>> check_pooling("attention", "BertEmbedder")
Traceback (most recent call last):
...
ValueError: BertEmbedder: pooling must be one of ('mean', 'cls', 'max'), got 'attention'.
"""

from bert_keras.models.layers.pooling import SentencePooling

POOLINGS = ("mean", "cls", "max")

__all__ = ["POOLINGS", "SentencePooling", "check_pooling"]


def check_pooling(pooling, owner="SentencePooling"):
    """ValueError naming `pooling` and the choices unless it is one of `POOLINGS`."""
    if pooling not in POOLINGS:
        raise ValueError(f"{owner}: pooling must be one of {POOLINGS}, got {pooling!r}.")
