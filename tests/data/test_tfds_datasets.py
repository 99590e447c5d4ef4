"""TFDS for real (no mock, no network): small datasets generated from the bundled files
(tests/support/tfds_fixtures) are prepared with download_and_prepare into a temporary data dir
and read back as fine-tuning tasks and pretraining documents; a dataset that is not prepared
is refused at once, in one line, leaving nothing behind."""

import os
import signal
import sys
import tempfile
import time

import pytest
import tensorflow_datasets as tfds

from bert_keras.data import tfds_datasets
from bert_keras.data.finetuning import tfds as tt
from bert_keras.data.pretraining import documents
from bert_keras.errors import InputError
from bert_keras.tasks.classification.reader import ClassificationExample
from bert_keras.text_files import TextFileError

import tool_runner  # tests/support: scripts forked without their imports
from tfds_fixtures import builders


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A TFDS data dir with the three fixture datasets prepared by TFDS itself."""
    path = tmp_path_factory.mktemp("tfds_data")
    for name in ("bk_bible_paraphrase", "bk_bible_ner", "bk_bible_text"):
        tfds.builder(name, data_dir=str(path)).download_and_prepare()
    return str(path)


def test_the_prepare_path_has_its_imports():
    """tensorflow-datasets resolves a builder's code path (for its checksums) through
    `importlib_resources`, which it does not install (setup.py does): a fresh install failed
    there on every download_and_prepare."""
    import importlib_resources  # noqa: F401

    assert str(tfds.builder("glue/mrpc", data_dir="/nonexistent").code_path).endswith("glue.py")
    assert str(builders.BkBibleText.code_path).endswith(os.path.join("tfds_fixtures",
                                                                     "builders.py"))


def test_glue_shaped_dataset_is_a_pair_classification_task(data_dir):
    task = tt.TfdsTask("bk_bible_paraphrase", data_dir)
    assert (task.task_type, task.text_a, task.text_b, task.label) == (
        "classification", "sentence1", "sentence2", "label")
    assert task.splits == ["train", "validation", "test"]
    assert task.label_map().labels == ["different", "paraphrase"]  # the ClassLabel order
    dev = task.examples("validation")  # in TFDS's order (it shuffles the rows it writes)
    rows = [line.split("\t") for line in builders._lines("bible_paraphrase.dev.tsv.gz")]
    expected = [ClassificationExample(a, b, ["different", "paraphrase"][int(label)])
                for label, a, b in rows[:builders.ROWS["validation"]]]
    key = lambda ex: (ex.text_a, ex.text_b)  # noqa: E731
    assert sorted(dev, key=key) == sorted(expected, key=key)
    assert dev[0].source == "bk_bible_paraphrase[validation]:0"
    a, b = dev[0].text_a, dev[0].text_b
    assert len(task.examples("train[:10]")) == 10
    # The one-call forms, and the features named by the JSONL flags.
    assert tt.load_tfds_task("bk_bible_paraphrase", "validation", data_dir) == dev
    swapped = tt.TfdsTask("bk_bible_paraphrase", data_dir, text_a_field="sentence2",
                          text_b_field="sentence1").examples("validation[:1]")
    assert (swapped[0].text_a, swapped[0].text_b) == (b, a)
    single = tt.TfdsTask("bk_bible_paraphrase", data_dir, text_a_field="sentence2")
    assert single.examples("validation[:1]")[0].text_b is None


def test_features_that_do_not_fit_are_refused_in_one_line(data_dir):
    cases = [
        (dict(text_a_field="title"), "--text_a_field='title' is not one of its features"),
        (dict(label_field="gold"), "--label_field='gold' is not one of its features"),
        (dict(task="tagging"), "tagging reads the words from a Sequence of strings"),
        (dict(task="span_qa"), "span_qa reads SQuAD's features"),
    ]
    for options, message in cases:
        with pytest.raises(InputError) as raised:
            tt.TfdsTask("bk_bible_paraphrase", data_dir, **options)
        text = str(raised.value)
        assert message in text and "bk_bible_paraphrase" in text and "\n" not in text
    with pytest.raises(InputError, match=r"split 'dev': Unknown split 'dev'. Should be one of "
                       r"\['train', 'validation', 'test'\]"):
        tt.TfdsTask("bk_bible_paraphrase", data_dir).examples("dev")


def test_conll_shaped_dataset_is_a_tagging_task(data_dir):
    task = tt.TfdsTask("bk_bible_ner", data_dir)
    assert (task.task_type, task.words, task.tags) == ("tagging", "tokens", "ner")
    assert task.label_map().labels == builders.NER_TAGS
    sentences, words, tags = [], [], []
    for line in builders._lines("bible_ner.train.conll.gz"):
        if line.strip():
            words.append(line.split()[0])
            tags.append(line.split()[1])
        elif words:
            sentences.append((words, tags))
            words, tags = [], []
    train = task.examples("train")
    assert sorted((ex.words, ex.tags) for ex in train) == sorted(
        sentences[:builders.ROWS["train"]])


def test_text_dataset_gives_pretraining_documents(data_dir):
    source = documents.TfdsText("bk_bible_text", data_dir=data_dir)
    docs = list(source.documents())
    assert len(docs) == builders.DOCUMENTS
    with_files = documents.read_documents([builders.assets.path("web_bible_corpus.txt.gz")])
    assert sorted(docs) == sorted(next(with_files) for _ in range(builders.DOCUMENTS))
    lines = [line.decode() for line in source.lines().take(len(docs[0]) + 2).as_numpy_iterator()]
    assert lines == docs[0] + ["", docs[1][0]]  # BERT's text format: a blank line ends a document
    stats = documents.check_tfds_corpus(source, "nsp")  # reads only as far as it needs
    assert stats.documents == 2
    with pytest.raises(InputError, match=r"has no feature 'body' \(--tfds_text_key\); its "
                       r"features: \['text'\]"):
        documents.check_tfds_corpus(documents.TfdsText("bk_bible_text", text_key="body",
                                                       data_dir=data_dir), "nsp")
    one = documents.TfdsText("bk_bible_text", split="train[:1]", data_dir=data_dir)
    with pytest.raises(TextFileError, match=r"TFDS bk_bible_text\[train\[:1\]\]: 1 document\(s\)"
                       r", \d+ sentence line\(s\); NSP needs at least 2 documents"):
        documents.check_tfds_corpus(one, "nsp")


def _refusal(name, data_dir):
    start = time.monotonic()
    with pytest.raises(InputError) as raised:
        tt.TfdsTask(name, data_dir)
    return str(raised.value), time.monotonic() - start


@pytest.mark.parametrize("name", ["glue/mrpc", "bk_bible_paraphrase", "my_own_dataset"])
def test_unprepared_dataset_is_refused_at_once_leaving_nothing(tmp_path, name):
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = tmp_path / "missing"
    leftovers = set(os.listdir(tmp_path))
    for data_dir in (empty, missing):
        message, seconds = _refusal(name, str(data_dir))
        assert seconds < 5, seconds  # no download, no retries
        assert f"TFDS dataset {name!r}" in message and str(data_dir) in message
        assert "--tfds_data_dir" in message and "\n" not in message
    assert "--tfds_download" in _refusal("glue/mrpc", str(empty))[0]  # TFDS has its code
    assert os.listdir(empty) == [] and not missing.exists()
    assert set(os.listdir(tmp_path)) == leftovers
    assert not [p for p in os.listdir(tempfile.gettempdir()) if p.endswith("tfds")]  # litter


def test_default_data_dir_is_read_at_call_time_and_not_created(tmp_path, monkeypatch):
    monkeypatch.delenv("TFDS_DATA_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    message, _ = _refusal("glue/sst2", None)
    assert str(tmp_path / "tensorflow_datasets") in message
    assert os.listdir(tmp_path) == []
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "elsewhere"))
    assert tfds_datasets.default_data_dir() == str(tmp_path / "elsewhere")


def test_download_only_when_asked_and_a_failed_one_leaves_nothing(tmp_path, data_dir):
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "mine.txt").write_text("not TFDS's")
    with pytest.raises(InputError) as raised:
        tfds_datasets.open_prepared("bk_broken_download", str(kept), download=True)
    message = str(raised.value)
    assert "downloading and preparing it into" in message and "\n" not in message
    assert "ConnectionError: Connection reset by peer" in message
    assert os.listdir(kept) == ["mine.txt"]  # what the attempt added is gone, the rest kept
    with pytest.raises(InputError):
        tfds_datasets.open_prepared("bk_broken_download", str(tmp_path / "new"), download=True)
    assert not (tmp_path / "new").exists()
    # Asked, a dataset whose builder works is prepared; then it is read without asking.
    fresh = str(tmp_path / "fresh")
    tfds_datasets.open_prepared("bk_bible_ner", fresh, download=True)
    assert tt.TfdsTask("bk_bible_ner", fresh).examples("validation[:2]") == tt.TfdsTask(
        "bk_bible_ner", data_dir).examples("validation[:2]")


def test_a_download_without_network_is_refused_after_one_probe(tmp_path):
    """Refused in one line naming the host that did not answer, before TFDS's minutes of DNS
    retries, with nothing written."""
    data_dir = tmp_path / "data"
    with pytest.raises(InputError) as raised:
        tfds_datasets.open_prepared("bk_offline_download", str(data_dir), download=True)
    message = str(raised.value)
    assert "none of the hosts it downloads from answered (bk-fixture.invalid: " in message
    assert "--tfds_data_dir=DIR" in message and "\n" not in message
    assert not data_dir.exists()


PREPARE = """import sys
sys.path.insert(0, {support!r})
import tfds_fixtures.builders
from bert_keras.data import tfds_datasets
tfds_datasets.open_prepared(sys.argv[1], sys.argv[2], download=True)
"""


def test_an_interrupted_download_removes_what_it_added(tmp_path):
    """Ctrl-C (KeyboardInterrupt, raised on) and SIGTERM (the process still ends by it) leave
    the data dir as it was: no downloads/*.tmp.*, no incomplete.* beside an earlier version."""
    def tree():
        return sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*"))

    data_dir = tmp_path / "data"
    for config in ("sigint", "sigterm"):
        earlier = data_dir / "bk_interrupted_download" / config / "0.9.0"
        earlier.mkdir(parents=True)
        (earlier / "kept.txt").write_text("an earlier version")
    before = tree()
    with pytest.raises(KeyboardInterrupt):
        tfds_datasets.open_prepared("bk_interrupted_download/sigint", str(data_dir),
                                    download=True)
    assert tree() == before
    script = tmp_path / "prepare.py"
    script.write_text(PREPARE.format(support=os.path.dirname(os.path.dirname(builders.__file__))))
    proc = tool_runner.run([sys.executable, str(script), "bk_interrupted_download/sigterm",
                            str(data_dir)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGTERM, proc.stderr[-3000:]
    assert tree() == before


def test_dynamic_pretraining_batches_from_tfds_are_deterministic(data_dir):
    """The dynamic pipeline reads a TfdsText as one stream of documents, in the same order on
    every run, so a resumed pretraining run can skip the batches it trained on."""
    from bert_keras.data.pretraining import pipeline
    from bert_keras.text.tokenizer import BertTokenizer

    tokenizer = BertTokenizer(pipeline.default_vocab_file())
    source = documents.TfdsText("bk_bible_text", data_dir=data_dir)

    def batches():
        ds = pipeline.dynamic_pretraining_dataset(source, tokenizer, 8, max_seq_length=32,
                                                  max_predictions_per_seq=5, seed=3,
                                                  documents_per_chunk=20)
        return list(ds.take(3).as_numpy_iterator())

    first, second = batches(), batches()
    for a, b in zip(first, second):
        for part in (0, 1):
            for key in a[part]:
                assert (a[part][key] == b[part][key]).all(), key
    assert first[0][0]["input_word_ids"].shape == (8, 32)
    with pytest.raises(InputError, match="is not one TFDS has code for"):
        pipeline.dynamic_pretraining_dataset(documents.TfdsText("bk_nothing", data_dir=data_dir),
                                             tokenizer, 8)
