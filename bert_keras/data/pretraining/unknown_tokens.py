"""Does the tokenizer fit the pretraining text? The share of unknown tokens in a sample.

A vocabulary made for other text (another language, a 10-token test vocab) turns most of a
corpus into the unknown token, and pretraining on it "works": the loss falls while the model
learns nothing. Both pretraining data paths (the static TFRecords of
`create_pretraining_tfrecords` and the dynamic pipeline of `dynamic_pretraining_dataset`)
call `check_unknown_share` on the first `SAMPLE_LINES` non-empty lines before any work: one
warning line above `WARN_ABOVE` of the sample's tokens, an `InputError` (the tools: one line,
exit status 1) above `REFUSE_ABOVE`, both naming the text, the share and the vocabulary.
"""

import itertools

import numpy as np
from absl import logging

from bert_keras.errors import InputError

SAMPLE_LINES = 1000
WARN_ABOVE = 0.05
REFUSE_ABOVE = 0.50

_checked = {}  # (source, vocab file, casing) -> share: each pair warns once per process


def sample_lines(documents, limit=SAMPLE_LINES):
    """The first `limit` lines of an iterable of documents (lists of non-empty lines)."""
    lines = (line for document in documents for line in document)
    return list(itertools.islice(lines, limit))


def unknown_share(lines, tokenizer):
    """(share of unknown tokens, tokens) in `tokenizer.tokenize(lines)`; (0.0, 0) for none."""
    if not lines:
        return 0.0, 0
    ids = np.asarray(tokenizer.tokenize(lines).flat_values)
    if not ids.size:
        return 0.0, 0
    return float(np.mean(ids == tokenizer.unk_id)), int(ids.size)


def describe_unknown_share(source, share, num_lines, tokenizer):
    """The sentence of the warning and the error, e.g. "corpus.txt: 74.4% of the tokens of
    its first 1,000 lines are [UNK] (refused above 50%; warned above 5%): ..."."""
    unk = tokenizer.vocab[tokenizer.unk_id]
    return (f"{source}: {share:.1%} of the tokens of its first {num_lines:,} lines are {unk} "
            f"(refused above {REFUSE_ABOVE:.0%}; warned above {WARN_ABOVE:.0%}): the "
            f"tokenizer's vocabulary {tokenizer.vocab_file} does not fit this text")


def check_unknown_share(source, documents, tokenizer):
    """Tokenizes the first SAMPLE_LINES lines of `documents` (an iterable of documents, lists
    of lines, read lazily: only the sample is read) and warns in one line if more than
    WARN_ABOVE of their tokens are the unknown token; InputError above REFUSE_ABOVE. `source`
    names the text in the message (a file, a list of files, a TFDS name). Returns the share.

    Each (source, vocabulary) pair is checked and warned about once per process (the dynamic
    pipeline is built once per phase and per input pipeline)."""
    key = (source, tokenizer.vocab_file, getattr(tokenizer, "lower_case", None))
    if key not in _checked:
        lines = sample_lines(documents)
        share, _ = unknown_share(lines, tokenizer)
        message = describe_unknown_share(source, share, len(lines), tokenizer)
        if share > REFUSE_ABOVE:
            raise InputError(message)
        if share > WARN_ABOVE:
            logging.warning("%s", message)
        _checked[key] = share
    return _checked[key]


__all__ = ["check_unknown_share", "unknown_share", "REFUSE_ABOVE", "WARN_ABOVE", "SAMPLE_LINES"]
