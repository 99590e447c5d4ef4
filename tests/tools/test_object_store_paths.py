"""Paths with a scheme, as an object store (gs://) gives them, through the file layer, the task
directories, the checkpoint writers, the export and the tools.

tf.io.gfile treats `file:///abs/path` like gs:// (a URL: no local folder is made for it, no
atomic directory rename is assumed) while the files land where other processes see them, and
`ram://` is an in-process file system, so both run here without a bucket.
"""

import json
import os
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras import directories, files
from bert_keras.serving import export
from bert_keras.tasks.task_io import is_task_directory, save_task

import tool_runner  # tests/support: tools forked without their imports
from export_harness import ROOT, SEQ, VOCAB, _enc, _outputs, run_client

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")


def url(path):
    return f"file://{path}"


def no_scheme_folders(directory):
    """Entries of `directory` that a URL taken for a local path would have made."""
    return [name for name in os.listdir(directory) if name.endswith(":")]


@pytest.fixture(scope="module")
def tokenizer():
    return bk.BertTokenizer(str(VOCAB), lower_case=True)


@pytest.fixture(scope="module")
def classifier(tokenizer):
    keras.utils.set_random_seed(0)
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=64)
    return bk.BertClassifier(encoder, num_classes=2)


# -- the file layer -----------------------------------------------------------------------------

def test_file_functions_on_ram_and_file_urls(tmp_path):
    for root in ("ram://layer", url(tmp_path / "layer")):
        files.makedirs(files.join(root, "a", "b"))
        files.write_json(files.join(root, "a", "b", "x.json"), {"k": [1, 2]})
        files.write_text(files.join(root, "a", "y.txt"), "héllo\n")
        assert files.is_local(root) is False and files.isdir(files.join(root, "a"))
        assert files.listdir(files.join(root, "a")) == ["b", "y.txt"]  # no temporary left
        assert files.read_json(files.join(root, "a", "b", "x.json")) == {"k": [1, 2]}
        with files.open_file(files.join(root, "a", "y.txt")) as f:
            assert f.read() == "héllo\n"
        assert files.file_size(files.join(root, "a", "y.txt")) == len("héllo\n".encode())
        files.copy_tree(files.join(root, "a"), files.join(root, "copy"))
        assert files.read_json(files.join(root, "copy", "b", "x.json")) == {"k": [1, 2]}
        files.remove_tree(files.join(root, "a"))
        files.remove_tree(files.join(root, "never_made"))  # absent: nothing to do
        assert not files.exists(files.join(root, "a"))
    assert files.is_local(str(tmp_path)) and files.is_local("relative/dir")
    assert (tmp_path / "layer" / "copy" / "y.txt").read_text() == "héllo\n"
    assert no_scheme_folders(os.getcwd()) == [] and no_scheme_folders(tmp_path) == []


def _write(directory, version, names=("a.txt", "b.txt")):
    for name in names:
        files.write_text(files.join(directory, name), version)


def _contents(directory):
    out = {}
    for name in files.listdir(directory):
        with files.open_file(files.join(directory, name)) as f:
            out[name] = f.read()
    return out


@pytest.mark.parametrize("root", ["ram://commit", "file"])
def test_a_url_directory_is_complete_only_once_its_marker_is_written_last(root, tmp_path):
    root = url(tmp_path) if root == "file" else root
    target = files.join(root, "best")
    assert directories.write_directory(target, lambda d: _write(d, "v1"), marker="a.txt") == target
    assert directories.is_complete(target, "a.txt") and _contents(target) == {"a.txt": "v1",
                                                                       "b.txt": "v1"}
    seen = {}

    def rewrite(directory):
        # In place (no atomic rename at a URL): the old files are gone and the directory
        # does not count as complete while it is written.
        seen["directory"], seen["files"] = directory, files.listdir(directory)
        seen["complete"] = directories.is_complete(directory, "a.txt")
        _write(directory, "v2", ["a.txt"])  # the marker first: moved to the end anyway
        seen["complete_after_marker"] = directories.is_complete(directory, "a.txt")
        _write(directory, "v2", ["c.txt"])

    directories.write_directory(target, rewrite, marker="a.txt")
    assert seen == dict(directory=target, files=[directories.WRITING], complete=False,
                        complete_after_marker=False)
    assert _contents(target) == {"a.txt": "v2", "c.txt": "v2"}  # b.txt of v1 gone
    assert directories.is_complete(target, "a.txt")

    def fails(directory):
        _write(directory, "v3", ["a.txt"])
        raise OSError(28, "No space left on device")

    from bert_keras.errors import WriteError

    with pytest.raises(WriteError, match=f"{target}: cannot write it: No space left on device"):
        directories.write_directory(target, fails, marker="a.txt")
    assert not directories.is_complete(target, "a.txt")  # a reader or a resume does not trust it
    directories.write_directory(target, lambda d: _write(d, "v4"), marker="a.txt")  # WRITING: ours
    assert directories.is_complete(target, "a.txt") and _contents(target)["b.txt"] == "v4"

    other = files.join(root, "notes")
    _write(other, "mine", ["todo.txt"])
    with pytest.raises(FileExistsError, match="holds files but no a.txt"):
        directories.write_directory(other, lambda d: _write(d, "v1"), marker="a.txt")
    assert _contents(other) == {"todo.txt": "mine"}


def test_move_directory_at_a_url_copies_the_marker_last_and_leaves_no_source(tmp_path,
                                                                             monkeypatch):
    source, destination = url(tmp_path / ".tmp-1-99"), url(tmp_path / "1")
    _write(source, "x", ["saved_model.pb", "fingerprint.pb"])
    _write(files.join(source, "variables"), "v", ["variables.index"])
    copied, copy = [], tf.io.gfile.copy
    monkeypatch.setattr(tf.io.gfile, "copy",
                        lambda a, b, overwrite=False: (copied.append(b), copy(a, b, overwrite)))
    directories.move_directory(source, destination, marker="saved_model.pb")
    assert len(copied) == 3 and copied[-1] == files.join(destination, "saved_model.pb")
    assert sorted(os.listdir(tmp_path)) == ["1"]
    assert sorted(os.listdir(tmp_path / "1")) == ["fingerprint.pb", "saved_model.pb",
                                                  "variables"]
    assert (tmp_path / "1" / "variables" / "variables.index").read_text() == "v"


def test_a_failed_run_removes_the_url_output_dir_it_made_when_it_holds_nothing(tmp_path):
    from bert_keras.training import output_dirs

    def fail_in(path, names):
        with pytest.raises(RuntimeError):
            with output_dirs.removed_if_failed(path, records=("flags.json",)):
                for name in names:
                    files.write_text(files.join(path, name), "x")
                raise RuntimeError("bad input")

    fail_in(url(tmp_path / "a"), ["flags.json"])
    assert not (tmp_path / "a").exists()  # made by the run, holds only its records
    fail_in(url(tmp_path / "b"), ["flags.json", "checkpoints/ckpt-1"])
    assert (tmp_path / "b" / "checkpoints" / "ckpt-1").exists()  # a checkpoint: kept
    (tmp_path / "c").mkdir()
    fail_in(url(tmp_path / "c"), ["flags.json"])
    assert (tmp_path / "c" / "flags.json").exists()  # there before the run: left alone


# -- task directories and checkpoints -----------------------------------------------------------

def test_save_and_load_task_on_ram(classifier, tokenizer):
    directory = "ram://runs/paraphrase/best"
    save_task(directory, classifier, tokenizer, task="classification", labels=["no", "yes"],
              seq_length=SEQ, text_fields=["text"])
    assert is_task_directory(directory)
    model, loaded_tokenizer, info = bk.load_task(directory)
    assert info["labels"] == ["no", "yes"] and loaded_tokenizer.vocab == tokenizer.vocab
    x = bk.BertPreprocessor(tokenizer, seq_length=SEQ)(tf.constant(["a kind word"]))
    np.testing.assert_allclose(model(x, training=False), classifier(x, training=False),
                               atol=1e-6)
    save_task(directory, classifier, tokenizer, task="classification", labels=["no", "yes"],
              seq_length=SEQ, text_fields=["text"])  # a re-save in place
    assert files.listdir(directory) == ["model.keras", "task.json", "tokenizer_config.json",
                                        "vocab.txt"]


def test_encoder_and_transformers_directories_on_ram(classifier, tokenizer):
    encoder = classifier.encoder
    encoder.save_pretrained("ram://ckpt/encoder", tokenizer)
    again = bk.BertEncoder.from_pretrained("ram://ckpt/encoder")
    for a, b in zip(encoder.weights, again.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    bk.save_transformers(classifier, "ram://ckpt/hf", tokenizer=tokenizer, labels=["no", "yes"])
    model, _, info = bk.load_task("ram://ckpt/hf")
    assert info["task"] == "classification" and info["labels"] == ["no", "yes"]
    np.testing.assert_array_equal(model.encoder.weights[0].numpy(), encoder.weights[0].numpy())


# -- the tools, across processes, on file:// URLs -----------------------------------------------

def _tool(name, *flags, cwd, stdin=None):
    proc = tool_runner.run([sys.executable, str(ROOT / "tools" / f"{name}.py"), *flags],
                           capture_output=True, text=True, env=ENV, timeout=600, cwd=cwd,
                           input=stdin)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.slow
def test_export_and_predict_on_file_urls(tmp_path, classifier, tokenizer):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    task_dir = url(tmp_path / "runs" / "paraphrase" / "best")
    save_task(task_dir, classifier, tokenizer, task="classification", labels=["no", "yes"],
              seq_length=SEQ, text_fields=["text"])
    base = url(tmp_path / "saved_models")
    proc = _tool("export", f"--task_dir={task_dir}", f"--export_dir_base={base}",
                 "--dtype=float32", cwd=cwd)
    assert proc.stdout.splitlines()[0] == f"{base}/paraphrase/1"
    assert os.listdir(tmp_path / "saved_models" / "paraphrase") == ["1"]  # no temporary left
    assert export.next_version(f"{base}/paraphrase") == 2

    texts = ["a kind word", "the letter to the church"]
    lines = url(tmp_path / "in" / "lines.txt")
    files.write_text(lines, "".join(t + "\n" for t in texts))
    output = url(tmp_path / "out" / "predictions.jsonl")
    _tool("predict", f"--model_dir={base}/paraphrase", f"--input={lines}", f"--output={output}",
          cwd=cwd)
    rows = [json.loads(line) for line in (tmp_path / "out" / "predictions.jsonl").open()]
    x = bk.BertPreprocessor(tokenizer, seq_length=SEQ)(tf.constant(texts))
    probs = keras.ops.softmax(classifier(x, training=False)).numpy()
    assert [r["line"] for r in rows] == [1, 2]
    for row, p in zip(rows, probs):
        assert row["outputs"]["labels"] == ["no", "yes"][int(np.argmax(p))]
        np.testing.assert_allclose(row["outputs"]["probabilities"], p, atol=1e-5)

    # The version directory, at its URL, loads where TF Serving would: a fresh interpreter
    # without the project.
    version = f"{base}/paraphrase/1"
    report = run_client(tmp_path, [version], {version: [["serving_default",
                                                         {"text": _enc_texts(texts)}]]})
    served = _outputs(report["exports"][version][-1])
    np.testing.assert_allclose(served["probabilities"], probs, atol=1e-5)
    assert no_scheme_folders(cwd) == [] and no_scheme_folders(ROOT) == []


def _enc_texts(texts):
    return _enc(np.array(texts, dtype=object))


@pytest.mark.slow
def test_convert_checkpoint_to_file_urls(tmp_path, tokenizer):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    source = tmp_path / "encoder"
    keras.utils.set_random_seed(1)
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=64,
                             activation="gelu_approximate")  # Google's layout has only it
    encoder.save_pretrained(str(source), tokenizer)
    for output_format in ("bert_keras", "google", "transformers"):
        output = url(tmp_path / output_format)
        _tool("convert_checkpoint", f"--input_dir={url(source)}", f"--output_dir={output}",
              f"--output_format={output_format}", cwd=cwd)
        converted = bk.BertEncoder.from_pretrained(output)
        for a, b in zip(encoder.weights, converted.weights):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6, err_msg=output_format)
    assert no_scheme_folders(cwd) == []


@pytest.mark.slow
def test_create_pretraining_data_and_build_vocab_on_file_urls(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    words = "the letter church paul wrote grace peace love faith hope kind word".split()
    rng = np.random.default_rng(0)
    documents = ["\n".join(" ".join(rng.choice(words, 8)) + "." for _ in range(6))
                 for _ in range(20)]
    corpus = url(tmp_path / "corpus" / "part-0.txt")
    files.write_text(corpus, "\n\n".join(documents) + "\n")
    records = url(tmp_path / "records" / "train.tfrecord")
    _tool("create_pretraining_data", f"--input_file={url(tmp_path / 'corpus' / 'part-*.txt')}",
          f"--output_file={records}", "--max_seq_length=32", "--max_predictions_per_seq=5",
          "--dupe_factor=1", cwd=cwd)
    assert os.listdir(tmp_path / "records") == ["train.tfrecord"]
    assert sum(1 for _ in tf.data.TFRecordDataset(records)) > 0

    vocab = url(tmp_path / "vocab" / "vocab.txt")
    _tool("build_vocab", f"--input={corpus}", "--vocab_size=40", f"--output={vocab}", cwd=cwd)
    learned = (tmp_path / "vocab" / "vocab.txt").read_text().split("\n")
    assert learned[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    text = " ".join(documents)
    learned = [t for t in learned[5:] if t]
    assert learned and all(t.removeprefix("##") in text for t in learned)  # from the corpus
    assert os.listdir(tmp_path / "vocab") == ["vocab.txt"]
    assert no_scheme_folders(cwd) == []

