"""Pretraining documents: text files or TFDS -> documents (lists of sentence lines), counted.

Input text is BERT's original format: one sentence per line, a blank line between documents.
Pairing (NSP, SOP or packed FULL-SENTENCES) happens later, in-graph
(`bert_keras.data.pretraining.pairing`), and so does masking (`masking`).

Files are read under the text-file policy of `bert_keras.text_files` (a binary or
mis-named compressed file, or more than 1% of lines not valid UTF-8, is an error naming the
file; fewer bad lines are skipped with one warning per file). `check_corpus` reads the files
once up front, so both pipelines fail before any work on a corpus that cannot give pairs:
no text at all, NSP with fewer than two documents, SOP with fewer than two sentences.

A TFDS text dataset (`TfdsText`: one example = one document, its lines = sentences) must be
prepared in its data dir: one that is not is refused at once, in one line
(`bert_keras.data.tfds_datasets`), before any work; `check_tfds_corpus` then reads it only as
far as it needs to show that it can give pairs.

Skips (counted in `DocumentStats`, never silent): files without text (when others have some),
bad lines (`invalid_utf8_lines`), lines that tokenize to nothing, documents with no tokens; in
SOP mode, a document of a single one-token sentence. Lines longer than max_seq_length are kept
and truncated like Google's script.
"""

import dataclasses
import os

from absl import logging

from bert_keras import text_files
from bert_keras.data import tfds_datasets
from bert_keras.errors import InputError

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


@dataclasses.dataclass(frozen=True)
class TfdsText:
    """A TFDS text dataset as pretraining documents: one example = one document, the lines of
    its `text_key` feature = its sentences (blank lines dropped).

    The dataset must be prepared in `data_dir` (default: $TFDS_DATA_DIR, else
    ~/tensorflow_datasets); otherwise `bert_keras.data.tfds_datasets.open_prepared` refuses it
    at once in one line (InputError) that says what to do, unless `download` (then TFDS
    downloads and prepares it there, which needs the network).

    Example: `TfdsText("wikipedia/20230601.en", data_dir="/data/tfds").documents()`.
    """

    name: str
    split: str = "train"
    text_key: str = "text"
    data_dir: str | None = None
    download: bool = False

    def describe(self):
        return f"TFDS {self.name}[{self.split}]"

    def texts(self):
        """tf.data.Dataset of the split's texts (tf.string scalars), in file order; InputError
        if the dataset is not prepared, lacks the split or has no string `text_key` feature."""
        builder = tfds_datasets.open_prepared(self.name, self.data_dir, download=self.download)
        features = builder.info.features
        if self.text_key not in features:
            raise InputError(f"TFDS dataset {self.name!r} has no feature {self.text_key!r} "
                             f"(--tfds_text_key); its features: {sorted(features)}")
        dataset = tfds_datasets.split_dataset(builder, self.name, self.split)
        if dataset.element_spec[self.text_key].dtype.name != "string":
            raise InputError(f"TFDS dataset {self.name!r}: feature {self.text_key!r} "
                             "(--tfds_text_key) is not text: "
                             f"{dataset.element_spec[self.text_key]}")
        key = self.text_key
        return dataset.map(lambda example: example[key])

    def documents(self, stats=None):
        """Yields the documents (lists of non-empty, stripped lines) in Python. `stats`: as
        `read_documents` takes it (a TFDS text has no files or undecodable lines to count)."""
        del stats
        for text in self.texts().as_numpy_iterator():
            doc = [line.strip() for line in text.decode("utf-8", errors="replace").split("\n")
                   if line.strip()]
            if doc:
                yield doc

    def lines(self):
        """tf.data.Dataset of the documents' lines as BERT's text files hold them: one line
        per element, an empty line after each document (for the dynamic pipeline)."""
        import tensorflow as tf

        def document_lines(text):
            return tf.data.Dataset.from_tensor_slices(
                tf.concat([tf.strings.split(text, "\n"), [""]], 0))

        return self.texts().flat_map(document_lines)


def check_tfds_corpus(source, pair_mode):
    """Reads a TfdsText until it shows it can give `pair_mode` pairs (two documents for NSP,
    two sentences for SOP, one for none): InputError from `TfdsText.texts` for a dataset that
    cannot be read, TextFileError naming it and the counts when it has too little text.
    Returns the DocumentStats read (documents, lines), which stop early."""
    if pair_mode not in PAIR_MODES:
        raise ValueError(f"pair_mode must be one of {PAIR_MODES}, got {pair_mode!r}")
    needed = {"nsp": (2, 1), "sop": (1, 2), "none": (1, 1)}[pair_mode]
    stats = DocumentStats()
    for doc in source.documents(stats):
        stats.documents += 1
        stats.lines += len(doc)
        if stats.documents >= needed[0] and stats.lines >= needed[1]:
            return stats
    found = f"{source.describe()}: {stats.documents} document(s), {stats.lines} sentence line(s)"
    if not stats.lines:
        raise text_files.TextFileError(f"{found}: no text in feature {source.text_key!r}")
    if pair_mode == "nsp":
        raise text_files.TextFileError(
            f"{found}; NSP needs at least 2 documents (examples), or use --pair_mode=sop or "
            "--pair_mode=none")
    raise text_files.TextFileError(
        f"{found}; SOP needs at least 2 sentences (lines), or use --pair_mode=none")


def read_tfds_documents(name, split="train", text_key="text", data_dir=None, stats=None,
                        download=False):
    """Yields documents from a TFDS text dataset prepared in `data_dir` (`TfdsText`): one
    example = one document, lines = sentences.

    E.g. `read_tfds_documents("wikipedia/20230601.en")` (paragraphs become the "sentences").
    """
    return TfdsText(name, split, text_key, data_dir, download).documents(stats)
