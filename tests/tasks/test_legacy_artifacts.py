"""Artifacts written by bert_keras 0.1 (tests/fixtures/legacy_v0_1/, made by
tests/fixtures/make_legacy_artifacts.py with the flat `bert_keras/models/` layout) load with
this version and predict what they predicted then.

Keras finds the classes of a `.keras` file by registered name ("bert_keras>BertClassifier",
"bert_keras>TransformerBlock", ...), never by module, so moving a class between modules
keeps old files loadable exactly while its package string and class name stay: this test
is what holds that.
"""

import json
import pathlib

import keras
import numpy as np
import pytest

import bert_keras as bk
from bert_keras.tasks.registry import task_of_model

LEGACY = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "legacy_v0_1"
EXPECTED = json.loads((LEGACY / "expected.json").read_text("utf-8"))
IDS = {k: np.array(v, "int32") for k, v in EXPECTED["ids"].items()}
ATOL = 1e-5

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


def assert_close(actual, expected):
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected)
        for key in expected:
            assert_close(actual[key], expected[key])
        return
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.array(expected), atol=ATOL)


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
