"""The one error type for unusable user input (a file, a text, a flag): the tools print its
message and exit with status 1, without a traceback (tracebacks are for bugs).

>>> raise InputError("vocab.txt has 197 entries but the embedding has 7,887 rows")
Traceback (most recent call last):
...
bert_keras.errors.InputError: vocab.txt has 197 entries but the embedding has 7,887 rows
"""


class InputError(ValueError):
    """A file, text or flag the user gave cannot be used; the message names it and the problem."""


__all__ = ["InputError"]
