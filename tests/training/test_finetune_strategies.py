"""Fine-tuning under tf.distribute strategies: two local worker processes (TF_CONFIG on
loopback, MultiWorkerMirroredStrategy) fine-tune into a file:// output dir like one process,
and two logical CPU devices (MirroredStrategy) do too: the global batch split over the
replicas, per-replica metrics reduced, only the chief writes, and what the chief does alone
after training (best/ reload, eval and test predictions) waits for no other worker."""

import json
import os
import pathlib
import sys

import numpy as np
import pytest
from ports import free_ports  # tests/support
from topic_finetuning import topic_classification_args  # tests/support

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "bert_keras" / "assets"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
TEST_FILE = DATA / "wordnet_topics.test.tsv.gz"
# What follows training with a test file only, an eval file only, both, and early stopping, in
# two runs: the tiny encoder's dev accuracy does not improve in epoch 2, so the first run
# stops there and reloads best/ (epoch 1) before its test predictions; the second evaluates
# nothing.
CASES = {"eval_test_early_stopping": {"test_file": TEST_FILE, "early_stopping_patience": 1},
         "test_only": {"test_file": TEST_FILE, "eval_file": ""}}
REFERENCE = "eval_test_early_stopping"  # the case that one process runs


@pytest.fixture(scope="module")
def encoder_without_dropout(tmp_path_factory):
    """A random 1-layer encoder without dropout: replicas then compute what one device does."""
    import bert_keras as bk

    tokenizer = bk.BertTokenizer(str(DATA / "vocab.txt"))
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=32,
                             num_heads=2, intermediate_size=64, max_positions=64, dropout=0.0,
                             attention_dropout=0.0)
    path = tmp_path_factory.mktemp("encoder")
    encoder.save_pretrained(str(path), tokenizer=tokenizer)
    return path


def tool_args(checkpoint, out, **extra):
    """2 epochs of topic classification on 256 definitions: 16 full batches of 16 an epoch."""
    return topic_classification_args(checkpoint, out, **{
        "max_train_examples": 256, "max_eval_examples": 64, "num_train_epochs": 2,
        "dropout": 0.0, "dtype": "float32", **extra})


def assert_same_train_losses(got, want):
    assert got["steps_per_epoch"] == want["steps_per_epoch"] == 16
    for g, w in zip(got["epochs"], want["epochs"], strict=True):
        # The same batches, split in halves whose mean gradients are averaged: float32 sums in
        # another order.
        np.testing.assert_allclose(g["train_loss"], w["train_loss"], rtol=1e-3)


def assert_same_training(got, want):
    assert_same_train_losses(got, want)
    assert got["best_epoch"] == want["best_epoch"]
    assert got.get("stopped_early_after_epoch") == want.get("stopped_early_after_epoch")
    for g, w in zip(got["epochs"], want["epochs"], strict=True):
        np.testing.assert_allclose(g["eval"]["accuracy"], w["eval"]["accuracy"], atol=1 / 64)


def read_test_predictions(out):
    """(texts, labels, probabilities) of out/test_predictions.jsonl."""
    rows = [json.loads(line) for line in (out / "test_predictions.jsonl").open()]
    assert len(rows) == 64
    return ([r["text_a"] for r in rows], [r["prediction"] for r in rows],
            np.array([list(r["probabilities"].values()) for r in rows]))


def assert_same_predictions(got, want):
    """Two (labels, probabilities): the same labels, probabilities to float32 rounding."""
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], atol=1e-3)


def predicted_here(task_dir, texts):
    """(labels, probabilities) that the model of `task_dir` gives `texts` in this process."""
    import bert_keras as bk

    logits = bk.BertClassifier.from_pretrained(str(task_dir)).predict(texts, verbose=0)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    labels = json.loads((task_dir / "task.json").read_text())["labels"]
    return [labels[i] for i in probabilities.argmax(-1)], probabilities


@pytest.fixture(scope="module")
def one_process(encoder_without_dropout, tmp_path_factory):
    """The output dir of one process fine-tuning the `REFERENCE` case."""
    out = tmp_path_factory.mktemp("one") / "run"
    proc = tool_runner.run(tool_args(encoder_without_dropout, out, **CASES[REFERENCE]), cwd=ROOT,
                           env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def run_two_local_workers(args, tmp_path):
    """Runs `args` as the two workers of a loopback cluster; their exit codes and stderr. The
    chief is forked from the tool server (tool_runner), the other worker is a fresh
    interpreter. A worker still running at the end (one waiting on the other's collective) is
    killed."""
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    logs = [tmp_path / f"worker{index}.log" for index in range(2)]
    envs = [dict(ENV, TMPDIR=str(tmp_path), TF_CONFIG=json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": index}})) for index in range(2)]
    # stderr to a file: a chatty worker never blocks on a pipe.
    returncodes = tool_runner.run_two_workers(args, tmp_path, envs,
                                              [(os.devnull, log) for log in logs])
    return returncodes, [log.read_text()[-3000:] for log in logs]


@pytest.mark.parametrize("case", CASES)
def test_two_local_workers_fine_tune_into_a_url_like_one_process(
        encoder_without_dropout, one_process, case, tmp_path):
    out = tmp_path / "run"
    args = tool_args(encoder_without_dropout, f"file://{out}",
                     distribution_strategy="multi_worker_mirrored", **CASES[case])
    codes, logs = run_two_local_workers(args, tmp_path)
    assert codes == [0, 0], logs
    record = json.loads((out / "metrics.json").read_text())
    want = json.loads((one_process / "metrics.json").read_text())
    assert record["complete"]
    texts, *predictions = read_test_predictions(out)
    if case == REFERENCE:
        assert_same_training(record, want)
        assert_same_predictions(predictions, read_test_predictions(one_process)[1:])
        assert (out / "eval_predictions.jsonl").exists()
    else:  # the same training, no evaluation: best/ holds the last epoch's model
        assert_same_train_losses(record, want)
        assert record["best_epoch"] == 2 and "eval" not in record
        assert_same_predictions(predictions, predicted_here(out / "best", texts))
    assert not (out / "checkpoints").exists()
    # The non-chief checkpointed into a temporary directory and removed it; no URL was taken
    # for a local folder.
    assert not list(tmp_path.glob("bert_keras_worker_*"))
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(":")]


def run_on_two_cpu_devices(args, timeout):
    """Runs the tool of `args` (forked, as tool_runner runs tools) on two logical CPU devices."""
    return tool_runner.run([sys.executable, tool_runner.TWO_CPU_DEVICES, *args[1:]], cwd=ROOT,
                           env=ENV, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_mirrored_on_two_cpu_devices_fine_tunes_like_one_device(
        encoder_without_dropout, one_process, tmp_path):
    out = tmp_path / "run"
    args = tool_args(encoder_without_dropout, out, distribution_strategy="mirrored",
                     **CASES[REFERENCE])
    proc = run_on_two_cpu_devices(args, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_training(json.loads((out / "metrics.json").read_text()),
                         json.loads((one_process / "metrics.json").read_text()))


def test_a_batch_the_replicas_cannot_split_is_refused_before_any_work(
        encoder_without_dropout, tmp_path):
    out = tmp_path / "run"
    args = tool_args(encoder_without_dropout, out, distribution_strategy="mirrored",
                     train_batch_size=15)
    proc = run_on_two_cpu_devices(args, timeout=300)
    assert proc.returncode == 1
    assert ("--train_batch_size=15 is not divisible by the 2 replicas of "
            "--distribution_strategy=mirrored") in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and not out.exists()
