"""Artifacts written by earlier versions load with this version and predict what they
predicted then:

- tests/fixtures/legacy_v0_1/ (made by tests/fixtures/make_legacy_artifacts.py): bert_keras
  0.1, the flat `bert_keras/models/` layout;
- tests/fixtures/legacy_task_packages/ (tests/fixtures/make_task_package_artifacts.py): the
  task-package layout (each task type's model, heads and head loaders in
  `bert_keras/tasks/<name>/`), a task directory of every task type of its registry.

Keras finds the classes of a `.keras` file by registered name ("bert_keras>BertClassifier",
"bert_keras>TransformerBlock", ...), never by module, so moving a class between modules
keeps old files loadable exactly while its package string and class name stay: this test
is what holds that, for the classes saved in these files and for every name 0.1 registered.
"""

import json
import pathlib

import keras
import numpy as np
import pytest

import bert_keras as bk
from bert_keras.tasks.registry import task_of_model

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
LEGACY = FIXTURES / "legacy_v0_1"
EXPECTED = json.loads((LEGACY / "expected.json").read_text("utf-8"))
IDS = {k: np.array(v, "int32") for k, v in EXPECTED["ids"].items()}
ATOL = 1e-5


def real_rows(array, mask):
    """The rows of real tokens of a per-token (B, T, ...) output, else `array` whole: at
    inference the encoder leaves padded rows 0 (it skips them: models/layers/packing.py),
    where the files were saved when they held values computed from the padding."""
    array = np.asarray(array, np.float64)
    mask = np.asarray(mask)
    if array.ndim >= 2 and array.shape[:2] == mask.shape:
        return array[mask.astype(bool)]
    return array

TASK_DIRECTORIES = {  # directory: (its model's class, task.json's task)
    "classification": ("BertClassifier", "classification"),
    "multi_label": ("BertClassifier", "multi_label"),
    "regression": ("BertClassifier", "regression"),
    "tagging": ("BertTokenClassifier", "tagging"),
    "span_qa": ("BertSpanQA", "span_qa"),
    "embedding": ("BertEmbedder", "embedding"),
    "pretraining": ("BertPretrainer", "pretraining"),
    "encoder": ("BertEncoder", "encoder"),
}


def assert_close(actual, expected, mask=IDS["input_mask"]):
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected)
        for key in expected:
            assert_close(actual[key], expected[key], mask)
        return
    np.testing.assert_allclose(real_rows(actual, mask), real_rows(expected, mask), atol=ATOL)


def test_a_legacy_keras_file_loads_and_predicts_ids_and_raw_text_as_before():
    model = keras.saving.load_model(LEGACY / "classifier.keras")
    assert type(model) is bk.BertClassifier and model.labels == ["a", "b", "c"]
    expected = EXPECTED["outputs"]["classifier.keras"]
    assert_close(model.predict(IDS, verbose=0), expected["ids"])
    assert_close(model.predict(EXPECTED["texts"], verbose=0), expected["texts"])


@pytest.mark.parametrize("name", sorted(TASK_DIRECTORIES))
def test_a_legacy_task_directory_loads_as_its_task_type_and_predicts_as_before(name):
    class_name, task = TASK_DIRECTORIES[name]
    model, tokenizer, info = bk.load_task(str(LEGACY / name))
    assert type(model).__name__ == class_name and info["task"] == task
    assert task_of_model(model).name == task  # the export picks the same task type
    assert (model if name == "encoder" else model.encoder).vocab_size == len(tokenizer.vocab)
    if name == "encoder":
        out = model(IDS)
        actual = {k: out[k] for k in ("pooled_output", "sequence_output")}
    elif name == "pretraining":
        actual = model.predict(dict(IDS, masked_lm_positions=np.array(
            EXPECTED["masked_lm_positions"], "int32")), verbose=0)
    else:
        actual = model.predict(IDS, verbose=0)
    assert_close(actual, EXPECTED["outputs"][name]["ids"])


# Every name bert_keras 0.1 registered with Keras (its `register_keras_serializable` classes):
# a file of 0.1 may name any of them.
REGISTERED_IN_0_1 = (
    "AdamW", "BertClassifier", "BertEmbedder", "BertEncoder", "BertPretrainer", "BertSpanQA",
    "BertTokenClassifier", "ClassificationHead", "Dense", "DistillationPretrainer", "Dropout",
    "ElectraPretrainer", "Lamb", "LayerNorm", "MaskedLMHead", "MultipleNegativesRankingLoss",
    "NextSentenceHead", "PositionEmbedding", "Ratio", "ReplacedTokenHead", "SelfAttention",
    "SentencePooling", "SpanHead", "TextPreprocessor", "TokenAccuracy",
    "TokenClassificationHead", "TokenCrossEntropy", "TransformerBlock", "TransposedDense",
    "WarmupDecay")


@pytest.mark.parametrize("name", REGISTERED_IN_0_1)
def test_a_name_registered_in_0_1_still_names_its_class(name):
    cls = keras.saving.get_registered_object(f"bert_keras>{name}")
    assert cls is not None and cls.__name__ == name
    assert keras.saving.get_registered_name(cls) == f"bert_keras>{name}"


# -- the task-package layout ------------------------------------------------------------------

PACKAGES = FIXTURES / "legacy_task_packages"
SAVED = json.loads((PACKAGES / "expected.json").read_text("utf-8"))


def decoded(value):
    """A model input as make_task_package_artifacts.encoded wrote it."""
    if isinstance(value, list):
        return [decoded(v) for v in value]
    if "tuple" in value:
        return tuple(decoded(v) for v in value["tuple"])
    if "str" in value:
        return value["str"]
    return {k: decoded(v) for k, v in value.items()}


def assert_as_saved(actual, expected, where="output", mask=None):
    """A prediction as make_task_package_artifacts.encoded wrote it: floats within ATOL (per
    token: the rows `mask` marks real), ints and strings equal."""
    if isinstance(actual, tuple):
        actual = list(actual)
    if hasattr(actual, "to_list"):  # a RaggedTensor
        actual = actual.to_list()
    if isinstance(expected, list):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_as_saved(a, e, f"{where}[{i}]", mask)
    elif "float" in expected:
        actual, wanted = np.asarray(actual, np.float64), np.array(expected["float"])
        if mask is not None:
            actual, wanted = real_rows(actual, mask), real_rows(wanted, mask)
        np.testing.assert_allclose(actual, wanted, atol=ATOL, err_msg=where)
    elif "int" in expected:
        np.testing.assert_array_equal(np.asarray(actual), np.array(expected["int"]), where)
    elif "str" in expected:
        actual = np.vectorize(lambda s: s.decode() if isinstance(s, bytes) else s,
                              otypes=[object])(np.asarray(actual, object))
        assert actual.tolist() == expected["str"], where
    else:
        assert sorted(actual) == sorted(expected), where
        for key in expected:
            assert_as_saved(actual[key], expected[key], f"{where}[{key!r}]", mask)


def saved_inputs(saved):
    """The inputs its model predicted on when saved: raw ones, or token ids."""
    if saved["inputs"] == "raw":
        return decoded(saved["x"])
    ids = {k: np.array(v, "int32") for k, v in SAVED["ids"].items()}
    if saved["class"] == "BertEncoder":
        return ids
    return dict(ids, masked_lm_positions=np.array(SAVED["masked_lm_positions"], "int32"))


def predicted(model, x):
    if isinstance(model, bk.BertEncoder):
        out = model(x)
        return {k: out[k] for k in ("pooled_output", "sequence_output")}
    return model.predict(x, verbose=0)


@pytest.mark.parametrize("name", sorted(SAVED["types"]))
def test_a_task_package_directory_loads_as_its_task_type_and_predicts_as_before(name):
    saved = SAVED["types"][name]
    model, tokenizer, info = bk.load_task(str(PACKAGES / name))
    assert type(model).__name__ == saved["class"] and info["task"] == name
    assert task_of_model(model).name == name  # the export picks the same task type
    assert getattr(model, "encoder", model).vocab_size == len(tokenizer.vocab)
    x = saved_inputs(saved)
    mask = x["input_mask"] if isinstance(x, dict) and "input_mask" in x else None
    assert_as_saved(predicted(model, x), saved["outputs"], mask=mask)


@pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")  # saved without
@pytest.mark.parametrize("name", sorted(SAVED["types"]))
def test_a_task_package_model_file_loads_compiled_as_keras_loads_it(name):
    """model.keras alone, compiled (`bk.load_task` loads it uncompiled): the classes that its
    compile config names (losses, metrics, the optimizer) are found by their names too."""
    model = keras.saving.load_model(PACKAGES / name / "model.keras")
    assert type(model).__name__ == SAVED["types"][name]["class"]
    if not isinstance(model, bk.BertEncoder):
        assert model.compiled and model.optimizer is not None
