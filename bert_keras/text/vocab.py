"""Vocab files: one token per line, the line number is the id.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
>>> save_vocab(["[PAD]", "[UNK]", "hello"], path)
>>> load_vocab(path)
['[PAD]', '[UNK]', 'hello']
"""

import tensorflow as tf
from bert_keras.errors import InputError


def load_vocab(path):
    """Reads a vocab file (one token per line, line number = id) into a list of tokens."""
    with tf.io.gfile.GFile(path, "r") as f:
        vocab = [line.rstrip("\r\n") for line in f]
    while vocab and not vocab[-1]:
        vocab.pop()
    if not vocab:
        raise InputError(f"Vocab file {path!r} is empty.")
    return vocab


def save_vocab(vocab, path):
    """Writes `vocab` (a list of tokens) one per line; the line number is the id."""
    bad = [t for t in vocab if not t or "\n" in t or "\r" in t]
    if bad:
        raise ValueError(f"Vocab tokens must be non-empty single-line strings, got {bad[:5]!r}.")
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("".join(t + "\n" for t in vocab))
