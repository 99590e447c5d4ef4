"""Real TFDS datasets, generated from the files bundled in bert_keras/assets/, for the
tests of the TFDS paths (no mock, no network): importing this module registers them.

- `bk_bible_paraphrase`: GLUE-shaped sentence pairs (`sentence1`, `sentence2`, ClassLabel
  `label`, `idx`) from bible_paraphrase.{train,dev,test}.tsv.gz (train / validation / test);
- `bk_bible_ner`: conll2003-shaped tagging (`tokens`, Sequence(ClassLabel) `ner`) from
  bible_ner.{train,dev}.conll.gz;
- `bk_bible_text`: a text dataset (`text`: one document, a sentence per line) from
  web_bible_corpus.txt.gz;
- `bk_broken_download`: one that fails half-way through preparing, as a lost connection
  does, after writing a partial file into the data dir's downloads/;
- `bk_offline_download`: one whose code downloads from a host that never resolves (the
  .invalid domain), as every host does on a machine without network;
- `bk_interrupted_download/{sigint,sigterm}`: one interrupted half-way through its download
  (Ctrl-C, or a SIGTERM sent to the process), after writing a partial one into downloads/.

Each split holds the first ROWS examples of its file, so preparing one takes about a second.
They live in a package module (`tfds_fixtures.builders`) as a user's own dataset usually does:
TFDS then resolves the builder's code path through `importlib_resources` when it prepares it,
the import that a fresh install lacked.

Example (prepare one into a data dir, read it back):
    >>> import tempfile, tensorflow_datasets as tfds
    >>> data_dir = tempfile.mkdtemp()
    >>> tfds.builder("bk_bible_paraphrase", data_dir=data_dir).download_and_prepare()
    ... # doctest: +ELLIPSIS
    Downloading and preparing dataset ...
    Dataset bk_bible_paraphrase downloaded and prepared to .../bk_bible_paraphrase/1.0.0. ...
    >>> ds = tfds.load("bk_bible_paraphrase", split="validation", data_dir=data_dir)
    >>> sorted(next(iter(ds)))
    ['idx', 'label', 'sentence1', 'sentence2']
"""

import gzip
import os
import signal
import time

import numpy as np
import tensorflow_datasets as tfds

from bert_keras import assets

ROWS = {"train": 96, "validation": 32, "test": 32}
DOCUMENTS = 120
NER_TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
_FILES = {"train": "train", "validation": "dev", "test": "test"}


def _lines(name):
    with gzip.open(assets.path(name), "rt", encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")


class BkBibleParaphrase(tfds.core.GeneratorBasedBuilder):
    """Bible verse pairs: is the second a paraphrase of the first (GLUE MRPC's features)."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return self.dataset_info_from_configs(features=tfds.features.FeaturesDict({
            "sentence1": tfds.features.Text(),
            "sentence2": tfds.features.Text(),
            "label": tfds.features.ClassLabel(names=["different", "paraphrase"]),
            "idx": tfds.features.Scalar(dtype=np.int32),
        }))

    def _split_generators(self, dl_manager):
        del dl_manager  # local files only
        return {split: self._generate_examples(split) for split in ROWS}

    def _generate_examples(self, split):
        lines = _lines(f"bible_paraphrase.{_FILES[split]}.tsv.gz")
        for i, line in zip(range(ROWS[split]), lines):
            label, a, b = line.split("\t")
            yield i, {"sentence1": a, "sentence2": b, "label": int(label), "idx": i}


class BkBibleNer(tfds.core.GeneratorBasedBuilder):
    """Bible sentences with PER / LOC tags (conll2003's `tokens` and `ner` features)."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return self.dataset_info_from_configs(features=tfds.features.FeaturesDict({
            "tokens": tfds.features.Sequence(tfds.features.Text()),
            "ner": tfds.features.Sequence(tfds.features.ClassLabel(names=NER_TAGS)),
        }))

    def _split_generators(self, dl_manager):
        del dl_manager
        return {split: self._generate_examples(split) for split in ("train", "validation")}

    def _generate_examples(self, split):
        words, tags, count = [], [], 0
        for line in _lines(f"bible_ner.{_FILES[split]}.conll.gz"):
            if line.strip():
                word, tag = line.split()
                words.append(word)
                tags.append(tag)
                continue
            if words:
                yield count, {"tokens": words, "ner": tags}
                words, tags, count = [], [], count + 1
                if count == ROWS[split]:
                    return
        if words and count < ROWS[split]:
            yield count, {"tokens": words, "ner": tags}


class BkBibleText(tfds.core.GeneratorBasedBuilder):
    """Documents of the World English Bible: one example per document, a sentence per line."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict({"text": tfds.features.Text()}))

    def _split_generators(self, dl_manager):
        del dl_manager
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        document, count = [], 0
        for line in _lines("web_bible_corpus.txt.gz"):
            if line.strip():
                document.append(line.strip())
            elif document:
                yield count, {"text": "\n".join(document)}
                document, count = [], count + 1
                if count == DOCUMENTS:
                    return
        if document and count < DOCUMENTS:
            yield count, {"text": "\n".join(document)}


class BkBrokenDownload(tfds.core.GeneratorBasedBuilder):
    """Fails half-way through preparing (a connection lost during a download)."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict({"text": tfds.features.Text()}))

    def _split_generators(self, dl_manager):
        downloads = os.path.join(os.fspath(self.data_dir_root), "downloads")
        os.makedirs(downloads, exist_ok=True)
        with open(os.path.join(downloads, "corpus.txt.tmp.partial"), "w") as f:
            f.write("half a file")
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        yield 0, {"text": "one"}
        raise ConnectionError("Connection reset by peer")


class BkOfflineDownload(tfds.core.GeneratorBasedBuilder):
    """Downloads from a host that does not resolve (as TFDS's own builders name theirs: the
    URLs of their checksums.tsv, `url_infos`)."""

    VERSION = tfds.core.Version("1.0.0")
    URL = "https://bk-fixture.invalid/corpus.txt"
    url_infos = {URL: None}

    def _info(self):
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict({"text": tfds.features.Text()}))

    def _split_generators(self, dl_manager):
        dl_manager.download(self.URL)  # minutes of DNS retries, unless probed first
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        yield 0, {"text": "one"}


class BkInterruptedDownload(tfds.core.GeneratorBasedBuilder):
    """Interrupted by Ctrl-C (config `sigint`) or SIGTERM (`sigterm`) while it downloads, with
    a partial download in downloads/ and TFDS's incomplete.* directory beside its version."""

    VERSION = tfds.core.Version("1.0.0")
    BUILDER_CONFIGS = [tfds.core.BuilderConfig(name="sigint"),
                       tfds.core.BuilderConfig(name="sigterm")]

    def _info(self):
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict({"text": tfds.features.Text()}))

    def _split_generators(self, dl_manager):
        partial = os.path.join(os.fspath(self.data_dir_root), "downloads",
                               "corpus.txt.tmp.0123456789abcdef")
        os.makedirs(partial)
        with open(os.path.join(partial, "corpus.txt"), "w") as f:
            f.write("half a file")
        if self.builder_config.name == "sigint":
            raise KeyboardInterrupt  # what SIGINT raises in the main thread
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the signal arrives during the wait
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        yield 0, {"text": "one"}
