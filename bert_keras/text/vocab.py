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
    """Reads a vocab file (one token per line, line number = id) into a list of tokens.

    InputError naming the file for one that is empty, not UTF-8 text, or lists a token twice
    (its second line would be an id that no text gets, and WordPiece refuses it).
    """
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    try:
        vocab = [line.rstrip("\r") for line in data.decode("utf-8").split("\n")]
    except UnicodeDecodeError as e:
        raise InputError(f"Vocab file {path!r} is not UTF-8 text ({e.reason} at byte "
                         f"{e.start}).") from None
    while vocab and not vocab[-1]:
        vocab.pop()
    if not vocab:
        raise InputError(f"Vocab file {path!r} is empty.")
    _check_unique(vocab, path)
    return vocab


def _check_unique(vocab, path):
    """InputError naming the first token that is on two lines, and both line numbers."""
    first_line = {}
    for line, token in enumerate(vocab, 1):
        if token in first_line:
            what = "an empty token (a blank line)" if not token else f"the token {token!r}"
            raise InputError(f"Vocab file {path!r} has {what} on line {first_line[token]} and "
                             f"again on line {line}; each token must be on one line only.")
        first_line[token] = line


class Tokens:
    """A vocabulary's tokens in id order, and the first id of each token, in an object that
    tf.Module neither tracks nor walks.

    A tokenizer (a tf.Module) holding a tuple or a mapping of 30k tokens gets it flattened
    each time its `variables` properties are read, and tf.saved_model.save reads them on
    every module it saves: ~3 s more per export of a BERT-base vocab.

    >>> tokens = Tokens(["[PAD]", "hello", "hello"])
    >>> len(tokens), tokens[1], tokens.first_id["hello"], list(tokens)
    (3, 'hello', 1, ['[PAD]', 'hello', 'hello'])
    """

    def __init__(self, tokens):
        self._tokens = tuple(tokens)
        self.first_id = {}
        for i, token in enumerate(self._tokens):
            self.first_id.setdefault(token, i)

    def __len__(self):
        return len(self._tokens)

    def __getitem__(self, token_id):
        return self._tokens[token_id]

    def __iter__(self):
        return iter(self._tokens)


def save_vocab(vocab, path):
    """Writes `vocab` (a list of tokens) one per line; the line number is the id."""
    bad = [t for t in vocab if not t or "\n" in t or "\r" in t]
    if bad:
        raise ValueError(f"Vocab tokens must be non-empty single-line strings, got {bad[:5]!r}.")
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("".join(t + "\n" for t in vocab))
