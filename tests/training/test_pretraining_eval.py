"""Held-out evaluation during pretraining: --eval_data / --eval_text every --eval_every steps
(`training.pretraining_eval`), in the result, TensorBoard's eval/ and eval_metrics.json."""

import glob
import gzip
import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from bert_keras.configs import ConfigError
from bert_keras.errors import InputError
from bert_keras.training import pretraining, pretraining_eval, pretraining_models
from bert_keras.training.pretraining_config import PretrainConfig

import tool_runner  # tests/support: tools forked without their imports

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = REPO / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
TINY = dict(train_text=str(CORPUS), preset="bert_tiny", num_layers=1, hidden_size=32,
            num_heads=2, intermediate_size=64, max_seq_length=32,
            max_predictions_per_seq=5, documents_per_chunk=100, global_batch_size=8,
            learning_rate=1e-3, warmup_steps=1, log_every=3, keep_checkpoints=2)


def _eval_scalars(model_dir):
    """{tag: {step: value}} of TensorBoard's eval/ run."""
    scalars = {}
    for path in sorted(glob.glob(str(pathlib.Path(model_dir) / "eval" / "events.out.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                number = float(tf.make_ndarray(value.tensor))
                scalars.setdefault(value.tag, {})[event.step] = number
    return scalars


def _read_eval_metrics(model_dir):
    with open(pathlib.Path(model_dir) / "eval_metrics.json") as f:
        return json.load(f)


def test_eval_text_every_n_steps_is_in_the_result_tensorboard_and_file_across_a_resume(
        tmp_path, capsys):
    from bert_keras.data.pretraining import pipeline
    from bert_keras.tasks import registry

    args = dict(TINY, model_dir=str(tmp_path), eval_text=str(CORPUS), eval_every=3,
                eval_steps=2, checkpoint_every=3, dtype="float32", progress=False)
    result = pretraining.run_pretraining(train_steps=6, **args)
    assert [step for step, _ in result["evaluations"]] == [3, 6]
    first = result["evaluations"][0][1]
    for name in ("loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy"):
        assert np.isfinite(first[name]), name
    out = capsys.readouterr().out
    assert "step 3: eval (16 held-out examples) loss " in out and "step 6: eval" in out
    saved = _read_eval_metrics(tmp_path)
    assert [step for step, _ in saved] == [3, 6]
    assert saved[1][1] == pytest.approx(result["evaluations"][1][1])

    # A longer rerun resumes at step 6: the earlier evaluations stay in the result and the file,
    # from the checkpoint (not from the file, which a crash could have left behind).
    (tmp_path / "eval_metrics.json").unlink()
    result = pretraining.run_pretraining(train_steps=9, **args)
    assert result["initial_step"] == 6
    assert [step for step, _ in result["evaluations"]] == [3, 6, 9]
    saved = _read_eval_metrics(tmp_path)
    assert [step for step, _ in saved] == [3, 6, 9]
    assert saved[0][1] == pytest.approx(first)
    scalars = _eval_scalars(tmp_path)
    assert sorted(scalars["masked_lm_accuracy"]) == [3, 6, 9]
    assert scalars["loss"][9] == pytest.approx(saved[2][1]["loss"], rel=1e-6)

    # The figures of the last step are those of the saved masked LM on the first 2 batches
    # of the held-out text, made here by the pipeline itself (one pass, the run's seed).
    # (Kept in memory: each pass over the pipeline draws other pairs and masks, and a fresh
    # model's first evaluate takes a pass of its own to build its metrics.)
    model, tokenizer, _ = registry.load_task(str(tmp_path / "final"))
    model.compile()
    batches = list(pipeline.dynamic_pretraining_dataset(
        str(CORPUS), tokenizer, 8, max_seq_length=32, max_predictions_per_seq=5, seed=0,
        documents_per_chunk=100, repeat=False).take(2).as_numpy_iterator())
    stacked = tf.nest.map_structure(lambda *parts: np.stack(parts), *batches)
    expected = model.evaluate(tf.data.Dataset.from_tensor_slices(stacked), return_dict=True,
                              verbose=0)
    last = saved[-1][1]
    assert set(expected) == set(last)
    for name, value in expected.items():
        assert last[name] == pytest.approx(float(value), rel=1e-4), name


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Pretraining TFRecords (32 tokens, next-sentence pairs) of the corpus' first 500 lines:
    hundreds of examples."""
    from bert_keras.data.pretraining import pipeline

    path = tmp_path_factory.mktemp("records") / "eval.tfrecord"
    text = path.with_suffix(".txt")
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        text.write_text("".join(line for _, line in zip(range(500), f)), encoding="utf-8")
    pipeline.create_pretraining_tfrecords(
        str(path), input_files=str(text), max_seq_length=32, max_predictions_per_seq=5,
        dupe_factor=1, documents_per_chunk=20)
    return str(path)


ELECTRA = dict(TINY, objective="electra")


@pytest.fixture(scope="module")
def electra_run(tmp_path_factory, records):
    """The result of an ELECTRA run of 2 steps evaluated after each on the first 3 batches of
    `records` (--eval_data): the run of both tests of --eval_data and of ELECTRA's metrics."""
    return pretraining.run_pretraining(
        model_dir=str(tmp_path_factory.mktemp("electra") / "run"), eval_data=records,
        eval_every=1, eval_steps=3, train_steps=2, checkpoint_every=2, progress=False, **ELECTRA)


def test_eval_data_tfrecords_are_the_same_first_batches_every_time(electra_run, records, tmp_path):
    # A run evaluates its --eval_data every --eval_every steps (ELECTRA's run: its metrics).
    assert [step for step, _ in electra_run["evaluations"]] == [1, 2]
    for _, values in electra_run["evaluations"]:
        assert {"discriminator_accuracy", "loss"} <= set(values)
    # The eval set: the files' first examples in order, whole batches only, all of them when
    # there are fewer than --eval_steps.
    config = PretrainConfig.from_options(model_dir=str(tmp_path / "x"), eval_data=records,
                                         eval_steps=100000, **TINY)
    batches = pretraining_eval.eval_batches(config, None)
    examples = sum(1 for _ in tf.data.TFRecordDataset(records))
    assert len(batches) == examples // 8
    first = next(iter(tf.data.TFRecordDataset(records)))
    ids = tf.train.Example.FromString(first.numpy()).features.feature["input_ids"].int64_list
    np.testing.assert_array_equal(batches[0][0]["input_word_ids"][0], list(ids.value))
    # The masked LM's model takes them with their next-sentence labels: BERT's metrics.
    config = PretrainConfig.from_options(model_dir=str(tmp_path / "x"), eval_data=records,
                                         eval_every=1, eval_steps=3, **TINY)
    model = pretraining_models.build_model(config, pretraining._tokenizer(config))
    values = pretraining_eval.evaluation(config, None).evaluate(model)
    assert {"masked_lm_accuracy", "next_sentence_accuracy", "loss"} <= set(values)
    assert all(np.isfinite(value) for value in values.values()), values


def test_electra_evaluation_has_the_detection_metrics_and_leaves_the_sampling_alone(
        electra_run, tmp_path):
    for _, values in electra_run["evaluations"]:
        for name in ("discriminator_accuracy", "replaced_precision", "replaced_recall",
                     "generator_accuracy", "discriminator_loss", "generator_loss"):
            assert name in values and np.isfinite(values[name]), name
        assert "masked_lm_accuracy" not in values  # ELECTRA's metrics, not BERT's
    # An evaluation draws ELECTRA's replacements from a fixed state and puts the sampling's
    # state back: two evaluations agree, and training goes on as without them. (Held-out
    # text here, --eval_data in the run.)
    config = PretrainConfig.from_options(model_dir=str(tmp_path / "x"), eval_text=str(CORPUS),
                                         eval_steps=1, **ELECTRA)
    tokenizer = pretraining._tokenizer(config)
    evaluation = pretraining_eval.evaluation(config, tokenizer)
    model = pretraining_models.build_model(config, tokenizer)
    states = lambda: [v.numpy().tolist() for v in pretraining_eval._random_states(model)]  # noqa: E731
    assert states()
    before = states()
    a, b = evaluation.evaluate(model), evaluation.evaluate(model)
    assert a == b and states() == before


def test_bad_eval_inputs_are_one_line_errors(tmp_path, records):
    base = dict(TINY, model_dir=str(tmp_path / "run"))
    with pytest.raises(ConfigError, match=r"No file matches '/nonexistent/eval\*' \(from "
                       r"--eval_text="):
        PretrainConfig.from_options(eval_text="/nonexistent/eval*", **base)
    with pytest.raises(ConfigError, match="No file matches .* --eval_data="):
        PretrainConfig.from_options(eval_data=str(tmp_path / "missing.tfrecord"), **base)
    with pytest.raises(ConfigError, match="Give one of --eval_data=.* and --eval_text="):
        PretrainConfig.from_options(eval_data=str(CORPUS), eval_text=str(CORPUS), **base)
    with pytest.raises(ConfigError, match="--eval_steps must be >= 1, got 0"):
        PretrainConfig.from_options(eval_text=str(CORPUS), eval_steps=0, **base)
    # Too little held-out text for one batch, or TFRecords of another length: refused before
    # the run starts, naming the option.
    short = tmp_path / "short.txt"
    short.write_text("In the beginning.\nThe end.\n\nAnother one.\nShort.\n")
    with pytest.raises(InputError, match=r"--eval_text='.*short.txt' gives no batch of 8 "):
        pretraining.run_pretraining(eval_text=str(short), progress=False, **base)
    with pytest.raises(InputError, match=r"--eval_data='.*eval.tfrecord': .*input_ids"):
        pretraining.run_pretraining(eval_data=records, progress=False,
                                    **dict(base, max_seq_length=64))
    assert not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.parametrize("args, message", [
    (["--eval_text=/nonexistent/eval.txt"], "No file matches '/nonexistent/eval.txt' (from "
     "--eval_text="),
    ([f"--eval_data={CORPUS}", f"--eval_text={CORPUS}"], "Give one of --eval_data="),
    (["--eval_text=EMPTY"], "--eval_text="),
])
def test_the_tool_refuses_bad_eval_flags_in_one_line(tmp_path, args, message):
    empty = tmp_path / "empty.txt.gz"
    with gzip.open(empty, "wt") as f:
        f.write("\n")
    args = [arg.replace("EMPTY", str(empty)) for arg in args]
    model_dir = tmp_path / "run"
    proc = tool_runner.run_tool("pretrain", f"--flagfile={REPO / 'flags' / 'pretrain_tiny.flags'}",
                                f"--model_dir={model_dir}", *args)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert message in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not model_dir.exists()
