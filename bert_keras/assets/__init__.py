"""The files bundled with the package (see README.md here): corpus, tasks, vocab.

>>> import os
>>> os.path.basename(path("vocab.txt"))
'vocab.txt'
"""

import os

DIRECTORY = os.path.dirname(os.path.abspath(__file__))


def path(name):
    """Absolute path of a bundled file, e.g. path("vocab.txt")."""
    return os.path.join(DIRECTORY, name)
