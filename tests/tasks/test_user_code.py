"""Keras user code with keras-hub habits: task models `from_pretrained` on any checkpoint
directory, raw strings (and pairs) in fit / evaluate / predict, `.keras` round trips with no
custom_objects, and `bk.export_model` answering what `predict` answers."""

import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.tasks import registry

from export_harness import _enc, _outputs, run_client

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"
TEXTS = ["In the beginning God created the heaven and the earth.", "Jesus wept.",
         "The LORD is my shepherd; I shall not want.", "And the earth was without form."]


def softmax(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


LABELS = np.array([0, 1, 2, 1])
# Byte-level BPE and SentencePiece pairs: these families' classifiers fit on (texts_a, texts_b).
PAIRS = ("roberta", "albert")


def inputs(family):
    """What `fitted(family)` fits on and the tests predict: pairs of TEXTS for PAIRS, TEXTS
    for the rest."""
    return (TEXTS, TEXTS[::-1]) if family in PAIRS else TEXTS


@pytest.fixture(scope="module")
def fitted():
    """`fitted(family)`: a 3-class classifier `from_pretrained` of the family fixture at 64
    tokens a row (the fixtures' position table), fit one epoch on `inputs(family)`; once per
    family and module (the round trip, the pairs' checks and the export of
    electra_discriminator's share one fit)."""
    made = {}

    def get(family):
        if family not in made:
            model = bk.BertClassifier.from_pretrained(str(FAMILIES / family), num_classes=3,
                                                      seq_length=64)
            model.fit(inputs(family), LABELS, batch_size=2, epochs=1, verbose=0)
            made[family] = model
        return made[family]

    return get


@pytest.mark.parametrize("family", ["bert_qa", "roberta", "albert", "distilbert",
                                    "electra_discriminator", "xlm_roberta"])
def test_every_family_fits_strings_and_round_trips_through_a_keras_file(family, fitted,
                                                                        tmp_path):
    model = fitted(family)
    before = model.predict(inputs(family), verbose=0)
    model.save(tmp_path / "model.keras")
    again = keras.models.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(again.predict(inputs(family), verbose=0), before, atol=1e-6)
    assert again.preprocessor.tokenizer.vocab == model.preprocessor.tokenizer.vocab


@pytest.mark.parametrize("family", PAIRS)
def test_pairs_fit_and_predict_and_each_batch_is_padded_to_its_own_longest_row(family, fitted):
    model = fitted(family)  # fit on pairs
    pairs = inputs(family)
    assert model.predict(pairs, verbose=0).shape == (4, 3)
    packed = model.preprocessor(pairs)["input_word_ids"]
    assert 10 < packed.shape[1] < model.preprocessor.seq_length  # the longest pair's width
    dataset = tf.data.Dataset.from_tensor_slices((pairs, LABELS)).batch(2)
    assert set(model.evaluate(dataset, return_dict=True, verbose=0)) == {"loss", "accuracy"}
    assert model.preprocessor.text_fields == ("text_a", "text_b")
    # fit, predict and evaluate traced the tokenizer once between them (about a second each)
    assert model.preprocessor.batch_function().experimental_get_tracing_count() == 1


def test_fit_batches_are_rounded_up_to_a_multiple_of_8_with_padding_the_model_ignores():
    """What `fit` trains on (`TextPreprocessor.batch_function(training=True)`): each batch's
    width rounded up to a multiple of 8, at most seq_length, with [PAD] ids and a 0 mask that
    the model ignores; the preprocessor's own batches (predict's) keep their longest row."""
    model = bk.BertClassifier.from_pretrained(str(FAMILIES / "roberta"), num_classes=2)
    pre = model.preprocessor
    longest = pre(TEXTS)["input_word_ids"].shape[1]
    assert longest % 8  # so the first case pads
    for seq_length in (pre.seq_length, longest - 1):  # the second: cut, and not rounded past
        pre.seq_length = seq_length
        exact = pre(TEXTS)
        rounded = pre.batch_function(training=True)(tf.constant(TEXTS))
        width = exact["input_word_ids"].shape[1]
        assert width == min(longest, seq_length)
        assert rounded["input_word_ids"].shape[1] == min(-(-width // 8) * 8, seq_length)
        for key, value in exact.items():
            np.testing.assert_array_equal(rounded[key][:, :width], value)
        assert (rounded["input_word_ids"][:, width:] == pre.tokenizer.pad_id).numpy().all()
        assert not rounded["input_mask"][:, width:].numpy().any()
        np.testing.assert_allclose(model(rounded), model(exact), atol=1e-5)


def test_labels_are_checked_before_a_step_and_the_model_still_fits_after_a_refusal():
    model = bk.BertClassifier.from_pretrained(str(FAMILIES / "bert_qa"), num_classes=3,
                                              seq_length=16)
    for labels, message in (([0, 1, 5, 1], r"y\[2\] = 5 is not a class id in \[0, 3\)"),
                            (["a", "b", "a", "b"], "y holds strings"),
                            ([[1, 0, 0]] * 4, r"y has shape \(4, 3\)")):
        with pytest.raises(ValueError, match=message):
            model.fit(TEXTS, np.array(labels), verbose=0)
    model.fit(TEXTS, np.array([0, 1, 2, 1]), batch_size=2, verbose=0)
    # (B, 1) labels after (B,) ones, and validation_split on texts, as Keras takes arrays
    history = model.fit(TEXTS, np.array([[0], [1], [2], [1]]), validation_split=0.25,
                        batch_size=2, verbose=0)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}


def test_fine_tuned_heads_are_kept_from_transformers_and_task_directories(tmp_path):
    tagger = bk.BertTokenClassifier.from_pretrained(str(FAMILIES / "roberta_tagger"))
    assert tagger.labels == ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    ids = tagger.preprocessor(TEXTS)
    width = ids["input_word_ids"].shape[1]  # tags of every token
    with pytest.raises(ValueError, match="labels cannot go with raw texts.*one tag per word"):
        tagger.fit(TEXTS, np.zeros((4, width), "int32"), verbose=0)
    reference, _, _ = registry.load_task(str(FAMILIES / "roberta_tagger"))
    np.testing.assert_allclose(tagger(ids), reference(ids), atol=1e-5)
    qa = bk.BertSpanQA.from_pretrained(str(FAMILIES / "albert_qa"))
    reference, _, _ = registry.load_task(str(FAMILIES / "albert_qa"))
    ids = qa.preprocessor((TEXTS, TEXTS))
    np.testing.assert_allclose(qa(ids)["start_logits"], reference(ids)["start_logits"],
                               atol=1e-5)
    # A task directory of ours: its classifier and its labels come back.
    clf = bk.BertClassifier.from_pretrained(str(FAMILIES / "distilbert"), num_classes=2)
    bk.save_task(str(tmp_path / "task"), clf, clf.preprocessor.tokenizer, "classification",
                 32, labels=["no", "yes"])
    again = bk.BertClassifier.from_pretrained(str(tmp_path / "task"))
    assert again.labels == ["no", "yes"]
    np.testing.assert_allclose(again.predict(TEXTS, verbose=0), clf.predict(TEXTS, verbose=0),
                               atol=1e-5)


def test_a_directory_without_a_head_needs_num_classes():
    with pytest.raises(bk.InputError, match="num_classes"):
        bk.BertClassifier.from_pretrained(str(FAMILIES / "roberta"))


@pytest.mark.slow
def test_export_model_serves_what_predict_answers(fitted, tmp_path):
    model = fitted("electra_discriminator")
    path = bk.export_model(model, export_dir_base=str(tmp_path / "saved"), model_name="topics",
                           labels=["law", "poetry", "prophecy"])
    assert bk.read_metadata(path)["labels"] == ["law", "poetry", "prophecy"]
    report = run_client(tmp_path, [path], {path: [["serving_default", {
        "text": _enc(np.array(TEXTS, object))}]]})
    (result,) = [r for r in report["exports"][path] if not r["warmup"]]
    np.testing.assert_allclose(_outputs(result)["probabilities"],
                               softmax(model.predict(TEXTS, verbose=0)), atol=1e-5)
