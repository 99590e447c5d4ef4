"""The training tools' output directories at a URL (issue 56): fine-tuning's resume state
(finetuning_state), the removal of a failed run's output dir (output_dirs), and
tools/finetune.py writing, finishing and resuming under a URL (tools/pretrain.py's:
tests/tools/test_pretrain_tool.py's kill inside a checkpoint write at a URL).

As in test_object_store_paths.py, `file:///abs/path` stands for gs:// (tf.io.gfile treats it as
a URL: no local folder is made for it, no atomic rename is assumed) and `ram://` is an
in-process file system; `no_scheme_folders` finds a URL taken for a local path ("file:").
"""

import json
import os
import pathlib
import signal
import time

import pytest
import tensorflow as tf
from topic_finetuning import topic_classification_args  # tests/support

from bert_keras import directories, files
from bert_keras.training import finetuning_state, output_dirs
from bert_keras.training.finetuning_config import FinetuneConfig

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "bert_keras" / "assets"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
_ram_roots = iter(range(10**6))


def url(path):
    return f"file://{path}"


def no_scheme_folders(directory):
    """Entries of `directory` that a URL taken for a local path would have made."""
    return [name for name in os.listdir(directory) if name.endswith(":")]


@pytest.fixture(params=["ram", "file"])
def root(request, tmp_path):
    """A fresh URL directory (not made yet): ram:// or file://."""
    if request.param == "ram":
        return f"ram://training-tools-{next(_ram_roots)}/run"
    return url(tmp_path / "run")


def finetune_config(output_dir, **options):
    return FinetuneConfig.from_options(**{
        "task": "classification", "init_checkpoint": ".", "output_dir": output_dir,
        "max_seq_length": 64, "train_batch_size": 8, "num_train_epochs": 2, **options})


# -- finetuning_state at a URL ------------------------------------------------------------------

def test_a_complete_record_is_found_only_when_marked_complete(root):
    assert finetuning_state.completed_record(root) is None  # no directory
    metrics = files.join(root, "metrics.json")
    files.write_json(metrics, {"best_epoch": 1, "epochs": []})
    assert finetuning_state.completed_record(root) is None  # an unfinished run's
    files.write_text(metrics, '{"best_epoch": 1, "compl')
    assert finetuning_state.completed_record(root) is None  # cut short: not JSON
    files.write_json(metrics, {"best_epoch": 1, "complete": True})
    assert finetuning_state.completed_record(root) == {"best_epoch": 1, "complete": True}


def test_a_checkpoint_at_a_url_is_found(root):
    assert not finetuning_state.has_checkpoint(root)
    checkpoint = tf.train.Checkpoint(step=tf.Variable(3))
    directory = files.join(root, finetuning_state.CHECKPOINT_SUBDIR)
    tf.train.CheckpointManager(checkpoint, directory, max_to_keep=1).save(checkpoint_number=3)
    assert finetuning_state.has_checkpoint(root)


def test_the_flags_at_a_url_are_compared_and_a_changed_one_is_named(root):
    config = finetune_config(root)
    with pytest.raises(finetuning_state.ResumeError,
                       match=r"flags.json: cannot read the flags of an unfinished run in "):
        finetuning_state.check_same_flags(root, config, "an unfinished run")
    files.write_json(files.join(root, "flags.json"), config.to_dict())
    finetuning_state.check_same_flags(root, config, "an unfinished run")
    # --output_dir, --verbose and --checkpoint_every may differ between the runs of a directory
    finetuning_state.check_same_flags(root, finetune_config(root, verbose=0, checkpoint_every=5),
                                      "an unfinished run")
    with pytest.raises(finetuning_state.ResumeError) as refused:
        finetuning_state.check_same_flags(root, finetune_config(root, learning_rate=1e-4),
                                          "a complete run")
    message = str(refused.value)
    assert message.startswith(f"{root} holds a complete run with other flags: "
                              "--learning_rate=0.0001 (was 5e-05) ")
    assert f"(see {root}/flags.json)" in message


def test_a_local_flags_file_that_is_missing_is_named_as_before(tmp_path):
    """Locally the messages are Python's, as before URLs were supported."""
    with pytest.raises(finetuning_state.ResumeError) as refused:
        finetuning_state.check_same_flags(str(tmp_path), finetune_config(str(tmp_path)), "a run")
    path = tmp_path / "flags.json"
    assert str(refused.value) == (
        f"{path}: cannot read the flags of a run in {tmp_path} ([Errno 2] No such file or "
        f"directory: '{path}'); pass another --output_dir, or delete this one to start over.")


def _earlier_run(directory):
    """The outputs of a finished run in `directory`, its flags.json and a user's file."""
    files.makedirs(files.join(directory, "checkpoints"))
    files.write_json(files.join(directory, "metrics.json"), {"complete": True})
    files.write_jsonl(files.join(directory, "eval_predictions.jsonl"), [{"prediction": "a"}])
    directories.write_directory(files.join(directory, "best"),
                          lambda d: files.write_json(files.join(d, "task.json"), {}),
                          marker="task.json")
    files.write_text(files.join(directory, "checkpoints", "checkpoint"), "x")
    files.write_text(files.join(directory, "checkpoints", "ckpt-2.index"), "x")
    files.write_json(files.join(directory, "flags.json"), {})
    files.write_text(files.join(directory, "notes.txt"), "mine")


def test_a_new_run_removes_an_earlier_runs_outputs_at_a_url(root, tmp_path):
    assert finetuning_state.remove_earlier_outputs(root) == []  # no directory yet
    _earlier_run(root)
    removed = finetuning_state.remove_earlier_outputs(root)
    assert removed == ["metrics.json", "eval_predictions.jsonl", "best", "checkpoints"]
    assert files.listdir(root) == ["flags.json", "notes.txt"]
    assert finetuning_state.remove_earlier_outputs(root) == []
    assert no_scheme_folders(os.getcwd()) == [] and no_scheme_folders(tmp_path) == []


def test_a_new_run_removes_an_earlier_runs_outputs_locally(tmp_path):
    """The same locally, where a dangling link in a name of the outputs is removed too."""
    directory = tmp_path / "run"
    _earlier_run(str(directory))
    (directory / "test_predictions.jsonl").symlink_to(tmp_path / "gone.jsonl")
    removed = finetuning_state.remove_earlier_outputs(str(directory))
    assert removed == ["metrics.json", "eval_predictions.jsonl", "test_predictions.jsonl",
                       "best", "checkpoints"]
    assert sorted(os.listdir(directory)) == ["flags.json", "notes.txt"]


# -- output_dirs.removed_if_failed at a URL -----------------------------------------------------

RECORDS = ("flags.json", "train/events.out.tfevents.*")  # as tools/finetune.py's


def _run_in(path, names, fail=True):
    """A run that writes `names` in `path` and then fails (or not)."""
    with output_dirs.removed_if_failed(path, records=RECORDS):
        for name in names:
            files.write_text(files.join(path, name), "x")
        if fail:
            raise RuntimeError("bad input")


def test_a_failed_run_removes_the_url_output_dir_it_made(root, tmp_path):
    first = files.join(root, "a")
    with pytest.raises(RuntimeError):
        _run_in(first, ["flags.json"])
    assert not files.exists(first)  # made by the run, holding only its records
    with pytest.raises(RuntimeError):
        _run_in(first, ["flags.json", "train/events.out.tfevents.1.host.2.v2"])
    assert not files.exists(first)  # TensorBoard logs of steps that no checkpoint kept
    with pytest.raises(RuntimeError):
        _run_in(first + "/", [])  # made nothing (a trailing slash as a user may type it)
    assert not files.exists(first)
    kept = files.join(root, "b")
    with pytest.raises(RuntimeError):
        _run_in(kept, ["flags.json", "checkpoints/ckpt-1.index"])
    assert files.exists(files.join(kept, "checkpoints", "ckpt-1.index"))  # a checkpoint: kept
    with pytest.raises(RuntimeError):
        _run_in(files.join(root, "e"), ["flags.json", "train/notes.txt"])
    assert files.exists(files.join(root, "e", "train", "notes.txt"))  # not a record: kept
    existing = files.join(root, "c")
    files.write_text(files.join(existing, "notes.txt"), "mine")
    with pytest.raises(KeyboardInterrupt):
        with output_dirs.removed_if_failed(existing, records=RECORDS):
            files.write_text(files.join(existing, "flags.json"), "x")
            raise KeyboardInterrupt
    assert files.listdir(existing) == ["flags.json", "notes.txt"]  # there before: left alone
    finished = files.join(root, "d")
    _run_in(finished, ["flags.json"], fail=False)
    assert files.listdir(finished) == ["flags.json"]  # a run that did not fail: kept
    assert no_scheme_folders(os.getcwd()) == [] and no_scheme_folders(tmp_path) == []


# -- the tools, across processes, on file:// URLs -----------------------------------------------

@pytest.fixture(scope="module")
def tiny_encoder(tiny_encoder_dir):
    """A random 1-layer encoder with the bundled vocab (conftest.tiny_encoder_dir)."""
    return tiny_encoder_dir


def finetune_args(checkpoint, output_dir, **extra):
    """Topic classification on 64 definitions, 1 epoch (test_finetune_crash_safety's settings,
    smaller): seconds."""
    return topic_classification_args(checkpoint, output_dir, **{
        "test_file": DATA / "wordnet_topics.test.tsv.gz", "max_train_examples": 64,
        "max_eval_examples": 32, "eval_batch_size": 32, "num_train_epochs": 1, **extra})


def run_tool(args, cwd):
    proc = tool_runner.run(args, capture_output=True, text=True, env=ENV, timeout=600, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture
def cwd(tmp_path):
    directory = tmp_path / "cwd"
    directory.mkdir()
    yield directory
    assert no_scheme_folders(directory) == [] and no_scheme_folders(ROOT) == []


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_finetune_killed_in_a_checkpoint_write_at_a_url_resumes_and_a_rerun_trains_nothing(
        tmp_path, cwd, tiny_encoder, killed_in_checkpoint_write):
    """Killed in its second checkpoint write (epoch 2's), the run resumes from epoch 1's and
    writes all its outputs at the URL; a rerun of the complete run trains nothing."""
    out = tmp_path / "runs" / "topics"
    args = finetune_args(tiny_encoder, url(out), num_train_epochs=2)  # a checkpoint an epoch
    killed = killed_in_checkpoint_write(args, 2, cwd=cwd, env=ENV, capture_output=True,
                                        text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert finetuning_state.has_checkpoint(url(out))
    assert finetuning_state.completed_record(url(out)) is None
    rerun = run_tool(args, cwd)
    assert "Resuming from checkpoint" in rerun.stdout, rerun.stdout[-2000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["complete"] and len(metrics["epochs"]) == 2 and "test" in metrics
    assert json.loads((out / "flags.json").read_text())["output_dir"] == url(out)
    assert directories.is_complete(url(out / "best"), "task.json")
    assert {"model.keras", "task.json", "vocab.txt"} <= set(os.listdir(out / "best"))
    assert len(read_jsonl(out / "eval_predictions.jsonl")) == 32
    assert read_jsonl(out / "test_predictions.jsonl")
    assert "checkpoints" not in os.listdir(out)  # a finished run keeps none
    assert not [name for name in os.listdir(out) if name.startswith(".")]  # no temporaries
    assert os.listdir(tmp_path / "runs") == ["topics"]  # no temporary sibling

    again = run_tool(args, cwd)
    assert "holds the complete run of these flags" in again.stdout
    assert "Resuming" not in again.stdout


def test_finetune_interrupted_in_its_first_epoch_leaves_no_url_output_dir(tmp_path, cwd,
                                                                           tiny_encoder):
    """Ctrl-C before the first checkpoint: flags.json and TensorBoard logs only, removed."""
    out = tmp_path / "runs" / "interrupted"
    # 2000 steps of one example, interrupted at the progress line of the first logging window
    # (step 100): a fixed wait lost the race on fast CPUs (the run had finished).
    args = finetune_args(tiny_encoder, url(out), max_train_examples=2000, train_batch_size=1,
                         verbose=2)
    # Forked from tool_runner's server (TensorFlow imported already), its output in files.
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    for path in (stdout, stderr):
        path.write_text("")
    proc = tool_runner.Started(args, cwd, ENV, 120, b"", stdout=stdout, stderr=stderr)
    while proc.poll() is None and not any(
            line.startswith("step ") for line in stdout.read_text().splitlines()):
        time.sleep(0.01)
    assert proc.returncode is None, stderr.read_text()[-3000:]  # still running: interrupt it
    os.kill(proc.pid, signal.SIGINT)
    returncode = proc.wait()
    assert returncode != 0 and "KeyboardInterrupt" in stderr.read_text(), (
        stderr.read_text()[-3000:])
    assert not out.exists()
