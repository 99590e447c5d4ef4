"""Tests for tools/pretrain.py: help, usage errors before any work, a tiny run, kill -9 + resume.

One tiny run per objective (the `runs` fixture) is shared by the tests that read it: what a run
writes, the seed's determinism, distillation from a run's directory, and each objective's
resume from a checkpoint, checked against the run that was not stopped."""

import functools
import glob
import gzip
import json
import os
import pathlib
import re
import shutil
import signal
import sys
import time

import numpy as np
import pytest

import tool_runner  # tests/support: tools forked without their imports

REPO = pathlib.Path(__file__).resolve().parents[2]
TOOL = [sys.executable, str(REPO / "tools" / "pretrain.py")]
TINY = f"--flagfile={REPO / 'flags' / 'pretrain_tiny.flags'}"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


_run = functools.partial(tool_runner.run_tool, "pretrain")


def test_help_is_short_with_an_example_and_helpfull_lists_everything():
    short = _run("--help")
    assert "python tools/pretrain.py --flagfile=flags/pretrain_mini.flags" in short.stdout
    assert "--train_text" in short.stdout and "--model_dir" in short.stdout
    assert "--distribution_strategy" not in short.stdout
    assert len(short.stdout.splitlines()) < 60
    full = _run("--helpfull").stdout
    for flag in ("--distribution_strategy", "--tpu", "--dtype", "--[no]jit_compile",
                 "--phase2_seq_length", "--gradient_accumulation_steps", "--init_checkpoint",
                 "--keep_checkpoints", "--optimizer"):
        assert flag in full, flag


@pytest.mark.parametrize("args, message", [
    (["--distribution_strategy=tpu"], "needs --tpu"),
    (["--train_data=/nonexistent/*.tfrecord", "--train_text="], "No file matches '/nonexistent/"),
    (["--train_text=/nonexistent/*.txt"], "No file matches '/nonexistent/"),
    (["--train_data=bert_keras/assets/web_bible_corpus.txt.gz"], "exactly one of --train_data"),
    (["--train_text="], "exactly one of --train_data"),
    (["--global_batch_size=10", "--gradient_accumulation_steps=4"], "not divisible"),
    (["--distribution_strategy=multi_worker_mirrored"], "TF_CONFIG"),
    (["--warmup_steps=100"], "--warmup_steps=100 must be in"),
    (["--phase2_seq_length=64", "--train_data=bert_keras/assets/web_bible_corpus.txt.gz",
      "--train_text="], "needs --phase2_train_data"),
    (["--vocab_file=bert_keras/assets/vocab.txt",
      "--tokenizer_dir=tests/fixtures/families/roberta"],
     "Give one of --vocab_file"),
    (["--tokenizer_dir=/nonexistent"], "--tokenizer_dir='/nonexistent' is not a directory"),
    (["--adam_beta_2=1.0"], "--adam_beta_2 must be in (0, 1), got 1.0"),
    (["--steps_per_execution=2", "--distribution_strategy=mirrored"],
     "--steps_per_execution=2 runs under --distribution_strategy=one_device|tpu, not mirrored"),
])
def test_bad_flags_are_usage_errors_before_any_work(tmp_path, args, message):
    model_dir = tmp_path / "run"
    proc = _run(TINY, f"--model_dir={model_dir}", *args, env={"TF_CONFIG": ""})  # = unset
    assert proc.returncode == 1
    assert message in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not model_dir.exists()  # nothing was started


def test_documents_per_chunk_must_be_positive():
    from bert_keras.configs import ConfigError
    from bert_keras.training.pretraining_config import PretrainConfig

    text = "bert_keras/assets/web_bible_corpus.txt.gz"
    with pytest.raises(ConfigError, match=r"--documents_per_chunk must be >= 1, got 0"):
        PretrainConfig.from_options(model_dir="/tmp/x", train_text=text, documents_per_chunk=0)


def test_global_batch_not_divisible_by_replicas_is_a_usage_error(tmp_path):
    # Two logical CPU devices make `mirrored` two replicas.
    proc = tool_runner.run([sys.executable, tool_runner.TWO_CPU_DEVICES, *TOOL[1:], TINY,
                            f"--model_dir={tmp_path / 'run'}", "--distribution_strategy=mirrored",
                            "--global_batch_size=9"],
                           capture_output=True, text=True, cwd=REPO, timeout=300, env=ENV)
    assert proc.returncode == 1
    assert ("global_batch_size=9 is not divisible by num_replicas (2)" in proc.stderr
            ), proc.stderr[-2000:]
    assert not (tmp_path / "run").exists()


def test_a_run_from_scratch_takes_robertas_byte_level_bpe_tokenizer_and_adam_beta_2(runs):
    """--tokenizer_dir: the data is tokenized with RoBERTa's BPE (vocab.json + merges.txt),
    the encoder takes its vocab size and ships its files; --adam_beta_2 reaches the optimizer.
    (The ELECTRA run of `runs` has both flags.)"""
    model_dir = runs("electra")[1]
    encoder_dir = model_dir / "encoder"
    assert {"vocab.json", "merges.txt"} <= {p.name for p in encoder_dir.iterdir()}
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.text.tokenizers import load_tokenizer
    from bert_keras.training import pretraining_models
    from bert_keras.training.pretraining_config import PretrainConfig

    tokenizer = load_tokenizer(str(encoder_dir))
    assert type(tokenizer).__name__ == "ByteBpeTokenizer"
    assert BertEncoder.from_pretrained(str(encoder_dir)).vocab_size == 1000
    config = PretrainConfig.from_options(**json.loads((model_dir / "run_config.json").read_text()))
    optimizer = pretraining_models.build_model(config, tokenizer).optimizer
    assert (optimizer.beta_2, optimizer.epsilon) == (pytest.approx(0.98), pytest.approx(1e-6))


def _check_writes_everything_fine_tuning_needs(proc, model_dir):
    assert "Finished at step 6 (started at 0)" in proc.stdout
    assert "step 6/6 [" in proc.stdout  # the progress line
    with open(model_dir / "run_config.json") as f:
        config = json.load(f)
    assert config["preset"] == "bert_tiny" and config["train_steps"] == 6
    assert config["model_dir"] == str(model_dir)
    ckpts = sorted(p.name for p in (model_dir / "checkpoints").glob("ckpt-*.index"))
    assert ckpts == ["ckpt-3.index", "ckpt-6.index"]
    assert glob.glob(str(model_dir / "train" / "events.out.tfevents.*"))
    encoder_dir = model_dir / "encoder"
    assert {p.name for p in encoder_dir.iterdir()} >= {"bert_keras.json", "model.safetensors",
                                                       "vocab.txt"}
    from bert_keras.models.encoder import BertEncoder

    assert BertEncoder.from_pretrained(str(encoder_dir)).hidden_size == 128


def _check_resuming_with_another_model_size_names_the_changed_settings(model_dir):
    proc = _run(TINY, f"--model_dir={model_dir}", "--preset=bert_mini", "--train_steps=9")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "'preset': ('bert_tiny', 'bert_mini')" in proc.stderr
    assert str(model_dir) in proc.stderr and "another --model_dir" in proc.stderr
    assert json.loads((model_dir / "run_config.json").read_text())["preset"] == "bert_tiny"


# Per objective, the tiny flagfile's run (6 steps, checkpoints at steps 3 and 6) with a history
# entry per step: the `runs` fixture's. Distillation's teacher is the masked LM's run directory.
# ELECTRA's run is also a run from scratch with RoBERTa's byte-level BPE and --adam_beta_2.
OBJECTIVE_FLAGS = {
    "mlm": ["--seed=3"],
    "electra": ["--objective=electra", "--pair_mode=none", "--adam_beta_2=0.98",
                f"--tokenizer_dir={REPO / 'tests' / 'fixtures' / 'families' / 'roberta'}"],
    "distill": ["--objective=distill", "--pair_mode=none"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """`runs(objective)`: (proc, model_dir, flags) of that objective's tiny run, made once for
    the module; a test that changes the directory works on a copy."""
    made, base = {}, tmp_path_factory.mktemp("runs")

    def run(objective):
        if objective not in made:
            model_dir = base / objective
            flags = [TINY, f"--model_dir={model_dir}", "--log_every=1",
                     *OBJECTIVE_FLAGS[objective]]
            if objective == "distill":
                flags.append(f"--teacher_checkpoint={run('mlm')[1]}")
            proc = _run(*flags)
            assert proc.returncode == 0, proc.stderr[-3000:]
            made[objective] = proc, model_dir, flags
        return made[objective]

    return run


def _losses(model_dir):
    return [values["loss"] for _, values in json.loads((model_dir / "history.json").read_text())]


def test_tiny_flagfile_run_writes_what_fine_tuning_needs_and_refuses_another_model_size(runs):
    """The tiny flagfile's run writes everything fine-tuning needs (a history entry per step
    with --log_every=1); a resume with another model size names the changed settings. (What
    --seed seeds: test_nan_loss_from_a_huge_learning_rate_stops_with_the_step_and_keeps_checkpoints
    and test_a_kill_inside_a_checkpoint_write_at_a_url_leaves_shards_that_the_resume_removes.)
    """
    proc, first_dir, _ = runs("mlm")  # --seed=3
    _check_writes_everything_fine_tuning_needs(proc, first_dir)
    assert len(_losses(first_dir)) == 6
    _check_resuming_with_another_model_size_names_the_changed_settings(first_dir)


def _as_if_killed_between_the_checkpoints(model_dir):
    """What a kill -9 of the run in `model_dir` between its checkpoints at steps 3 and 6
    leaves: checkpoint 3 named by the state file, the run's records (run_config.json,
    TensorBoard), and none of what a finished run adds (history.json, encoder/, final/)."""
    checkpoints = model_dir / "checkpoints"
    for path in checkpoints.glob("ckpt-6.*"):
        path.unlink()
    (checkpoints / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-3"\nall_model_checkpoint_paths: "ckpt-3"\n')
    for name in ("encoder", "final"):
        shutil.rmtree(model_dir / name, ignore_errors=True)
    (model_dir / "history.json").unlink()
    config = json.loads((model_dir / "run_config.json").read_text())
    (model_dir / "run_config.json").write_text(json.dumps({**config, "model_dir": str(model_dir)}))


def _check_the_same_figures_from_step_4(model_dir, straight):
    """The history of a run resumed at step 3 (steps 4-6) is that of the run not stopped."""
    got, want = (json.loads((d / "history.json").read_text()) for d in (model_dir, straight))
    assert [step for step, _ in got] == [4, 5, 6]
    for (_, values), (_, expected) in zip(got, want[3:], strict=True):
        del values["examples_per_second"], expected["examples_per_second"]
        assert values == pytest.approx(expected, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("objective", ["electra", "distill"])
def test_each_objective_resumes_from_its_checkpoint_to_the_figures_of_a_run_not_stopped(
        runs, tmp_path, objective):
    """Each objective's model, optimizer, sampling and data position come back from a
    checkpoint: the same command, rerun on what a kill between two checkpoints leaves, ends
    with the losses, metrics and encoder of the run that was not stopped, and logs its
    objective's TensorBoard scalars from the step after the checkpoint. (The masked LM's:
    test_a_kill_inside_a_checkpoint_write_at_a_url_leaves_shards_that_the_resume_removes; a
    real kill -9 at a moment the test does not choose:
    test_kill_9_mid_training_then_the_same_command_resumes.)"""
    _, straight, flags = runs(objective)
    model_dir = tmp_path / "run"
    shutil.copytree(straight, model_dir)
    _as_if_killed_between_the_checkpoints(model_dir)
    rerun = _run(*[f"--model_dir={model_dir}" if flag.startswith("--model_dir=") else flag
                   for flag in flags])
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "Resuming from checkpoint" in rerun.stdout and "at step 3 of 6" in rerun.stdout
    assert "Finished at step 6 (started at 3)" in rerun.stdout
    assert "changed settings" not in rerun.stderr, rerun.stderr[-3000:]
    first_progress = next(line for line in rerun.stdout.splitlines() if line.startswith("step "))
    assert first_progress.startswith("step 4/6 ["), rerun.stdout[-2000:]  # not from zero
    _check_the_same_figures_from_step_4(model_dir, straight)
    from bert_keras.models.encoder import BertEncoder

    # The encoder kept: BERT's, ELECTRA's discriminator, the student (1 of bert_tiny's 2 layers).
    encoder, reference = (BertEncoder.from_pretrained(str(d / "encoder"))
                          for d in (model_dir, straight))
    assert encoder.num_layers == (1 if objective == "distill" else 2)
    for a, b in zip(encoder.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert (model_dir / "final" / "task.json").exists() == (objective != "electra")
    # TensorBoard: the rerun's event file starts after the checkpoint step and holds every loss
    # term and the objective's own metrics.
    import tensorflow as tf

    newest = max(glob.glob(str(model_dir / "train" / "events.out.tfevents.*")),
                 key=os.path.getmtime)
    events = [event for event in tf.compat.v1.train.summary_iterator(newest)
              if event.summary.value]
    assert sorted({event.step for event in events}) == [4, 5, 6]
    tags = {value.tag for event in events for value in event.summary.value}
    assert OBJECTIVE_SCALARS[objective] | {"loss", "learning_rate"} <= tags, sorted(tags)


def test_a_truncated_tfrecord_file_is_named(tmp_path):
    corpus = tmp_path / "corpus.txt"
    with gzip.open(REPO / "bert_keras" / "assets" / "web_bible_corpus.txt.gz", "rt") as f:
        corpus.write_text("".join(line for _, line in zip(range(3000), f)))
    data = tmp_path / "data.tfrecord"
    made = tool_runner.run_tool("create_pretraining_data", f"--input_file={corpus}",
                                f"--output_file={data}", "--dupe_factor=2",
                                "--max_seq_length=32", "--max_predictions_per_seq=5")
    assert made.returncode == 0, made.stderr[-2000:]
    data.write_bytes(data.read_bytes()[: data.stat().st_size * 2 // 3])
    proc = _run(TINY, "--train_text=", f"--train_data={data}", "--train_steps=400",
                "--checkpoint_every=100", f"--model_dir={tmp_path / 'run'}")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"{data}: truncated record" in proc.stderr and "truncated or corrupt" in proc.stderr


def test_a_teacher_without_a_masked_lm_head_is_one_line(runs, tmp_path):
    encoder_dir = runs("mlm")[1] / "encoder"  # a run's encoder/, not the run: no heads
    proc = _run(TINY, f"--model_dir={tmp_path / 'run'}", "--objective=distill",
                "--pair_mode=none", f"--teacher_checkpoint={encoder_dir}")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"--teacher_checkpoint={str(encoder_dir)!r} has no masked-LM head" in proc.stderr


OBJECTIVE_SCALARS = {
    "mlm": {"masked_lm_accuracy", "next_sentence_accuracy"},
    "electra": {"generator_loss", "discriminator_loss", "generator_accuracy",
                "discriminator_accuracy", "all_original_accuracy", "base_rate_loss",
                "replaced_precision", "replaced_recall",
                # the default's masked LM on the discriminator
                "discriminator_mlm_loss", "discriminator_mlm_accuracy"},
    "distill": {"distillation_loss", "masked_lm_loss", "cosine_loss", "masked_lm_accuracy",
                "agreement"},
}


def _text_with_a_few_invalid_lines(path):
    """The bundled corpus' first 300 lines with 2 that are not UTF-8 (0.7%: under the 1% that
    runs with one warning, bert_keras.text_files)."""
    with gzip.open(REPO / "bert_keras" / "assets" / "web_bible_corpus.txt.gz", "rb") as f:
        lines = [next(f) for _ in range(300)]
    lines[5], lines[250] = b"caf\xe9 \xff\xfe\n", b"x\x00y\n"
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.slow
def test_kill_9_mid_training_then_the_same_command_resumes(tmp_path):
    """A real kill -9 at whatever point the run has reached a second after its first
    checkpoint, of the masked LM (each objective's resume from a checkpoint:
    test_each_objective_resumes_from_its_checkpoint_to_the_figures_of_a_run_not_stopped).
    Its text has a few lines that are not UTF-8: the run trains on the rest, with one warning
    giving the count (the refusals of bad text: tests/text/test_bad_text.py)."""
    model_dir = tmp_path / "run"
    text = _text_with_a_few_invalid_lines(tmp_path / "few_invalid.txt")
    args = TOOL + [TINY, f"--model_dir={model_dir}", f"--train_text={text}", "--train_steps=60",
                   "--checkpoint_every=5", "--log_every=5", "--warmup_steps=5"]
    proc = tool_runner.start(args, cwd=REPO, env=ENV)
    index = model_dir / "checkpoints" / "checkpoint"
    deadline = time.time() + 300
    while not index.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert index.exists(), "no checkpoint was written"
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    # The last complete checkpoint: the one the state file names (a kill between a checkpoint's
    # files and the state file leaves a newer, unfinished one, which a resume must skip).
    state = (model_dir / "checkpoints" / "checkpoint").read_text()
    killed_at = int(re.search(r'model_checkpoint_path: "(?:.*/)?ckpt-(\d+)"', state).group(1))
    assert 5 <= killed_at < 60

    rerun = tool_runner.run(args, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    warnings = [line for line in rerun.stderr.splitlines() if "not valid UTF-8" in line]
    assert len(warnings) == 1 and f"{text}:" in warnings[0], warnings
    assert "2 of 300 lines" in warnings[0], warnings
    resumed = [line for line in rerun.stdout.splitlines() if line.startswith("Resuming from")]
    assert resumed and "at step " in resumed[0], rerun.stdout[-2000:]
    start = int(resumed[0].split("at step ")[1].split()[0])
    assert start >= killed_at  # not retrained from zero
    assert f"Finished at step 60 (started at {start})" in rerun.stdout
    from bert_keras.models.encoder import BertEncoder

    assert BertEncoder.from_pretrained(str(model_dir / "encoder")).num_layers == 2
    assert (model_dir / "final" / "task.json").exists()
    first_progress = next(line for line in rerun.stdout.splitlines() if line.startswith("step "))
    assert int(first_progress.split()[1].split("/")[0]) > start  # progress continues from there
    # TensorBoard: the rerun's event file starts after the checkpoint step.
    import tensorflow as tf

    files = sorted(glob.glob(str(model_dir / "train" / "events.out.tfevents.*")),
                   key=os.path.getmtime)
    steps = [e.step for e in tf.compat.v1.train.summary_iterator(files[-1]) if e.summary.value]
    assert min(steps) > start and max(steps) == 60
    # Every loss term and the masked LM's own metrics are TensorBoard scalars.
    tags = {value.tag for path in files for event in tf.compat.v1.train.summary_iterator(path)
            for value in event.summary.value}
    assert OBJECTIVE_SCALARS["mlm"] | {"loss", "learning_rate"} <= tags, sorted(tags)


def _logged(model_dir, tag):
    """{step: value} of the scalar `tag` in the TensorBoard files of model_dir/train."""
    import tensorflow as tf

    return {event.step: float(tf.make_ndarray(value.tensor))
            for path in glob.glob(str(model_dir / "train" / "events.out.tfevents.*"))
            for event in tf.compat.v1.train.summary_iterator(path)
            for value in event.summary.value if value.tag == tag}


@pytest.mark.slow
def test_nan_loss_from_a_huge_learning_rate_stops_with_the_step_and_keeps_checkpoints(
        runs, tmp_path):
    """A loss that becomes NaN stops the run with its step and keeps the last good checkpoint.
    --seed seeds the weights and dropout too, not just the data (CPU, float32): the first step
    of this run (the default seed, 0), computed before any update (whatever the learning
    rate), has another loss than that of the masked LM's run of --seed=3 (a fresh run of the
    same seed has the same losses: the killed run of
    test_a_kill_inside_a_checkpoint_write_at_a_url_leaves_shards_that_the_resume_removes)."""
    model_dir = tmp_path / "run"
    proc = _run(TINY, f"--model_dir={model_dir}", "--learning_rate=1e12", "--warmup_steps=0",
                "--checkpoint_every=1", "--train_steps=20", "--log_every=1")
    assert proc.returncode == 1, proc.stdout[-2000:]
    message = [line for line in proc.stderr.splitlines() if line.startswith("pretrain: ")]
    assert message and re.search(r"the loss became -?(nan|inf) at step \d+", message[0]), \
        proc.stderr[-2000:]
    step = int(message[0].split(" at step ")[1].split(";")[0])
    kept = sorted(int(p.name[5:-6]) for p in (model_dir / "checkpoints").glob("ckpt-*.index"))
    assert kept and max(kept) == step - 1  # the last good step; nothing written after
    assert f"checkpoint {model_dir / 'checkpoints' / f'ckpt-{step - 1}'} is kept" in message[0]
    assert not (model_dir / "encoder").exists()
    first = _logged(model_dir, "loss")[1]
    assert np.isfinite(first) and first != pytest.approx(_losses(runs("mlm")[1])[0], rel=1e-6)


@pytest.mark.slow
def test_a_kill_inside_a_checkpoint_write_at_a_url_leaves_shards_that_the_resume_removes(
        runs, tmp_path, killed_in_checkpoint_write):
    """TensorFlow writes a checkpoint's shards to ckpt-N_temp/ and then merges them: a kill in
    between leaves that directory. The run that resumes there removes it (and nothing else)
    and ends with the losses of the masked LM's run that was not stopped, whose command it
    is; the killed run, a fresh one of the same seed, had that run's losses too. The model dir
    is a URL (`file://`, which tf.io.gfile treats as an object store such as gs://: no local
    folder made for it, no atomic rename): every output is written there, and a rerun with
    more steps goes on from the last checkpoint."""
    _, straight, flags = runs("mlm")  # checkpoints at steps 3 and 6, a history entry a step
    model_dir = tmp_path / "run"
    url = f"file://{model_dir}"
    flags = [f"--model_dir={url}" if flag.startswith("--model_dir=") else flag
             for flag in flags]
    checkpoints = model_dir / "checkpoints"
    killed = killed_in_checkpoint_write(TOOL + flags, 2, cwd=REPO, env=ENV, capture_output=True,
                                        timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert (checkpoints / "ckpt-6_temp").is_dir() and (checkpoints / "ckpt-3.index").exists()
    assert not (checkpoints / "ckpt-6.index").exists()
    (checkpoints / "notes-1_temp").mkdir()  # not the writer's: kept
    (checkpoints / "notes-1_temp" / "mine.txt").write_text("keep")
    assert len(glob.glob(str(model_dir / "train" / "events.out.tfevents.*"))) == 1
    logged = _logged(model_dir, "loss")
    assert [logged[step] for step in range(1, 7)] == pytest.approx(_losses(straight), rel=1e-6)

    rerun = _run(*flags)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "Resuming from checkpoint" in rerun.stdout and "at step 3 of 6" in rerun.stdout
    assert "Finished at step 6 (started at 3)" in rerun.stdout
    assert f"unfinished checkpoint(s) of a killed run: {url}/checkpoints/ckpt-6_temp" in \
        rerun.stderr
    assert sorted(p.name for p in checkpoints.iterdir()
                  if p.name.endswith("_temp")) == ["notes-1_temp"]
    assert sorted(p.name for p in checkpoints.glob("ckpt-*.index")) == [
        "ckpt-3.index", "ckpt-6.index"]
    _check_the_same_figures_from_step_4(model_dir, straight)
    assert {"checkpoints", "encoder", "final", "history.json", "run_config.json", "train"} <= set(
        os.listdir(model_dir))
    assert json.loads((model_dir / "run_config.json").read_text())["model_dir"] == url
    from bert_keras.models.encoder import BertEncoder

    assert BertEncoder.from_pretrained(f"{url}/encoder").num_layers == 2

    longer = _run(*flags, "--train_steps=9")
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert "Resuming from checkpoint" in longer.stdout and "at step 6 of 9" in longer.stdout, (
        longer.stdout[-2000:])
    assert "Finished at step 9 (started at 6)" in longer.stdout
    assert (checkpoints / "ckpt-9.index").exists()
    # The history of the run before (steps 4-6) kept, read back from the URL.
    assert [step for step, _ in json.loads((model_dir / "history.json").read_text())] == [
        4, 5, 6, 7, 8, 9]
    # Nothing taken for a local path ("file:" folders) or left beside the URL's directory.
    assert not [name for name in os.listdir(REPO) if name.endswith(":")]
    assert os.listdir(tmp_path) == ["run"]
