"""Keras dtype policies of a run: float32, or mixed precision (float16 / bfloat16 compute).

>>> import keras
>>> with dtype_policy("mixed_bfloat16"):
...     keras.config.dtype_policy().name
'mixed_bfloat16'
"""

import keras

DTYPES = ("float32", "mixed_float16", "mixed_bfloat16")


class dtype_policy:  # noqa: N801 - used as a context manager, like keras' own scopes
    """Sets Keras' global dtype policy inside the block and restores the previous one after."""

    def __init__(self, dtype):
        if dtype not in DTYPES:
            raise ValueError(f"Unknown dtype {dtype!r}; expected one of {DTYPES}.")
        self.dtype = dtype

    def __enter__(self):
        self.previous = keras.config.dtype_policy()
        keras.config.set_dtype_policy(self.dtype)

    def __exit__(self, *exc):
        keras.config.set_dtype_policy(self.previous)
