"""Crash safety of fine-tuning: kill -9 during the best/ save, inside a checkpoint write, and
mid-epoch after a --checkpoint_every checkpoint inside the epoch, then the same command resumes
and ends with the metrics of an uninterrupted run; best/ and encoder directories are replaced
atomically; a new run removes an earlier run's outputs; a rerun with other flags or data is
refused."""

import json
import os
import pathlib
import signal
import sys
import textwrap
import time

import numpy as np
import pytest
from topic_finetuning import topic_classification_args  # tests/support

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "bert_keras" / "assets"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")


@pytest.fixture(scope="module")
def tiny_checkpoint(tiny_encoder_dir):
    """A random 1-layer encoder with the bundled vocab (conftest.tiny_encoder_dir)."""
    return tiny_encoder_dir


def tool_args(checkpoint, out, **extra):
    """3 epochs of topic classification on 640 definitions (about 2 s an epoch on 2 cores)."""
    return topic_classification_args(checkpoint, out, **{
        "test_file": DATA / "wordnet_topics.test.tsv.gz", "max_train_examples": 640,
        "max_eval_examples": 64, "eval_batch_size": 32, "num_train_epochs": 3, **extra})


def run_tool(args):
    return tool_runner.run(args, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def metrics_of(out):
    return json.loads((out / "metrics.json").read_text())


def kill_when(args, ready, timeout=120):
    """Starts the tool, polls `ready()` every few ms and kill -9s the tool once it is true."""
    proc = tool_runner.start(args, cwd=ROOT, env=ENV)
    deadline = time.time() + timeout
    while not ready() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return proc


def saved_position(out):
    """(epochs done, batches done of the next epoch) of the latest checkpoint in `out`, or None."""
    import tensorflow as tf

    path = tf.train.latest_checkpoint(str(out / "checkpoints"))
    if path is None:
        return None
    state = json.loads(tf.train.load_variable(path, "state/.ATTRIBUTES/VARIABLE_VALUE"))
    return state["epoch"], state["batch"]


def resume_line(stdout):
    lines = [line for line in stdout.splitlines() if line.startswith("Resuming from")]
    assert len(lines) == 1, stdout
    return lines[0]


def probabilities(rows):
    return np.array([list(r["probabilities"].values()) for r in rows])


def assert_same_results(out, reference):
    """The figures of `out` equal those of the uninterrupted run `reference`."""
    got, want = metrics_of(out), metrics_of(reference)
    assert got["complete"] and got["best_epoch"] == want["best_epoch"]
    assert len(got["epochs"]) == len(want["epochs"]) == 3
    for g, w in zip(got["epochs"], want["epochs"]):
        assert g["train_loss"] == pytest.approx(w["train_loss"], rel=1e-6, abs=1e-6)
        assert g["eval"] == pytest.approx(w["eval"], abs=1e-6)
    assert got["eval"] == pytest.approx(want["eval"], abs=1e-6)
    assert got["test"] == pytest.approx(want["test"], abs=1e-6)
    for name in ("eval_predictions.jsonl", "test_predictions.jsonl"):
        rows, expected = read_jsonl(out / name), read_jsonl(reference / name)
        assert [r["prediction"] for r in rows] == [r["prediction"] for r in expected]
        np.testing.assert_allclose(probabilities(rows), probabilities(expected), atol=1e-6)
    assert not (out / "checkpoints").exists()  # a finished run keeps no checkpoints
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no temporary leftovers


@pytest.fixture(scope="module")
def uninterrupted(tiny_checkpoint, tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    result = run_tool(tool_args(tiny_checkpoint, out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Resuming" not in result.stdout
    return out


# -- the atomic directory writer (directories.write_directory) ---------------------------------

def _write(directory, version, files=("a.txt", "b.txt")):
    for name in files:
        pathlib.Path(directory, name).write_text(version)


def test_a_directory_write_that_fails_half_way_keeps_the_previous_directory(tmp_path):
    from bert_keras.directories import write_directory

    target = tmp_path / "best"
    write_directory(target, lambda d: _write(d, "v1"), marker="a.txt")

    def full_disk(directory):
        pathlib.Path(directory, "a.txt").write_text("v2")
        raise OSError(28, "No space left on device", str(pathlib.Path(directory, "b.txt")))

    from bert_keras.errors import WriteError

    with pytest.raises(WriteError, match=f"{target}: cannot write it: No space left on device"):
        write_directory(target, full_disk, marker="a.txt")
    assert sorted(os.listdir(tmp_path)) == ["best"]  # no temporary directory left
    assert {p.name: p.read_text() for p in target.iterdir()} == {"a.txt": "v1", "b.txt": "v1"}


def test_a_kill_during_a_directory_write_leaves_the_previous_one_and_the_next_write_cleans_up(
        tmp_path, tmp_path_factory):
    from bert_keras.directories import recover_directory, write_directory

    target = tmp_path / "best"
    write_directory(target, lambda d: _write(d, "v1"), marker="a.txt")
    # A real kill -9 of a process whose writer is half-way (one file of two written): a
    # script file, forked from tool_runner's server (bert_keras imported already).
    child = tmp_path_factory.mktemp("child") / "half_way_writer.py"
    child.write_text(textwrap.dedent(f"""
        import pathlib, time
        from bert_keras.directories import write_directory
        def write(directory):
            pathlib.Path(directory, "a.txt").write_text("v2")
            pathlib.Path({str(tmp_path)!r}, "halfway").touch()
            time.sleep(60)
        write_directory({str(target)!r}, write, marker="a.txt")
    """))
    proc = kill_when([sys.executable, child], (tmp_path / "halfway").exists)
    assert proc.returncode == -signal.SIGKILL
    leftovers = [p for p in os.listdir(tmp_path) if p.startswith(".best.tmp-")]
    assert leftovers  # the half-written directory, never at the final path
    assert {p.name: p.read_text() for p in target.iterdir()} == {"a.txt": "v1", "b.txt": "v1"}
    write_directory(target, lambda d: _write(d, "v3", ["a.txt"]), marker="a.txt")
    assert sorted(os.listdir(tmp_path)) == ["best", "halfway"]
    assert {p.name: p.read_text() for p in target.iterdir()} == {"a.txt": "v3"}  # b.txt gone

    # A kill between the swap's two renames: the previous directory is put back.
    os.rename(target, tmp_path / ".best.old-12345")
    os.mkdir(tmp_path / ".best.tmp-12345")
    assert not target.exists()
    recover_directory(target)
    assert sorted(os.listdir(tmp_path)) == ["best", "halfway"]
    assert (target / "a.txt").read_text() == "v3"


def test_a_directory_of_other_files_is_never_replaced(tmp_path):
    from bert_keras.directories import write_directory

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="holds files but no a.txt"):
        write_directory(tmp_path / "notes", lambda d: _write(d, "v1"), marker="a.txt")
    assert os.listdir(tmp_path / "notes") == ["todo.txt"]
    with pytest.raises(FileExistsError, match="working directory"):
        write_directory(os.getcwd(), lambda d: _write(d, "v1"), marker="a.txt")


def test_a_directory_written_through_a_symlink_keeps_the_link(tmp_path):
    from bert_keras.directories import write_directory

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    write_directory(tmp_path / "link", lambda d: _write(d, "v1"), marker="a.txt")
    write_directory(tmp_path / "link", lambda d: _write(d, "v2", ["a.txt"]), marker="a.txt")
    assert (tmp_path / "link").is_symlink() and sorted(os.listdir(tmp_path)) == ["link", "real"]
    assert os.listdir(tmp_path / "link") == ["a.txt"]
    assert (tmp_path / "real" / "a.txt").read_text() == "v2"


def test_save_pretrained_into_an_existing_encoder_directory_leaves_no_old_files(tmp_path):
    import bert_keras as bk

    tokenizer = bk.BertTokenizer(str(DATA / "vocab.txt"))
    target = tmp_path / "encoder"
    bk.BertEncoder.from_preset("bert_tiny", vocab_size=tokenizer.vocab_size).save_pretrained(
        str(target), tokenizer)
    (target / "old_weights.h5").write_text("from an earlier save")
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=32,
                             num_heads=2, intermediate_size=64, max_positions=64)
    encoder.save_pretrained(str(target))  # no tokenizer this time: vocab.txt goes too
    assert sorted(os.listdir(target)) == ["bert_keras.json", "model.safetensors"]
    assert sorted(os.listdir(tmp_path)) == ["encoder"]
    assert bk.BertEncoder.from_pretrained(str(target)).num_layers == 1


# -- run_finetuning / tools/finetune.py ----------------------------------------------------------

def test_a_new_run_removes_the_outputs_of_an_earlier_run(tiny_checkpoint, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    # An earlier run (of an older version: no "complete" mark) that had a --test_file.
    (out / "metrics.json").write_text(json.dumps({"task": "classification", "epochs": []}))
    (out / "test_predictions.jsonl").write_text('{"prediction": "stale"}\n')
    (out / "eval_predictions.jsonl").write_text('{"prediction": "stale"}\n')
    (out / "best").mkdir()
    (out / "best" / "model.keras").write_text("")  # a 0-byte model of a killed save
    args = tool_args(tiny_checkpoint, out, test_file="", num_train_epochs=1,
                     max_train_examples=32, max_eval_examples=16)
    result = run_tool(args)
    assert result.returncode == 0, result.stderr[-3000:]
    removed = [line for line in result.stderr.splitlines() if "removed the outputs" in line]
    assert len(removed) == 1 and "test_predictions.jsonl" in removed[0], result.stderr[-3000:]
    assert not (out / "test_predictions.jsonl").exists()
    assert "stale" not in (out / "eval_predictions.jsonl").read_text()
    assert metrics_of(out)["complete"] and "test" not in metrics_of(out)
    assert {"model.keras", "task.json", "vocab.txt"} <= set(os.listdir(out / "best"))
    assert (out / "best" / "model.keras").stat().st_size > 0


def test_a_rerun_on_other_data_is_refused_and_a_complete_run_is_not_retrained(
        tiny_checkpoint, tmp_path, capsys):
    import bert_keras as bk
    from bert_keras import finetuning_data as readers
    from bert_keras.training.finetuning_state import ResumeError

    train = readers.load_bundled_task("wordnet_topics", "train")[:48]
    options = dict(task="classification", init_checkpoint=str(tiny_checkpoint),
                   output_dir=str(tmp_path / "run"), eval_examples=train[:16],
                   max_seq_length=64, train_batch_size=16, num_train_epochs=1, verbose=0)
    record = bk.run_finetuning(train_examples=train, **options)
    stamp = (tmp_path / "run" / "best" / "model.keras").stat().st_mtime_ns
    assert bk.run_finetuning(train_examples=train, **options) == record
    assert "holds the complete run of these flags" in capsys.readouterr().out
    assert (tmp_path / "run" / "best" / "model.keras").stat().st_mtime_ns == stamp
    with pytest.raises(ResumeError, match="holds a complete run on other data"):
        bk.run_finetuning(train_examples=train[:40], **options)
    with pytest.raises(ResumeError, match=r"--learning_rate=0.001 \(was 5e-05\)"):
        bk.run_finetuning(train_examples=train, learning_rate=1e-3, **options)


@pytest.mark.slow
def test_kills_during_the_best_save_and_inside_a_checkpoint_write_then_the_same_command_resumes(
        tiny_checkpoint, uninterrupted, tmp_path, killed_in_checkpoint_write):
    """One run killed twice, then finished with the figures and weights of the uninterrupted
    run, which checkpointed at epoch ends only (40 steps an epoch):
    a kill -9 during epoch 1's best/ save (after its checkpoint) leaves a complete best/ or
    none; a rerun with other flags is refused and changes nothing; the same command, with
    --verbose=2 and --checkpoint_every=15 (free: they change no result), resumes after epoch
    1, saves its best/ again, and is killed between writing the shards of its second
    checkpoint, step 60 (checkpoints/ckpt-60_temp/), and merging them, so the latest is step
    45, inside epoch 2; the next rerun removes the shards, skips epoch 2's first 5 batches,
    never logs epoch 1 again and ends as if uninterrupted; a rerun of the complete run trains
    nothing."""
    from bert_keras.tasks import registry

    out = tmp_path / "run"
    args = tool_args(tiny_checkpoint, out)
    proc = kill_when(args, lambda: out.exists() and any(
        p.startswith(".best.tmp-") for p in os.listdir(out)))
    assert proc.returncode == -signal.SIGKILL
    assert [p for p in os.listdir(out) if p.startswith(".best.")], "not killed during the save"
    assert saved_position(out) == (1, 0)  # the checkpoint precedes the best/ save
    if (out / "best").exists():  # a previous save, complete
        registry.load_task(str(out / "best"))

    # Other flags: refused, naming them, and the unfinished run is left as it was.
    other = run_tool(tool_args(tiny_checkpoint, out, learning_rate=2e-3, max_seq_length=48))
    assert other.returncode == 1
    assert "finetune: " in other.stderr and "Traceback" not in other.stderr
    assert "--learning_rate=0.002 (was 0.001)" in other.stderr
    assert "--max_seq_length=48 (was 64)" in other.stderr
    assert "unfinished run" in other.stderr and saved_position(out) == (1, 0)

    killed = killed_in_checkpoint_write(args + ["--verbose=2", "--checkpoint_every=15"], 2,
                                        cwd=ROOT, env=ENV, capture_output=True, text=True,
                                        timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert resume_line(killed.stdout).endswith("epoch 1 of 3 done, training from epoch 2."), \
        killed.stdout
    removed = out / "checkpoints" / "ckpt-60_temp"
    assert removed.is_dir() and saved_position(out) == (1, 5)
    registry.load_task(str(out / "best"))  # epoch 1's save, redone whole
    assert not [p for p in os.listdir(out) if p.startswith(".best.")]

    rerun = run_tool(args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert resume_line(rerun.stdout).endswith(
        "epoch 1 of 3 done and 5 of 40 steps of epoch 2, training from its step 6.")
    assert not [line for line in rerun.stdout.splitlines() if line.startswith("epoch 1:")]
    assert f"unfinished checkpoint(s) of a killed run: {removed}" in rerun.stderr
    assert_same_results(out, uninterrupted)
    model, _, info = registry.load_task(str(out / "best"))
    assert info["metrics"] == metrics_of(out)["eval"]
    reference = registry.load_task(str(uninterrupted / "best"))[0]
    for got, want in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)

    again = run_tool(args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "holds the complete run of these flags" in again.stdout
    assert not [line for line in again.stdout.splitlines() if line.startswith("epoch ")]
    assert_same_results(out, uninterrupted)


def test_checkpoint_every_must_not_be_negative(tiny_checkpoint, tmp_path):
    from bert_keras.configs import ConfigError
    from bert_keras.training.finetuning_config import FinetuneConfig

    with pytest.raises(ConfigError, match=r"--checkpoint_every must be >= 0 .*got -5"):
        FinetuneConfig.from_options(task="classification", init_checkpoint=str(tiny_checkpoint),
                       output_dir=str(tmp_path), checkpoint_every=-5)
