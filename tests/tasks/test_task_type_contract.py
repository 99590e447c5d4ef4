"""The task-type contract: every task type of the registry (`registry.TASK_TYPES`) passes the
same checks, with no code of its own here (keras-hub's `TestCase.run_task_test` is the
model). What a type is fed comes from the type itself: `Task.raw_examples()` (its Keras model
class, constructor arguments, raw `fit` and `predict` inputs) and its export's warmup requests
(`serving.warmup.EXAMPLES` through `Task.warmup_texts`). A new task type gets every check
from its registry line; a fine-tunable one without raw examples fails.

  1. model: the constructor over an encoder (config round trip); `from_pretrained` of the
     tiny encoder directory, `fit` on raw inputs (two steps: a finite loss, weights moved),
     `predict` on raw inputs (conftest's task_type_model, shared).
  2. `.keras`: every type's file loaded in one fresh process, which first shows that without
     `import bert_keras` Keras cannot locate the class (Keras 3 imports the module of a saved
     class itself only for its own packages: keras, keras_hub, ...; docs/python_api.md), then
     imports it and predicts as before saving.
  3. transformers: where the type has a transformers head (`Task.transformers_head`),
     `bk.save_transformers` writes the model, our reader takes it back as the same task type
     (`bk.load_task`) and `from_pretrained` of it predicts the same.
  4. export: `bk.export_model` of that model (conftest's task_type_export), served in a process
     without this project (served_task_type_exports): every request answers what the model's
     serving functions compute in this process. (What each type's answers mean against its
     model: tests/serving/test_export_tasks.py.)
  5. tools/predict.py on the export: a line of each warmup row gets that row's served outputs
     (`Task.prediction_rows`).

Types without raw examples (the encoder, pretraining: no task model fit on raw text) run 4-5.
"""

import inspect
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.serving import export
from bert_keras.serving.warmup import EXAMPLES
from bert_keras.tasks.registry import TASKS, get_task

import tool_runner  # tests/support: tools forked without their imports
from export_harness import SEQ, _dec, _outputs


def plain(value):
    """A prediction as numpy and lists (a RaggedTensor as nested lists), to compare and pickle."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "to_list"):
        return value.to_list()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return np.asarray(value)


def assert_close(got, want, atol=1e-5, where="output"):
    """Equal structure, strings and ints equal, floats within atol."""
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for key in want:
            assert_close(got[key], want[key], atol, f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, atol, f"{where}[{i}]")
    else:
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape, (where, got.shape, want.shape)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, atol=atol, rtol=1e-5, err_msg=where)
        else:
            np.testing.assert_array_equal(got, want, err_msg=where)


def tied_rows(outputs, atol=1e-5):
    """[B] bool: the rows whose largest value of some float output is not unique (within
    atol): an index picked from them (an argmax) may differ with the float rounding."""
    tied = np.zeros(len(next(iter(outputs.values()))), bool)
    for value in outputs.values():
        value = np.asarray(value)
        if value.dtype.kind == "f" and value.ndim >= 2 and value.shape[-1] > 1:
            rows = value.reshape(len(value), -1)
            tied |= np.sum(rows >= rows.max(axis=1, keepdims=True) - atol, axis=1) > 1
    return tied


def assert_same_answers(got, want, where):
    """Served outputs ({name: [B, ...]}) as `want`: floats within 1e-5, strings equal, ints
    equal but on rows of tied scores (`tied_rows`)."""
    assert sorted(got) == sorted(want), where
    tied = tied_rows(want)
    for key in want:
        g, w = np.asarray(got[key]), np.asarray(want[key])
        assert g.shape == w.shape, (where, key, g.shape, w.shape)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, atol=1e-5, rtol=1e-5, err_msg=f"{where} {key}")
        elif w.dtype.kind in "iu":
            differ = (g != w).reshape(len(w), -1).any(axis=1)
            assert not (differ & ~tied).any(), (where, key, g, w)
        else:
            _assert_same_values(g.tolist(), w.tolist(), f"{where} {key}")


def _assert_same_values(got, want, where):
    """Nested lists and dicts (a row's entities, tags): floats (an entity's score) within
    1e-5, as float outputs are; everything else equal."""
    if isinstance(want, (float, np.floating)):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-5), (where, got, want)
    elif isinstance(want, dict):
        assert sorted(got) == sorted(want), (where, got, want)
        for key in want:
            _assert_same_values(got[key], want[key], f"{where} {key}")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (where, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same_values(g, w, f"{where}[{i}]")
    else:
        assert got == want, (where, got, want)


def trained_or_skip(name, task_type_model):
    trained = task_type_model(name)
    if trained is None:
        if get_task(name).finetunable:
            pytest.fail(f"task type {name!r} is fine-tuned but has no raw examples "
                        "(Task.raw_examples): the contract cannot make its model")
        pytest.skip(f"{name} has no task model fed raw text")
    return trained


# -- 1. the model ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", TASKS)
def test_from_pretrained_fits_and_predicts_raw_inputs(name, task_type_model,
                                                      assert_config_round_trip):
    model, examples, before, history = trained_or_skip(name, task_type_model)
    assert type(model) is examples.model_class and get_task(name).builds(model)
    assert model.preprocessor.seq_length == SEQ  # the directory's tokenizer, carried
    # The constructor over an encoder, and its config round trip.
    encoder = bk.BertEncoder.from_config(model.encoder.get_config())
    assert_config_round_trip(examples.model_class(encoder, **examples.arguments))
    # fit on raw inputs: two steps, a finite loss, weights moved.
    assert len(history["loss"]) == 2 and np.all(np.isfinite(history["loss"])), history
    assert any(not np.array_equal(b, w.numpy()) for b, w in zip(before, model.trainable_weights))
    # predict on raw inputs: finite numbers, the same again.
    predicted = plain(model.predict(examples.predict, verbose=0))
    for array in tf.nest.flatten(predicted):
        assert np.all(np.isfinite(np.asarray(array, float)))
    assert_close(plain(model.predict(examples.predict, verbose=0)), predicted, atol=1e-6)


# -- 2. the .keras file in a fresh process -----------------------------------------------------

LOAD_ALL = """
import pickle, sys
import numpy as np
import keras  # before bert_keras: its classes are not registered yet
jobs = pickle.load(open(sys.argv[1], "rb"))
try:
    keras.models.load_model(jobs[0][0])
    unregistered = None
except Exception as e:
    unregistered = str(e)
import bert_keras  # registers its classes
{plain}
results = {{}}
for path, x in jobs:
    model = keras.models.load_model(path)  # no custom_objects
    results[path] = (type(model).__name__, plain(model.predict(x, verbose=0)))
pickle.dump((unregistered, results), open(sys.argv[2], "wb"))
"""


@pytest.fixture(scope="module")
def keras_files_loaded(tmp_path_factory, task_type_model):
    """{name: (class name, predictions)} of every type's .keras file loaded in one fresh
    process (and what loading one said before bert_keras was imported), with the
    predictions the model made before saving."""
    base = tmp_path_factory.mktemp("keras_files")
    jobs, before = [], {}
    for name in TASKS:
        trained = task_type_model(name)
        if trained is None:
            continue
        model, examples = trained[:2]
        path = str(base / f"{name}.keras")
        model.save(path)
        jobs.append((path, examples.predict))
        before[name] = plain(model.predict(examples.predict, verbose=0))
    (base / "jobs.pkl").write_bytes(pickle.dumps(jobs))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    script = LOAD_ALL.format(plain=inspect.getsource(plain))
    proc = subprocess.run([sys.executable, "-c", script, str(base / "jobs.pkl"),
                           str(base / "out.pkl")],
                          capture_output=True, text=True, env=env, cwd=base, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    unregistered, results = pickle.loads((base / "out.pkl").read_bytes())
    loaded = {name: results[str(base / f"{name}.keras")] for name in before}
    return unregistered, loaded, before


@pytest.mark.parametrize("name", TASKS)
def test_keras_file_loads_in_a_fresh_process(name, task_type_model, keras_files_loaded):
    model = trained_or_skip(name, task_type_model)[0]
    unregistered, loaded, before = keras_files_loaded
    # Without `import bert_keras` Keras cannot know the class (what the docs warn about).
    assert unregistered and "Could not locate class" in unregistered, unregistered
    class_name, predicted = loaded[name]
    assert class_name == type(model).__name__
    assert_close(predicted, before[name])


# -- 3. the transformers writer ----------------------------------------------------------------

@pytest.mark.parametrize("name", TASKS)
def test_transformers_writer_round_trip(name, task_type_model, tmp_path):
    model, examples = trained_or_skip(name, task_type_model)[:2]
    if get_task(name).transformers_head is None:
        pytest.skip(f"{name} has no transformers head")
    bk.save_transformers(model, str(tmp_path))
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"][0].endswith(get_task(name).transformers_head)
    assert bk.load_task(str(tmp_path))[2]["task"] == name  # our reader: the same task type
    back = examples.model_class.from_pretrained(str(tmp_path), seq_length=SEQ,
                                                **examples.arguments)
    assert_close(plain(back.predict(examples.predict, verbose=0)),
                 plain(model.predict(examples.predict, verbose=0)))


# -- 4. the export, served without the project -------------------------------------------------

def serving_functions(name, task_type_export):
    model, tokenizer, info, _ = task_type_export(name)
    return export.serving_functions(model, tokenizer, info)


def run_in_process(fns, signature, inputs):
    """What the export's `signature` computes on `inputs`, by the model in this process."""
    if signature == "encode":
        return fns.encode(**{k: tf.constant(v) for k, v in inputs.items()})
    if signature in fns.task.extra_signatures:
        return fns.serve_extra(signature, {k: tf.constant(v) for k, v in inputs.items()})
    texts = [tf.constant(inputs[f]) for f in fns.text_fields]
    return fns.preprocess(*texts) if signature == "preprocess" else fns.serve(*texts)


@pytest.mark.parametrize("name", TASKS)
def test_export_served_without_the_project_answers_as_the_model(name, task_type_export,
                                                                served_task_type_exports):
    fns = serving_functions(name, task_type_export)
    results = served_task_type_exports[name]
    signatures = {r["signature"] for r in results}
    assert {"serving_default", "preprocess", "encode"} <= signatures, signatures
    for r in results:
        served = _outputs(r)  # TF1 (TF Serving's loader) and TF2 agree
        inputs = {k: _dec(v) for k, v in r["inputs"].items()}
        want = {k: v.numpy() for k, v in run_in_process(fns, r["signature"], inputs).items()}
        assert_same_answers(served, want, r["signature"])


# -- 5. tools/predict.py on the export ----------------------------------------------------------

def warmup_lines(fns):
    """predict.py's input lines of the warmup batch: each row's inputs, tab-separated."""
    examples = {f: EXAMPLES[k] for f, k in fns.task.warmup_texts(fns.text_fields).items()}
    rows = len(examples[fns.text_fields[0]])
    lines = []
    for i in range(rows):
        parts = []
        for field in fns.text_fields:
            value = examples[field][i]
            parts += value if isinstance(value, list) else [value]
        lines.append("\t".join(parts))
    return examples, lines


@pytest.mark.parametrize("name", TASKS)
def test_predict_tool_answers_each_line_as_served(name, task_type_export):
    fns = serving_functions(name, task_type_export)
    examples, lines = warmup_lines(fns)
    proc = tool_runner.run_tool("predict", f"--model_dir={task_type_export(name)[3]}",
                                input="".join(line + "\n" for line in lines))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["line"] for r in rows] == list(range(1, len(lines) + 1))
    served = fns.serve(*[tf.constant(np.array(examples[f], object)) for f in fns.text_fields])
    want = fns.task.prediction_rows({k: v.numpy() for k, v in served.items()})
    for row, expected in zip(rows, want):
        assert list(row["outputs"]) == sorted(row["outputs"])
        assert_same_answers({k: [v] for k, v in row["outputs"].items()},
                            {k: [v] for k, v in expected.items()}, f"line {row['line']}")
