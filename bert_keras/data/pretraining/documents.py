"""Pretraining documents: text files or TFDS -> documents (lists of sentence lines), counted.

Input text is BERT's original format: one sentence per line, a blank line between documents.
Pairing (NSP, SOP or packed FULL-SENTENCES) happens later, in-graph
(`bert_keras.data.pretraining.pairing`), and so does masking (`masking`).

Skips (counted in `DocumentStats`, never silent): empty files, lines that are not valid UTF-8,
lines that tokenize to nothing, documents with no tokens; in SOP mode, a document of a single
one-token sentence. Lines longer than max_seq_length are kept and truncated like Google's script.
"""

import dataclasses
import gzip
import os

from absl import logging

PAIR_MODES = ("nsp", "sop", "none")


@dataclasses.dataclass
class DocumentStats:
    """Counts reported by the readers and the pretraining pipelines."""
    files: int = 0
    empty_files: int = 0
    documents: int = 0
    lines: int = 0
    invalid_utf8_lines: int = 0
    empty_token_lines: int = 0
    skipped_documents: int = 0
    instances: int = 0

    def add(self, other):
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self


def read_documents(files, stats=None):
    """Yields documents (lists of non-empty lines) from text files, `.gz` decompressed.

    Blank lines separate documents, and each file ends its last document. Lines that are not
    valid UTF-8 are skipped and counted (the first few are logged with file and line number).
    """
    stats = stats if stats is not None else DocumentStats()
    for path in files:
        stats.files += 1
        opener = gzip.open if os.fsdecode(path).endswith(".gz") else open
        doc, any_line = [], False
        with opener(path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                any_line = True
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    stats.invalid_utf8_lines += 1
                    if stats.invalid_utf8_lines <= 5:
                        logging.warning("skipping line %d of %s: invalid UTF-8 (%s)",
                                        lineno, path, e)
                    continue
                if line:
                    doc.append(line)
                elif doc:
                    yield doc
                    doc = []
        if doc:
            yield doc
        if not any_line:
            stats.empty_files += 1
            logging.warning("input file %s is empty; skipped", path)


def read_tfds_documents(name, split="train", text_key="text", data_dir=None, stats=None):
    """Yields documents from a TFDS text dataset: one example = one document, lines = sentences.

    E.g. `read_tfds_documents("wikipedia/20230601.en")` (paragraphs become the "sentences").
    """
    import tensorflow_datasets as tfds  # optional dependency, imported only when used

    stats = stats if stats is not None else DocumentStats()
    ds = tfds.load(name, split=split, data_dir=data_dir)
    for example in ds.as_numpy_iterator():
        if text_key not in example:
            raise KeyError(f"TFDS dataset {name!r} has no feature {text_key!r}; "
                           f"features: {sorted(example)}")
        text = example[text_key].decode("utf-8", errors="replace")
        doc = [line.strip() for line in text.split("\n") if line.strip()]
        if doc:
            yield doc
