"""Tests for bert_keras.training / strategy / callbacks: resume, NaN stop, TensorBoard, strategies.

Toy regression models run in-process (seconds); strategies that need logical devices or several
workers run in subprocesses (TF configures devices once per process).
"""

import glob
import gzip
import json
import os
import pathlib
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf
from ports import free_ports  # tests/support

from bert_keras import optimization
from bert_keras.training import loop as training
from bert_keras.training import pretraining
from bert_keras.training import strategy as strategy_lib

import tool_runner  # tests/support: scripts forked without their imports

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = REPO / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
# bert_tiny cut to one narrow layer, for the runs whose figures do not depend on its size: a
# smaller train step to trace.
ONE_LAYER = dict(num_layers=1, hidden_size=32, num_heads=2, intermediate_size=64)


def _toy_data(inf_at=None):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = np.sin(x).sum(axis=1, keepdims=True).astype("float32")
    if inf_at is not None:
        x[inf_at] = np.inf
    return x, y


def _toy_model_fn(optimizer_fn=lambda: keras.optimizers.Adam(1e-2)):
    def model_fn():
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(1)])
        model.compile(optimizer=optimizer_fn(), loss="mse", metrics=["mae"])
        return model
    return model_fn


def _toy_dataset_fn(inf_at=None, seen=None):
    x, y = _toy_data(inf_at)

    def dataset_fn(batch_size, input_context):
        if seen is not None:
            seen.append(batch_size)
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size)
    return dataset_fn


def _weights(model):
    return [np.array(w) for w in model.get_weights()]


def _scalars(model_dir):
    """{tag: {step: value}} from the TensorBoard event files of model_dir/train."""
    out = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "train", "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                out.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    return out


def test_resume_continues_exactly_where_it_stopped(tmp_path):
    # One run of 6 steps == a run stopped at 2, resumed to 4, resumed to 6: same weights, so
    # the optimizer state and the data position (batches 3..6, not 1..) were restored.
    common = dict(global_batch_size=4, checkpoint_every=2, log_every=2, progress=False)
    straight = training.train(_toy_model_fn(), _toy_dataset_fn(), model_dir=str(tmp_path / "a"),
                              train_steps=6, **common)
    for steps in (2, 4, 6):
        resumed = training.train(_toy_model_fn(), _toy_dataset_fn(),
                                 model_dir=str(tmp_path / "b"), train_steps=steps, **common)
        assert resumed.initial_step == steps - 2 and resumed.step == steps
    for a, b in zip(_weights(straight.model), _weights(resumed.model)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert int(resumed.model.optimizer.iterations.numpy()) == 6
    # A resume without the data skip trains on batches 1, 2, 1, 2, 3, 4: other weights, so the
    # comparison above sees the skip.
    x, y = _toy_data()

    def unskipped_fn(batch_size, input_context):
        examples = tf.data.Dataset.from_tensor_slices((x, y))
        return examples.take(2 * batch_size).concatenate(examples.repeat()).batch(batch_size)
    unskipped = training.train(_toy_model_fn(), unskipped_fn, model_dir=str(tmp_path / "c"),
                               train_steps=6, **common)
    assert not np.allclose(_weights(unskipped.model)[0], _weights(resumed.model)[0],
                           rtol=1e-5, atol=1e-6)


def test_checkpoints_keep_last_k_and_tensorboard_continues_after_resume(tmp_path):
    model_dir = str(tmp_path)
    common = dict(global_batch_size=4, checkpoint_every=2, keep_checkpoints=2, log_every=2,
                  progress=False, config={"flag": 1})
    training.train(_toy_model_fn(), _toy_dataset_fn(), model_dir=model_dir, train_steps=4, **common)
    result = training.train(_toy_model_fn(), _toy_dataset_fn(), model_dir=model_dir,
                            train_steps=8, **common)
    assert result.initial_step == 4 and [s for s, _ in result.history] == [6, 8]
    index = sorted(glob.glob(os.path.join(model_dir, "checkpoints", "ckpt-*.index")))
    assert [os.path.basename(p) for p in index] == ["ckpt-6.index", "ckpt-8.index"]
    assert training.checkpoint_step(training.latest_checkpoint(model_dir)) == 8
    scalars = _scalars(model_dir)
    assert set(scalars["loss"]) == {2, 4, 6, 8}  # the resumed run continues the step axis
    assert {"mae", "learning_rate", "examples_per_second"} <= set(scalars)
    assert scalars["learning_rate"][8] == pytest.approx(1e-2)
    assert scalars["loss"][8] < scalars["loss"][2]
    with open(os.path.join(model_dir, "run_config.json")) as f:
        assert json.load(f) == {"flag": 1}


def test_nan_loss_stops_naming_the_step_and_keeps_the_last_good_checkpoint(tmp_path):
    # Example 16 is inf: it is in batch 5 (batch size 4), used by step 5.
    with pytest.raises(training.TrainingDivergedError, match="at step 5;.*ckpt-4 is kept") as info:
        training.train(_toy_model_fn(), _toy_dataset_fn(inf_at=16), model_dir=str(tmp_path),
                       train_steps=8, global_batch_size=4, checkpoint_every=2, progress=False)
    assert info.value.step == 5
    latest = training.latest_checkpoint(str(tmp_path))
    assert latest.endswith("ckpt-4") and training.checkpoint_step(latest) == 4
    names = [name for name, _ in tf.train.list_variables(latest)
             if "VARIABLE_VALUE" in name and name != "state/.ATTRIBUTES/VARIABLE_VALUE"]
    assert any("trainable_variables" in name for name in names)  # the weights are in it
    assert all(np.all(np.isfinite(tf.train.load_variable(latest, name))) for name in names)


def test_data_that_runs_out_before_train_steps_is_an_error_not_an_early_finish(tmp_path):
    x, y = _toy_data()

    def finite(batch_size, input_context):  # 2 steps of 4 examples, no repeat
        return tf.data.Dataset.from_tensor_slices((x[:8], y[:8])).batch(batch_size)

    with pytest.raises(RuntimeError, match=r"ended at step \d+ of 20: the data ran out"):
        training.train(_toy_model_fn(), finite, model_dir=str(tmp_path), train_steps=20,
                       global_batch_size=4, checkpoint_every=4, progress=False)


def test_gradient_accumulation_splits_the_global_batch_and_counts_updates(tmp_path):
    seen = []
    result = training.train(
        _toy_model_fn(lambda: optimization.AdamW(1e-2, gradient_accumulation_steps=2)),
        _toy_dataset_fn(seen=seen), model_dir=str(tmp_path), train_steps=3, global_batch_size=8,
        gradient_accumulation_steps=2, checkpoint_every=2, progress=False)
    assert seen == [4]  # micro-batch = 8 / 2 accumulation steps / 1 replica
    assert int(result.model.optimizer.iterations.numpy()) == 3  # updates
    assert int(result.model.optimizer.micro_steps.numpy()) == 6  # batches
    with pytest.raises(ValueError, match="accumulates 1 steps"):
        training.train(_toy_model_fn(), _toy_dataset_fn(), model_dir=str(tmp_path / "x"),
                       train_steps=2, global_batch_size=8, gradient_accumulation_steps=2)


def test_mixed_float16_adds_loss_scaling_and_jit_compile_is_applied(tmp_path):
    result = training.train(_toy_model_fn(), _toy_dataset_fn(), model_dir=str(tmp_path / "a"),
                            train_steps=4, global_batch_size=4, checkpoint_every=2, log_every=2,
                            dtype="mixed_float16", progress=False)
    assert isinstance(result.model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert result.model.layers[0].compute_dtype == "float16"
    assert result.model.layers[0].kernel.dtype == "float32"
    assert all(np.isfinite(v["loss"]) for _, v in result.history)
    assert keras.config.dtype_policy().name == "float32"
    result = training.train(_toy_model_fn(), _toy_dataset_fn(), model_dir=str(tmp_path / "b"),
                            train_steps=2, global_batch_size=4, checkpoint_every=2,
                            jit_compile=True, progress=False)
    assert result.model.jit_compile is True and np.isfinite(result.history[-1][1]["loss"])
    with pytest.raises(ValueError, match="Unknown dtype 'float16'"):
        training.train(_toy_model_fn(), _toy_dataset_fn(), model_dir=str(tmp_path / "c"),
                       train_steps=2, global_batch_size=4, dtype="float16")


def test_strategy_helpers_name_bad_values():
    one = strategy_lib.create_strategy("one_device")
    assert strategy_lib.per_replica_batch_size(32, one, 4) == 8
    with pytest.raises(ValueError, match="global_batch_size=30 is not divisible by .* = 4"):
        strategy_lib.per_replica_batch_size(30, one, 4)
    with pytest.raises(ValueError, match="needs a TPU address"):
        strategy_lib.create_strategy("tpu")
    with pytest.raises(ValueError, match="Unknown distribution strategy 'gpus'"):
        strategy_lib.create_strategy("gpus")
    assert strategy_lib.is_chief(one)


def test_run_pretraining_mixed_bfloat16_learns_and_saves_the_encoder(tmp_path):
    from bert_keras.models.encoder import BertEncoder

    result = pretraining.run_pretraining(
        model_dir=str(tmp_path), train_text=str(CORPUS), preset="bert_tiny", max_seq_length=32,
        max_predictions_per_seq=5, train_steps=12, global_batch_size=16, learning_rate=2e-3,
        warmup_steps=2, checkpoint_every=6, log_every=4, dtype="mixed_bfloat16",
        documents_per_chunk=100, progress=False)
    losses = [values["masked_lm_loss"] for _, values in result["history"]]
    assert len(losses) == 3 and all(np.isfinite(losses))
    assert losses[-1] < losses[0] - 0.3, losses
    assert keras.config.dtype_policy().name == "float32"  # the global policy is restored
    encoder = BertEncoder.from_pretrained(result["encoder_dir"])
    assert encoder.num_layers == 2 and encoder.vocab_size > 1000
    with open(tmp_path / "run_config.json") as f:
        assert json.load(f)["dtype"] == "mixed_bfloat16"


# --- strategies in subprocesses -----------------------------------------------------------

# Run by tool_runner.TWO_CPU_DEVICES: two logical CPU devices, forked from the tool server.
_STRATEGY_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {repo!r})
    from bert_keras.data.pretraining import pipeline as pretraining_data
    from bert_keras.training import pretraining
    data = {data!r}
    pretraining_data.create_pretraining_tfrecords(
        data, input_files={corpus!r}, max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1,
        documents_per_chunk=20)
    out = {{}}
    for name in ("one_device", "mirrored"):
        result = pretraining.run_pretraining(
            model_dir={model_dir!r} + name, train_data=data, preset="bert_tiny",
            **{one_layer!r}, dropout=0.0, max_seq_length=32,
            max_predictions_per_seq=5, train_steps=4, global_batch_size=8, warmup_steps=1,
            learning_rate=1e-3, checkpoint_every=4, log_every=1, distribution_strategy=name, seed=1,
            progress=False)
        out[name] = [values["loss"] for _, values in result["history"]]
    print("LOSSES " + json.dumps(out))
""")


@pytest.mark.slow
def test_mirrored_on_two_cpu_devices_matches_one_device(tmp_path):
    corpus = tmp_path / "corpus.txt"  # the first 3,000 lines: TFRecords of seconds
    with gzip.open(CORPUS, "rb") as f:
        corpus.write_bytes(b"".join(next(f) for _ in range(3000)))
    script = tmp_path / "strategies.py"
    script.write_text(_STRATEGY_SCRIPT.format(repo=str(REPO), corpus=str(corpus),
                                              one_layer=ONE_LAYER,
                                              data=str(tmp_path / "data.tfrecord"),
                                              model_dir=str(tmp_path / "run_")))
    proc = tool_runner.run([sys.executable, tool_runner.TWO_CPU_DEVICES, script],
                           capture_output=True, text=True, timeout=600, cwd=REPO,
                           env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("LOSSES ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    losses = json.loads(lines[0][len("LOSSES "):])
    assert len(losses["one_device"]) == 4
    # Same examples per step; the replicas' masked-LM losses are normalized per replica.
    np.testing.assert_allclose(losses["mirrored"], losses["one_device"], rtol=2e-2)


_WORKER_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {repo!r})
    from bert_keras.training import pretraining, strategy
    st = strategy.create_strategy("multi_worker_mirrored")
    result = pretraining.run_pretraining(
        model_dir={model_dir!r}, train_text={corpus!r}, preset="bert_tiny", **{one_layer!r},
        max_seq_length=32,
        max_predictions_per_seq=5, train_steps=4, global_batch_size=8, warmup_steps=1,
        checkpoint_every=2, log_every=2, documents_per_chunk=100, strategy=st, progress=False)
    print("RESULT " + json.dumps(dict(replicas=st.num_replicas_in_sync, chief=strategy.is_chief(st),
                                      losses=[v["loss"] for _, v in result["history"]])))
""")


@pytest.mark.slow
def test_multi_worker_mirrored_two_local_workers_write_one_checkpoint(tmp_path):
    model_dir = tmp_path / "run"
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    script = tmp_path / "worker.py"
    script.write_text(_WORKER_SCRIPT.format(repo=str(REPO), corpus=str(CORPUS),
                                            one_layer=ONE_LAYER, model_dir=str(model_dir)))
    outputs = [(tmp_path / f"worker{index}.out", tmp_path / f"worker{index}.err")
               for index in range(2)]
    envs = [dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TMPDIR=str(tmp_path), TF_CONFIG=json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": index}})) for index in range(2)]
    returncodes = tool_runner.run_two_workers([sys.executable, script], REPO, envs, outputs)
    results = []
    for returncode, (stdout, stderr) in zip(returncodes, outputs):
        lines = [line for line in stdout.read_text().splitlines() if line.startswith("RESULT ")]
        assert returncode == 0 and lines, stderr.read_text()[-3000:]
        results.append(json.loads(lines[0][len("RESULT "):]))
    assert [r["chief"] for r in results] == [True, False]
    assert all(r["replicas"] == 2 for r in results)
    # The same global losses on both workers (metrics are reduced over the cluster).
    assert results[0]["losses"] == results[1]["losses"] and len(results[0]["losses"]) == 2
    index = sorted(p.name for p in (model_dir / "checkpoints").glob("ckpt-*.index"))
    assert index == ["ckpt-2.index", "ckpt-4.index"]
    assert training.checkpoint_step(training.latest_checkpoint(str(model_dir))) == 4
    assert (model_dir / "encoder" / "model.safetensors").exists()
    # The non-chief wrote its copy to a temporary directory and removed it.
    assert not list(tmp_path.glob("bert_keras_worker_*"))


@pytest.mark.slow
def test_run_pretraining_two_phases_switch_sequence_length_and_resume_in_phase_2(tmp_path, capsys):
    lengths = []
    from bert_keras.data.pretraining import pipeline as pretraining_data

    original = pretraining_data.dynamic_pretraining_dataset

    def recording(*args, **kwargs):
        lengths.append(kwargs["max_seq_length"])
        assert kwargs["documents_per_chunk"] == 100  # the option reaches the pipeline
        return original(*args, **kwargs)

    pretraining_data.dynamic_pretraining_dataset = recording
    try:
        args = dict(model_dir=str(tmp_path), train_text=str(CORPUS), preset="bert_tiny",
                    **ONE_LAYER, max_seq_length=16, max_predictions_per_seq=3, phase2_seq_length=32,
                    phase2_fraction=0.5, global_batch_size=4, warmup_steps=1, checkpoint_every=2,
                    log_every=2, documents_per_chunk=100, progress=False)
        result = pretraining.run_pretraining(train_steps=4, **args)
        assert lengths == [16, 32]
        assert result["initial_step"] == 0 and [s for s, _ in result["history"]] == [2, 4]
        assert "Phase 2: sequence length 32 from step 2." in capsys.readouterr().out
        # A longer rerun resumes in phase 2: phase 1 (to step 3) has nothing left, so only the
        # phase-2 pipeline is built again.
        result = pretraining.run_pretraining(train_steps=6, **args)
        assert result["initial_step"] == 4 and lengths == [16, 32, 32]
    finally:
        pretraining_data.dynamic_pretraining_dataset = original


def test_dynamic_pretraining_data_is_deterministic_so_resume_can_skip_batches():
    # Resume skips the consumed batches of a fresh pipeline: batch k must not depend on the run.
    from bert_keras.data.pretraining import pipeline as pretraining_data
    from bert_keras.text.tokenizer import BertTokenizer

    tokenizer = BertTokenizer(pretraining_data.default_vocab_file())

    def batches(skip):
        ds = pretraining_data.dynamic_pretraining_dataset(
            str(CORPUS), tokenizer, 8, max_seq_length=32, max_predictions_per_seq=5, seed=3)
        return list(ds.skip(skip).take(4 - skip).as_numpy_iterator())

    straight, resumed = batches(0), batches(2)
    for a, b in zip(straight[2:], resumed):
        for part in (0, 1):
            for key in a[part]:
                np.testing.assert_array_equal(a[part][key], b[part][key])
    assert not np.array_equal(straight[0][0]["input_word_ids"], straight[2][0]["input_word_ids"])
