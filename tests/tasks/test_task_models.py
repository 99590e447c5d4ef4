"""Task models: losses against numpy references, fit, config and .keras round trips, mixed
precision."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.models.objectives.losses import TokenCrossEntropy
from bert_keras.tasks.task_model import BertTaskModel, default_optimizer

# `tiny_encoder` (vocab V = 100, no dropout) and `assert_round_trip` are fixtures of conftest.py.
B, T, P, V = 8, 10, 3, 100


def encoder_inputs(seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((B, T), "int32")
    mask[::2, 7:] = 0  # Every other row has 3 padding tokens.
    return {
        "input_word_ids": (rng.integers(4, V, (B, T)) * mask).astype("int32"),
        "input_mask": mask,
        "input_type_ids": np.zeros((B, T), "int32"),
    }


def pretraining_data(seed=0):
    rng = np.random.default_rng(seed)
    x = encoder_inputs(seed)
    x["masked_lm_positions"] = rng.integers(1, 7, (B, P)).astype("int32")
    y = {"masked_lm": rng.integers(0, V, (B, P)).astype("int32"),
         "next_sentence": rng.integers(0, 2, (B,)).astype("int32")}
    weights = np.ones((B, P), "float32")
    weights[:, 2] = 0.0  # The last slot of every row is padding ...
    weights[0, 1] = 0.0  # ... and one row has a single prediction.
    y["masked_lm"][weights == 0] = 0
    return x, y, {"masked_lm": weights}


def run(model, x):
    """The model's outputs as numpy (an eager call: no predict function to trace)."""
    return tf.nest.map_structure(np.asarray, model(x, training=False))


def dataset(*arrays):
    """One batch of B as tf.data: Keras' numpy path insists on a weight for every output."""
    return tf.data.Dataset.from_tensor_slices(arrays).batch(B)


def google_mlm_loss(logits, ids, weights):
    logits = logits.astype(np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    ce = -np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
    return (weights * ce).sum() / (weights.sum() + 1e-5)


def sparse_ce(logits, labels):
    logits = logits.astype(np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]


def test_masked_lm_loss_is_googles_definition(tiny_encoder):
    x, y, w = pretraining_data()
    pretrainer = bk.BertPretrainer(tiny_encoder())
    logits = run(pretrainer, x)["masked_lm"]
    expected = google_mlm_loss(logits, y["masked_lm"], w["masked_lm"])
    # Keras' own mean would divide by B*P = 24 slots instead of sum(w) = 15: not the same.
    keras_mean = (w["masked_lm"] * sparse_ce(logits, y["masked_lm"])).sum() / w["masked_lm"].size
    assert abs(keras_mean - expected) > 0.1

    loss = TokenCrossEntropy()(y["masked_lm"], logits, w["masked_lm"])
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)
    # Through evaluate on a tf.data element (x, y, sample_weight), as the data pipeline yields.
    results = pretrainer.evaluate(dataset(x, y, w), verbose=0, return_dict=True)
    np.testing.assert_allclose(results["masked_lm_loss"], expected, rtol=1e-5)
    nsp_logits = run(pretrainer, x)["next_sentence"]
    np.testing.assert_allclose(results["next_sentence_loss"],
                               sparse_ce(nsp_logits, y["next_sentence"]).mean(), rtol=1e-5)
    # The accuracy is weighted by masked_lm_weights: padded slots never count.
    hits = (logits.argmax(-1) == y["masked_lm"]) * w["masked_lm"]
    np.testing.assert_allclose(results["masked_lm_accuracy"], hits.sum() / w["masked_lm"].sum(),
                               atol=1e-6)


def test_masked_lm_loss_ignores_padded_slots(tiny_encoder):
    x, y, w = pretraining_data()
    pretrainer = bk.BertPretrainer(tiny_encoder())
    a = pretrainer.evaluate(dataset(x, y, w), verbose=0, return_dict=True)
    y2 = {**y, "masked_lm": np.where(w["masked_lm"] == 0, 77, y["masked_lm"])}
    b = pretrainer.evaluate(dataset(x, y2, w), verbose=0, return_dict=True)
    assert a == b


def test_masked_lm_loss_gradient_is_the_weighted_softmax_minus_one_hot():
    rng = np.random.default_rng(3)
    logits = tf.constant(rng.normal(0, 3, (2, 3, 7)), tf.float32)
    labels, weights = rng.integers(0, 7, (2, 3)), np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = TokenCrossEntropy()(labels, logits, weights)
    softmax = np.exp(logits - logits.numpy().max(-1, keepdims=True))
    softmax /= softmax.sum(-1, keepdims=True)
    want = (softmax - np.eye(7)[labels]) * weights[..., None] / (weights.sum() + 1e-5)
    np.testing.assert_allclose(tape.gradient(loss, logits), want, atol=1e-6)


def test_masked_lm_loss_refuses_a_label_outside_the_vocab():
    logits = np.zeros((1, 2, 4), "float32")
    with pytest.raises(tf.errors.InvalidArgumentError, match="a label is outside"):
        TokenCrossEntropy()(np.array([[1, 4]]), logits, np.array([[1.0, 0.0]]))


def _fit_and_check(model, data, epochs=15, learning_rate=1e-2):
    """Overfits the 8 examples: the loss falls well below its first value."""
    model.compile(optimizer=default_optimizer(learning_rate))  # other arguments stay "auto"
    history = model.fit(data.repeat(), steps_per_epoch=1, epochs=epochs, verbose=0).history["loss"]
    assert history[-1] < 0.65 * history[0], history
    return history


def test_pretrainer_fits_and_round_trips(tiny_encoder, assert_round_trip):
    x, y, w = pretraining_data()
    pretrainer = bk.BertPretrainer(tiny_encoder())
    ds = dataset(x, y, w)
    _fit_and_check(pretrainer, ds, epochs=20)
    loaded = assert_round_trip(pretrainer, x)
    assert loaded.masked_lm_head.decoder_table is loaded.encoder.token_embedding.embeddings
    # Training resumes from the saved optimizer state.
    assert loaded.optimizer.iterations.numpy() == pretrainer.optimizer.iterations.numpy()
    loaded.fit(ds, epochs=1, verbose=0)


def test_pretrainer_without_next_sentence(tiny_encoder):
    x, y, w = pretraining_data()
    pretrainer = bk.BertPretrainer(tiny_encoder(), next_sentence=False)
    assert set(run(pretrainer, x)) == {"masked_lm"}
    # An element that still carries next_sentence labels trains the MLM alone.
    results = pretrainer.evaluate(dataset(x, y, w), verbose=0, return_dict=True)
    assert "next_sentence_loss" not in results
    assert "masked_lm_accuracy" in results  # named as with NSP, not a bare "accuracy"
    logits = run(pretrainer, x)["masked_lm"]
    np.testing.assert_allclose(results["loss"],
                               google_mlm_loss(logits, y["masked_lm"], w["masked_lm"]), rtol=1e-5)
    clone = bk.BertPretrainer.from_config(pretrainer.get_config())
    assert not clone.next_sentence


def test_pretrainer_sample_weight_errors_name_the_keys(tiny_encoder):
    x, y, w = pretraining_data()
    pretrainer = bk.BertPretrainer(tiny_encoder())
    with pytest.raises(ValueError, match="masked_lm_weights"):
        pretrainer.evaluate(dataset(x, y, {"masked_lm_weights": w["masked_lm"]}), verbose=0)
    with pytest.raises(ValueError, match="next_sentence"):
        pretrainer.evaluate(dataset(x, {"masked_lm": y["masked_lm"]}, w), verbose=0)


@pytest.mark.parametrize("problem_type", ["single_label", "multi_label", "regression"])
def test_classifier_fits_and_round_trips(problem_type, tiny_encoder, assert_round_trip):
    x = encoder_inputs()
    rng = np.random.default_rng(1)
    if problem_type == "single_label":
        num_classes, y = 3, rng.integers(0, 3, (B,))
    elif problem_type == "multi_label":
        num_classes, y = 4, (rng.random((B, 4)) > 0.5).astype("float32")
    else:
        num_classes, y = 1, rng.normal(size=(B, 1)).astype("float32")
    clf = bk.BertClassifier(tiny_encoder(), num_classes=num_classes, problem_type=problem_type)
    logits = run(clf, x)
    assert logits.shape == (B, num_classes) and logits.dtype == np.float32
    _fit_and_check(clf, dataset(x, y))
    loaded = assert_round_trip(clf, x)
    assert loaded.problem_type == problem_type


def test_classifier_bad_problem_type(tiny_encoder):
    with pytest.raises(ValueError, match="'binary'"):
        bk.BertClassifier(tiny_encoder(), num_classes=2, problem_type="binary")


def token_labels(seed=2):
    rng = np.random.default_rng(seed)
    x = encoder_inputs()
    labels = rng.integers(0, 5, (B, T))
    labels[:, 0] = bk.IGNORE_LABEL  # [CLS]
    labels[x["input_mask"] == 0] = bk.IGNORE_LABEL  # padding
    labels[:, 3] = bk.IGNORE_LABEL  # a non-first WordPiece
    return x, labels


def test_token_classifier_ignores_ignored_labels(tiny_encoder):
    x, labels = token_labels()
    tagger = bk.BertTokenClassifier(tiny_encoder(), num_classes=5)
    logits = run(tagger, x)
    assert logits.shape == (B, T, 5) and logits.dtype == np.float32
    a = tagger.evaluate(x, labels, verbose=0, return_dict=True)
    scored = labels >= 0
    expected = sparse_ce(logits, np.maximum(labels, 0))[scored].mean()
    np.testing.assert_allclose(a["loss"], expected, rtol=1e-5)
    hits = (logits.argmax(-1) == labels)[scored].mean()
    np.testing.assert_allclose(a["accuracy"], hits, atol=1e-6)
    # Hugging Face's -100 is ignored just the same; real labels do change the loss.
    b = tagger.evaluate(x, np.where(scored, labels, -100), verbose=0, return_dict=True)
    np.testing.assert_allclose(b["loss"], a["loss"], rtol=1e-6)
    changed = labels.copy()
    changed[1, 1] = (changed[1, 1] + 1) % 5
    c = tagger.evaluate(x, changed, verbose=0, return_dict=True)
    assert abs(c["loss"] - a["loss"]) > 1e-6


def test_token_classifier_fits_and_round_trips(tiny_encoder, assert_round_trip):
    x, labels = token_labels()
    tagger = bk.BertTokenClassifier(tiny_encoder(), num_classes=5)
    _fit_and_check(tagger, dataset(x, labels))
    assert_round_trip(tagger, x)


def span_data():
    x = encoder_inputs()
    y = {"start_positions": np.array([0, 2, 5, 1, 0, 4, 6, 3]),
         "end_positions": np.array([0, 3, 6, 1, 0, 5, 6, 4])}
    return x, y


def test_span_qa_loss_masks_and_fits(tiny_encoder, assert_round_trip):
    x, y = span_data()
    qa = bk.BertSpanQA(tiny_encoder())
    out = run(qa, x)
    assert out["start_logits"].shape == (B, T) and out["end_logits"].dtype == np.float32
    assert np.all(out["start_logits"][x["input_mask"] == 0] <= -1e8)
    results = qa.evaluate(x, y, verbose=0, return_dict=True)
    expected = 0.5 * (sparse_ce(out["start_logits"], y["start_positions"]).mean()
                      + sparse_ce(out["end_logits"], y["end_positions"]).mean())
    np.testing.assert_allclose(results["loss"], expected, rtol=1e-5)
    _fit_and_check(qa, dataset(x, y))
    assert_round_trip(qa, x)


def test_fit_works_without_compile(tiny_encoder):
    x, y = span_data()
    qa = bk.BertSpanQA(tiny_encoder())
    history = qa.fit(x, y, epochs=1, verbose=0).history
    assert np.isfinite(history["loss"][0])
    assert type(qa.optimizer).__name__ == "AdamW"
    assert float(qa.optimizer.learning_rate) == pytest.approx(5e-5)
    assert float(bk.BertPretrainer(tiny_encoder()).optimizer.learning_rate) == pytest.approx(1e-4)


def test_mixed_bfloat16_policy(tiny_encoder):
    previous = keras.mixed_precision.global_policy()
    try:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
        x, y, w = pretraining_data()
        pretrainer = bk.BertPretrainer(tiny_encoder())
        assert pretrainer.encoder.token_embedding.embeddings.dtype == "float32"
        out = run(pretrainer, x)
        assert out["masked_lm"].dtype == np.float32 and out["next_sentence"].dtype == np.float32
        history = pretrainer.fit(dataset(x, y, w), epochs=2, verbose=0).history
        assert np.all(np.isfinite(history["loss"]))
        xt, labels = token_labels()
        tagger = bk.BertTokenClassifier(tiny_encoder(), num_classes=5)
        assert run(tagger, xt).dtype == np.float32
        assert np.isfinite(tagger.fit(xt, labels, verbose=0).history["loss"][0])
    finally:
        keras.mixed_precision.set_global_policy(previous)


def test_a_pooler_no_head_reads_is_left_out_of_training(tiny_encoder):
    """Tagging (like span QA and MLM-only pretraining) reads no pooled output: its pooler
    neither trains nor makes Keras warn "Gradients do not exist"; a classifier over the
    same encoder still trains it."""
    import warnings

    encoder = tiny_encoder()
    tagger = bk.BertTokenClassifier(encoder, num_classes=3)
    pooler = [w.path for w in encoder.pooler.weights]
    before = [w.numpy() for w in encoder.pooler.weights]
    x = {"input_word_ids": np.ones((2, 6), "int32"), "input_mask": np.ones((2, 6), "int32"),
         "input_type_ids": np.zeros((2, 6), "int32")}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tagger.fit(x, np.array([[0, 1, 2, 0, 1, 2]] * 2), epochs=2, verbose=0)
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    assert not set(pooler) & {w.path for w in tagger.trainable_weights}
    assert set(pooler) <= {w.path for w in tagger.non_trainable_weights}
    for old, new in zip(before, encoder.pooler.weights):
        np.testing.assert_array_equal(old, new.numpy())
    classifier = bk.BertClassifier(encoder, num_classes=2)
    assert set(pooler) <= {w.path for w in classifier.trainable_weights}
    assert len(tagger.weights) == len(tagger.trainable_weights) + len(tagger.non_trainable_weights)


def test_an_unknown_keyword_is_refused_by_name(tiny_encoder, tiny_encoder_dir):
    """As Python does (Keras' functional constructor would drop it without a word)."""
    with pytest.raises(TypeError, match=r"^BertClassifier\(\) got an unexpected keyword "
                       r"argument 'num_clases' \(did you mean 'num_classes'\?\)$"):
        bk.BertClassifier(tiny_encoder(), num_classes=2, num_clases=3)
    with pytest.raises(TypeError, match=r"^BertEmbedder\(\) got an unexpected keyword argument "
                       r"'truncate_dimension' \(did you mean 'truncate_dim'\?\)$"):
        bk.BertEmbedder(tiny_encoder(), truncate_dimension=8)
    for cls in task_model_classes():  # refused before the checkpoint is read
        with pytest.raises(TypeError, match=rf"^{cls.__name__}\.from_pretrained\(\) got an "
                           r"unexpected keyword argument 'truncate_dimension'"):
            cls.from_pretrained(tiny_encoder_dir, truncate_dimension=8)
    with pytest.raises(TypeError, match=r"'dropuot' \(did you mean 'dropout'\?\)"):
        bk.BertTokenClassifier.from_pretrained(tiny_encoder_dir, num_classes=3, dropuot=0.2)
    assert bk.BertClassifier(tiny_encoder(), num_classes=2, name="topics").name == "topics"
    with pytest.raises(TypeError, match=r"^BertReranker\(\) got num_classes=3: a reranker"):
        bk.BertReranker(tiny_encoder(), num_classes=3)  # the classifier's options it has not


def task_model_classes(base=BertTaskModel):
    """Every task model class (BertTaskModel's subclasses, theirs included)."""
    return [c for sub in base.__subclasses__() for c in [sub, *task_model_classes(sub)]]
