"""Pretraining documents: text files or TFDS -> documents (lists of sentence lines), counted.

Input text is BERT's original format: one sentence per line, a blank line between documents.
Pairing (NSP, SOP or packed FULL-SENTENCES) happens later, in-graph
(`bert_keras.data.pretraining.pairing`), and so does masking (`masking`).

Files are read under the text-file policy of `bert_keras.text_files` (a binary or
mis-named compressed file, or more than 1% of lines not valid UTF-8, is an error naming the
file; fewer bad lines are skipped with one warning per file). `check_corpus` reads the files
once up front, so both pipelines fail before any work on a corpus that cannot give pairs:
no text at all, NSP with fewer than two documents, SOP with fewer than two sentences.

Skips (counted in `DocumentStats`, never silent): files without text (when others have some),
bad lines (`invalid_utf8_lines`), lines that tokenize to nothing, documents with no tokens; in
SOP mode, a document of a single one-token sentence. Lines longer than max_seq_length are kept
and truncated like Google's script.
"""

import dataclasses
import os

from absl import logging

from bert_keras import text_files

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


def read_documents(files, stats=None, warn=True):
    """Yields documents (lists of non-empty lines) from text files, `.gz` decompressed.

    Blank lines separate documents, and each file ends its last document. Bad lines (not
    valid UTF-8, NUL bytes) are skipped without ending a document, counted, and reported in
    one warning per file (unless `warn` is False); TextFileError if a file is not text or has
    more than 1% bad lines, or if no file holds any text.

    Example: `for doc in read_documents(["corpus.txt.gz"]): ...`
    """
    stats = stats if stats is not None else DocumentStats()
    counts_list = []
    for path in files:
        stats.files += 1
        counts = text_files.TextCounts(os.fsdecode(path))
        counts_list.append(counts)
        doc = []
        for _, line in text_files.read_lines(path, counts=counts, warn=warn):
            line = line.strip()
            if line:
                doc.append(line)
            elif doc:
                yield doc
                doc = []
        if doc:
            yield doc
        stats.invalid_utf8_lines += counts.bad_lines
    text_files.require_text(counts_list)
    empty = [c.name for c in counts_list if not c.text_lines]
    stats.empty_files += len(empty)
    if empty and warn:
        logging.warning("skipped %d input file(s) without text: %s", len(empty),
                        text_files.describe_files(empty))


def check_corpus(files, pair_mode):
    """Reads text files once (streaming) and fails unless they can give `pair_mode` pairs.

    TextFileError (naming the files and the counts) for a file that is not text, no text at
    all, NSP with fewer than two documents (its random next sentence comes from another
    document) or SOP with fewer than two sentences. Warns once per file with bad lines.
    Returns the DocumentStats (files, empty_files, documents, lines, invalid_utf8_lines).

    Example: `check_corpus(["corpus.txt"], "nsp")` before building a dataset of it.
    """
    if pair_mode not in PAIR_MODES:
        raise ValueError(f"pair_mode must be one of {PAIR_MODES}, got {pair_mode!r}")
    stats = DocumentStats()
    for doc in read_documents(files, stats):
        stats.documents += 1
        stats.lines += len(doc)
    found = (f"{text_files.describe_files(files)}: {stats.documents} document(s), "
             f"{stats.lines} sentence line(s)")
    if pair_mode == "nsp" and stats.documents < 2:
        raise text_files.TextFileError(
            f"{found}; NSP needs at least 2 documents (a blank line between documents), "
            "or use --pair_mode=sop or --pair_mode=none")
    if pair_mode == "sop" and stats.lines < 2:
        raise text_files.TextFileError(
            f"{found}; SOP needs at least 2 sentences (one per line), or use --pair_mode=none")
    return stats


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
