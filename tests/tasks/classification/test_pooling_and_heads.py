"""The classifier's poolings ("cls" the pooler; "mean", "max", "attention" over the real
tokens) and deeper heads (`head_hidden_layers`): numerics against numpy on the encoder's
sequence output, padding that changes nothing, training, the .keras round trip, task
directories, the one-line refusals and the transformers writer's."""

import keras
import numpy as np
import pytest

import bert_keras as bk
from bert_keras.errors import InputError
from bert_keras.tasks import task_io
from bert_keras.text.tokenizer import BertTokenizer

TOKEN_POOLINGS = ("mean", "max", "attention")
LENGTHS = (5, 3, 8)  # the real tokens of each row


def ids(lengths, seq, junk=False):
    """Encoder inputs of rows with `lengths` real tokens, padded to `seq` (with random ids under
    the padding when `junk`: the mask alone must keep them out)."""
    rng = np.random.default_rng(0)
    words = rng.integers(5, 100, size=(len(lengths), max(lengths)))
    x = rng.integers(5, 100, size=(len(lengths), seq)) if junk else np.zeros(
        (len(lengths), seq), np.int64)
    mask = np.zeros((len(lengths), seq), np.int32)
    for i, n in enumerate(lengths):
        x[i, :n] = words[i, :n]
        mask[i, :n] = 1
    return {"input_word_ids": x.astype("int32"), "input_mask": mask,
            "input_type_ids": np.zeros_like(mask)}


def with_random_score(model):
    """The attention score kernel set away from its zero start (which is mean pooling)."""
    if model.pooling == "attention":
        kernel = model.pooling_layer.score.kernel
        kernel.assign(np.random.default_rng(1).normal(size=kernel.shape).astype("float32"))
    return model


def numpy_pool(pooling, sequence, mask, score_kernel=None):
    mask = mask.astype(bool)
    out = []
    for rows, real in zip(sequence.astype(np.float64), mask):
        rows = rows[real]  # (n, H): the real tokens only
        if pooling == "mean":
            out.append(rows.mean(0))
        elif pooling == "max":
            out.append(rows.max(0))
        else:
            scores = rows @ score_kernel.astype(np.float64)[:, 0]
            weights = np.exp(scores - scores.max())
            out.append((weights / weights.sum()) @ rows)
    return np.stack(out)


@pytest.mark.parametrize("pooling", TOKEN_POOLINGS)
def test_token_pooling_equals_numpy_on_the_sequence_output(tiny_encoder, pooling):
    encoder = tiny_encoder()
    model = with_random_score(bk.BertClassifier(encoder, num_classes=3, pooling=pooling))
    x = ids(LENGTHS, 10)
    sequence = np.asarray(encoder(x)["sequence_output"])  # (B, T, H)
    score = (np.asarray(model.pooling_layer.score.kernel) if pooling == "attention" else None)
    pooled = numpy_pool(pooling, sequence, x["input_mask"], score)
    head = model.classification_head.logits
    want = pooled @ np.asarray(head.kernel, np.float64) + np.asarray(head.bias)
    got = model(x, training=False)
    np.testing.assert_allclose(got, want, atol=1e-5)
    # and not what the pooler gives: the test tells the poolings apart
    pooler = np.asarray(encoder(x)["pooled_output"]) @ np.asarray(head.kernel) + head.bias
    assert not np.allclose(got, pooler, atol=1e-3)


def test_cls_pooling_reads_the_pooler_on_the_cls_row_only(tiny_encoder):
    encoder = tiny_encoder()
    model = bk.BertClassifier(encoder, num_classes=3)
    assert model.pooling == "cls" and model.pooling_layer is None
    x = ids(LENGTHS, 10)
    head = model.classification_head.logits
    want = np.asarray(encoder(x)["pooled_output"]) @ np.asarray(head.kernel) + head.bias
    np.testing.assert_allclose(model(x, training=False), want, atol=1e-5)
    assert model.reads_pooled_output()
    pooler = {id(w) for w in encoder.pooler.weights}
    assert pooler <= {id(w) for w in model.trainable_weights}


@pytest.mark.parametrize("pooling", ("cls",) + TOKEN_POOLINGS)
def test_padding_changes_nothing(tiny_encoder, pooling):
    model = with_random_score(bk.BertClassifier(tiny_encoder(), num_classes=3, pooling=pooling,
                                                head_hidden_layers=1))
    short = model(ids(LENGTHS, 8), training=False)
    for seq in (9, 20):
        np.testing.assert_allclose(model(ids(LENGTHS, seq, junk=True), training=False), short,
                                   atol=1e-5)


@pytest.mark.parametrize("pooling", TOKEN_POOLINGS)
def test_token_pooling_leaves_the_pooler_out_of_training(tiny_encoder, pooling):
    encoder = tiny_encoder()
    model = bk.BertClassifier(encoder, num_classes=2, pooling=pooling)
    assert not model.reads_pooled_output()
    trainable = {id(w) for w in model.trainable_weights}
    assert not any(id(w) in trainable for w in encoder.pooler.weights)
    expected_pooling_weights = 1 if pooling == "attention" else 0
    assert len(model.pooling_layer.weights) == expected_pooling_weights


def separable(n=16, seq=8):
    """Rows whose label is whether token 7 occurs among their real tokens."""
    rng = np.random.default_rng(2)
    x = ids(rng.integers(3, seq + 1, size=n).tolist(), seq)
    labels = np.arange(n) % 2
    for row, label in enumerate(labels):
        real = int(x["input_mask"][row].sum())
        words = x["input_word_ids"][row]
        words[:real][words[:real] == 7] = 8
        if label:
            words[rng.integers(0, real)] = 7
    return x, labels


def test_attention_pooling_trains(tiny_encoder):
    model = bk.BertClassifier(tiny_encoder(), num_classes=2, pooling="attention")
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    x, y = separable()
    traces, step = [], model.train_step
    model.train_step = lambda data: traces.append(data) or step(data)
    history = model.fit(x, y, epochs=30, batch_size=16, verbose=0).history
    assert len(traces) == 1  # Keras' Adam built before the trace (`build_before_fit`)
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    assert history["accuracy"][-1] == 1.0
    assert np.abs(np.asarray(model.pooling_layer.score.kernel)).max() > 1e-3  # it learned


def test_a_deeper_head_trains_and_round_trips_through_keras(tiny_encoder, assert_round_trip):
    model = bk.BertClassifier(tiny_encoder(), num_classes=2, pooling="attention",
                              head_hidden_layers=2, head_hidden_size=12, head_activation="tanh")
    head = model.classification_head
    assert [tuple(w.shape) for d in head.hidden_stack for w in d.weights] == [
        (16, 12), (12,), (12, 12), (12,)]
    assert tuple(head.logits.kernel.shape) == (12, 2)
    before = [np.array(d.kernel) for d in head.hidden_stack]
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    x, y = separable()
    history = model.fit(x, y, epochs=30, batch_size=16, verbose=0).history
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    assert all(not np.allclose(b, d.kernel) for b, d in zip(before, head.hidden_stack))
    loaded = assert_round_trip(model, x)
    assert (loaded.pooling, loaded.head_hidden_layers, loaded.head_hidden_size,
            loaded.head_activation) == ("attention", 2, 12, "tanh")


def test_the_head_layers_compute_dense_activation_and_dropout(tiny_encoder):
    model = bk.BertClassifier(tiny_encoder(), num_classes=3, pooling="mean",
                              head_hidden_layers=2, head_activation="relu")
    head = model.classification_head
    pooled = np.random.default_rng(3).normal(size=(4, 16)).astype("float32")
    h = pooled.astype(np.float64)
    for dense in head.hidden_stack:  # default width: the encoder's hidden size
        assert tuple(dense.kernel.shape) == (16, 16)
        h = np.maximum(h @ np.asarray(dense.kernel) + np.asarray(dense.bias), 0.0)
    want = h @ np.asarray(head.logits.kernel) + np.asarray(head.logits.bias)
    np.testing.assert_allclose(head(pooled, training=False), want, atol=1e-5)
    # dropout between the layers when training (rate 0.1 by default)
    assert not np.allclose(head(pooled, training=True), want, atol=1e-5)


@pytest.mark.parametrize("problem_type, y", [
    ("multi_label", np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]], "float32")),
    ("regression", np.array([0.5, 1.5, -1.0, 2.0], "float32")),
])
def test_token_pooling_and_deeper_heads_for_multi_label_and_regression(tiny_encoder,
                                                                      problem_type, y):
    classes = 1 if problem_type == "regression" else 3
    model = bk.BertClassifier(tiny_encoder(), num_classes=classes, problem_type=problem_type,
                              pooling="max", head_hidden_layers=1)
    x = ids((3, 5, 8, 2), 8)
    history = model.fit(x, y, epochs=3, verbose=0).history
    assert np.isfinite(history["loss"]).all()
    assert model.predict(x, verbose=0).shape == (4, classes)
    clone = bk.BertClassifier.from_config(model.get_config())
    assert (clone.problem_type, clone.pooling, clone.head_hidden_layers) == (
        problem_type, "max", 1)


@pytest.mark.parametrize("kwargs, message", [
    (dict(pooling="sum"), "BertClassifier: pooling must be one of ('cls', 'mean', 'max', "
                          "'attention'), got 'sum'."),
    (dict(head_hidden_layers=-1), "BertClassifier: head_hidden_layers must be an integer >= 0, "
                                  "got -1."),
    (dict(head_hidden_layers=1.5), "head_hidden_layers must be an integer >= 0, got 1.5."),
    (dict(head_hidden_size=0), "head_hidden_size must be None (the encoder's hidden size) or "
                               "an integer >= 1, got 0."),
    (dict(head_activation="swish"), "BertClassifier: head_activation must be one of ('tanh', "
                                    "'relu', 'gelu'), got 'swish'."),
])
def test_bad_options_are_refused_in_one_line(tiny_encoder, kwargs, message):
    with pytest.raises(ValueError) as e:
        bk.BertClassifier(tiny_encoder(), num_classes=2, **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.fixture
def tokenizer():
    return BertTokenizer(str(bk.assets.path("vocab.txt")), lower_case=True)


def test_a_task_directory_keeps_the_pooling_head_and_their_weights(tmp_path, tokenizer):
    keras.utils.set_random_seed(0)
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=32)
    model = with_random_score(bk.BertClassifier(encoder, num_classes=2, pooling="attention",
                                                head_hidden_layers=1, head_hidden_size=8))
    task_io.save_task(str(tmp_path / "task"), model, tokenizer, "classification", 16,
                      labels=["no", "yes"], text_fields=["text"])
    again = bk.BertClassifier.from_pretrained(tmp_path / "task")
    assert (again.pooling, again.head_hidden_layers, again.head_hidden_size) == (
        "attention", 1, 8)
    x = ids(LENGTHS, 10)
    np.testing.assert_allclose(again(x, training=False), model(x, training=False), atol=1e-6)
    assert again.predict(["In the beginning was the Word."], verbose=0).shape == (1, 2)
    # another pooling asked for: a fresh head of that pooling over the same encoder
    mean = bk.BertClassifier.from_pretrained(tmp_path / "task", pooling="mean",
                                             head_hidden_layers=0)
    assert mean.pooling == "mean" and mean.pooling_layer.weights == []


def test_from_pretrained_takes_the_pooling_and_head(tokenizer):
    path = "tests/fixtures/families/distilbert"
    model = bk.BertClassifier.from_pretrained(path, num_classes=2, pooling="max",
                                              head_hidden_layers=1, seq_length=16)
    assert model.pooling == "max" and model.head_hidden_layers == 1
    assert model.predict(["Jesus wept."], verbose=0).shape == (1, 2)


@pytest.mark.parametrize("kwargs, message", [
    (dict(pooling="mean"), "BertClassifier: pooling='mean' has no transformers equivalent"),
    (dict(head_hidden_layers=1), "BertClassifier: head_hidden_layers=1 has no transformers "
                                 "equivalent"),
])
def test_the_transformers_writer_refuses_what_transformers_lacks(tmp_path, kwargs, message):
    model = bk.BertClassifier.from_pretrained("tests/fixtures/families/distilbert",
                                              num_classes=2, seq_length=16, **kwargs)
    with pytest.raises(InputError) as e:
        bk.save_transformers(model, str(tmp_path / "out"))
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    assert not (tmp_path / "out").exists()


def test_a_transformers_head_is_loaded_only_into_a_head_that_computes_it():
    path = "tests/fixtures/families/distilbert_classifier"
    same = bk.BertClassifier.from_pretrained(path, seq_length=16)
    assert same.has_transformers_head()
    for kwargs in (dict(pooling="mean"), dict(head_hidden_layers=1)):
        other = bk.BertClassifier.from_pretrained(path, seq_length=16, **kwargs)
        assert not other.has_transformers_head() and other.num_classes == 3
        kept = other.classification_head.logits.kernel
        assert kept.shape == same.classification_head.logits.kernel.shape
        assert not np.allclose(kept, same.classification_head.logits.kernel)  # a fresh head
