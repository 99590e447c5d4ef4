"""The CRF's log partition, best path, path score and marginals equal brute-force enumeration
over every tag sequence of short chains, with masked positions (padding, non-first pieces)
inside and around the chain, with and without BIO constraints; and the tagger that carries it
(loss, training, config, checkpoints)."""

import itertools
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.errors import InputError
from bert_keras.models.objectives.losses import TokenCrossEntropy
from bert_keras.tasks.tagging import crf as crf_lib
from bert_keras.tasks.tagging import decoding
from bert_keras.tasks.task_io import save_task

FAMILIES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "families"

TAG_SETS = [
    (["A", "B", "C"], "none"),
    (["O", "B-X", "I-X"], "bio"),
    (["O", "B-X", "I-X", "I-Y"], "bio"),  # I-Y has no B-Y: it can never be tagged
    (["O", "B-X", "I-X", "B-Y"], "none"),
]


def _random_crf(labels, constraints, rng):
    layer = crf_lib.CRF(len(labels), labels=labels, constraints=constraints)
    layer.build()
    c = len(labels)
    layer.set_weights([rng.normal(0, 1.5, (c, c)).astype("float32"),
                       rng.normal(0, 1.5, c).astype("float32"),
                       rng.normal(0, 1.5, c).astype("float32")])
    return layer


def _allowed(labels, constraints, path):
    """Whether `path` (tag ids) keeps to the constraints, by the rule itself."""
    if constraints == "none" or not path:
        return True
    names = [labels[i] for i in path]
    for k, tag in enumerate(names):
        if tag.startswith("I-") and (k == 0 or names[k - 1] not in (f"B-{tag[2:]}", tag)):
            return False
    return True


def _brute_force(layer, labels, constraints, emissions, positions):
    """(log Z, best path, {path: score}, marginals [L, C]) over every allowed tag sequence
    of the chain at `positions`."""
    transitions, start, end = (w.numpy() for w in layer.weights)
    e = emissions[positions]
    scores = {}
    for path in itertools.product(range(len(labels)), repeat=len(positions)):
        if not _allowed(labels, constraints, path):
            continue
        score = sum(e[k, t] for k, t in enumerate(path))
        if path:
            score += start[path[0]] + end[path[-1]]
            score += sum(transitions[a, b] for a, b in zip(path, path[1:]))
        scores[path] = score
    values = np.array(list(scores.values()), np.float64)
    log_z = np.log(np.exp(values - values.max()).sum()) + values.max()
    best = max(scores, key=scores.get)
    marginals = np.zeros((len(positions), len(labels)))
    for path, score in scores.items():
        for k, t in enumerate(path):
            marginals[k, t] += np.exp(score - log_z)
    return log_z, best, scores, marginals


def _masks(rng, batch, length):
    mask = rng.random((batch, length)) < 0.6
    mask[0] = False  # an empty chain
    mask[1] = False
    mask[1, 1:6] = True  # a chain of 5 with masked positions on either side
    return mask


@pytest.mark.parametrize("labels,constraints", TAG_SETS)
def test_the_crf_equals_brute_force_enumeration(labels, constraints):
    rng = np.random.default_rng(len(labels) + len(constraints))
    layer = _random_crf(labels, constraints, rng)
    batch, length = 12, 7
    emissions = rng.normal(0, 2, (batch, length, len(labels))).astype("float32")
    mask = _masks(rng, batch, length)
    mask[:, :2] &= mask[:, :2]
    mask[mask.sum(1) > 5] = False  # chains of at most 5 words
    log_z = layer.log_partition(emissions, mask).numpy()
    path = layer.decode(emissions, mask).numpy()
    marginals = layer.marginals(emissions, mask).numpy()
    gold = rng.integers(0, len(labels), (batch, length))
    gold_score = layer.path_score(emissions, gold, mask).numpy()
    tested = 0
    for b in range(batch):
        positions = np.flatnonzero(mask[b])
        want_z, want_best, scores, want_marginals = _brute_force(
            layer, labels, constraints, emissions[b], positions)
        np.testing.assert_allclose(log_z[b], want_z, rtol=1e-5, atol=1e-4)
        assert tuple(path[b][positions]) == want_best, b
        assert (path[b][~mask[b]] == -1).all()  # off the chain
        np.testing.assert_allclose(marginals[b][positions], want_marginals, atol=1e-5)
        assert (marginals[b][~mask[b]] == 0).all()
        gold_path = tuple(gold[b][positions])
        if gold_path in scores:
            np.testing.assert_allclose(gold_score[b], scores[gold_path], rtol=1e-5, atol=1e-4)
        tested += len(positions) >= 3
    assert tested >= 3  # some chains long enough to test transitions


def test_the_negative_log_likelihood_is_brute_force_and_reads_tags_as_the_mask():
    labels, constraints = ["O", "B-X", "I-X"], "bio"
    rng = np.random.default_rng(7)
    layer = _random_crf(labels, constraints, rng)
    emissions = rng.normal(0, 2, (2, 6, 3)).astype("float32")
    tags = np.array([[-1, 1, -1, 2, 0, -1], [-1, 0, 1, -1, -1, -1]])  # -1: not a word start
    nll = layer.negative_log_likelihood(emissions, tags).numpy()
    for b in range(2):
        positions = np.flatnonzero(tags[b] >= 0)
        log_z, _, scores, _ = _brute_force(layer, labels, constraints, emissions[b],
                                           positions)
        np.testing.assert_allclose(nll[b], log_z - scores[tuple(tags[b][positions])],
                                   rtol=1e-5, atol=1e-4)


def test_the_learning_rate_multiplier_scales_the_scores_the_variables_hold():
    rng = np.random.default_rng(11)
    plain = _random_crf(["O", "B-X", "I-X"], "bio", rng)
    fast = crf_lib.CRF(3, labels=["O", "B-X", "I-X"], constraints="bio",
                       learning_rate_multiplier=50.0)
    fast.build()
    fast.set_weights([w / 50.0 for w in plain.get_weights()])
    for mine, theirs in zip(fast.scores(), plain.scores()):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6)
    # An Adam step moves each variable by about the learning rate, whatever its gradient's
    # scale: the scores move 50 times as far.
    emissions = rng.normal(size=(2, 4, 3)).astype("float32")
    tags = np.array([[0, 1, 2, 0], [1, 2, 2, -1]])
    moved = []
    for layer in (plain, fast):
        before = layer.scores()[0].numpy()
        optimizer = keras.optimizers.Adam(1e-3)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer.negative_log_likelihood(emissions, tags))
        optimizer.apply_gradients(zip(tape.gradient(loss, layer.trainable_weights),
                                      layer.trainable_weights))
        moved.append(np.abs(layer.scores()[0].numpy() - before).max())
    np.testing.assert_allclose(moved[1], 50 * moved[0], rtol=1e-3)


def test_bio_constraints_come_from_the_tag_names():
    start, allowed = crf_lib.allowed_transitions(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
                                                 "bio")
    assert start.tolist() == [True, True, False, True, False]
    assert allowed[:, 2].tolist() == [False, True, True, False, False]  # I-PER
    assert allowed[:, 4].tolist() == [False, False, False, True, True]  # I-LOC
    assert allowed[:, [0, 1, 3]].all()
    assert crf_lib.violations(["O", "I-PER"], ["O", "B-PER", "I-PER"], "bio") == (1, "I-PER")
    assert crf_lib.violations(["B-PER", "I-PER"], ["O", "B-PER", "I-PER"], "bio") is None
    with pytest.raises(ValueError, match="crf_constraints='bioes' is not one of"):
        crf_lib.CRF(3, labels=["O", "B-X", "I-X"], constraints="bioes")
    with pytest.raises(ValueError, match="needs the tag names"):
        crf_lib.CRF(3, constraints="bio")


def test_a_zero_crf_is_the_token_cross_entropy_and_argmax():
    rng = np.random.default_rng(3)
    layer = crf_lib.CRF(4)
    layer.build()
    logits = rng.normal(0, 2, (3, 5, 4)).astype("float32")
    labels = np.array([[-1, 1, 2, -1, 0], [-1, 3, -1, -1, -1], [-1] * 5])
    crf_loss = crf_lib.CRFLoss(crf=layer)(labels, logits)
    token_loss = TokenCrossEntropy(epsilon=0.0, ignore_negative_labels=True)(labels, logits)
    np.testing.assert_allclose(float(crf_loss), float(token_loss), rtol=1e-5)
    mask = labels >= 0
    np.testing.assert_array_equal(layer.decode(logits, mask).numpy()[mask],
                                  logits.argmax(-1)[mask])
    np.testing.assert_allclose(layer.marginals(logits, mask).numpy()[mask],
                               tf.nn.softmax(logits).numpy()[mask], atol=1e-6)


def test_word_tags_decode_each_sentence_as_one_chain_and_skip_words_without_pieces():
    rng = np.random.default_rng(5)
    labels = ["O", "B-X", "I-X"]
    layer = _random_crf(labels, "bio", rng)
    sentences = [rng.normal(0, 2, (n, 3)).astype("float32") for n in (4, 0, 5)]
    sentences[2][2] = np.nan  # a word with no piece: off the chain
    ids = decoding.word_tags(layer, sentences).to_list()
    assert [len(row) for row in ids] == [4, 0, 5]
    assert ids[2][2] == -1
    for e, got in zip(sentences, ids):
        positions = np.flatnonzero(np.isfinite(e).all(-1))
        _, best, _, _ = _brute_force(layer, labels, "bio", np.nan_to_num(e), positions)
        assert tuple(np.array(got)[positions]) == best


@pytest.fixture(scope="module")
def tiny_data():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 100, (16, 8)).astype("int32")
    x = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
         "input_type_ids": np.zeros_like(ids)}
    labels = np.where(rng.random((16, 8)) < 0.7, ids % 3, -1)  # tags a function of the token
    labels[:, 0] = -1
    return x, labels


def test_the_crf_tagger_trains_on_its_negative_log_likelihood(tiny_data):
    x, labels = tiny_data
    keras.utils.set_random_seed(1)
    tagger = bk.BertTokenClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100),
                                    num_classes=3, crf=True, dropout=0.0)
    assert isinstance(tagger.loss, crf_lib.CRFLoss) and tagger.loss.crf is tagger.crf_layer
    tagger.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = tagger.fit(x, labels, epochs=10, batch_size=16, verbose=0).history["loss"]
    assert abs(history[0] - np.log(3)) < 0.1  # a zero CRF over near-uniform emissions
    assert history[-1] < 0.2 * history[0], history
    assert np.abs(tagger.crf_layer.transitions.numpy()).max() > 0  # the transitions learn
    mask = labels >= 0
    path = tagger.crf_layer.decode(tagger.predict(x, verbose=0), mask).numpy()
    assert (path[mask] == labels[mask]).mean() > 0.9


def test_the_crf_round_trips_through_a_keras_file_and_a_task_directory(tmp_path, tiny_data):
    x, _ = tiny_data
    labels = ["O", "B-X", "I-X"]
    tagger = bk.BertTokenClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100),
                                    num_classes=3, labels=labels, crf=True,
                                    crf_constraints="bio")
    rng = np.random.default_rng(2)
    tagger.crf_layer.set_weights([rng.normal(size=w.shape).astype("float32")
                                  for w in tagger.crf_layer.weights])
    tagger.save(tmp_path / "tagger.keras")
    loaded = keras.saving.load_model(tmp_path / "tagger.keras")
    assert (loaded.crf, loaded.crf_constraints) == (True, "bio")
    assert loaded.get_config()["crf_constraints"] == "bio"
    for mine, theirs in zip(tagger.crf_layer.weights, loaded.crf_layer.weights):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    assert isinstance(loaded.loss, crf_lib.CRFLoss) and loaded.loss.crf is loaded.crf_layer
    mask = np.ones((16, 8), bool)
    np.testing.assert_array_equal(
        tagger.crf_layer.decode(tagger.predict(x, verbose=0), mask).numpy(),
        loaded.crf_layer.decode(loaded.predict(x, verbose=0), mask).numpy())
    plain = bk.BertTokenClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100),
                                   num_classes=3)
    assert "crf" not in plain.get_config() and plain.crf_layer is None
    with pytest.raises(ValueError, match="crf_constraints='bio' needs crf=True"):
        bk.BertTokenClassifier(plain.encoder, num_classes=3, labels=labels,
                               crf_constraints="bio")


def test_a_transformers_checkpoint_starts_the_crf_from_zeros_and_is_not_written_back(tmp_path):
    path = str(FAMILIES / "bert_tagger")
    tagger = bk.BertTokenClassifier.from_pretrained(path, crf=True, crf_constraints="bio")
    plain = bk.BertTokenClassifier.from_pretrained(path)
    assert tagger.labels == ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    for weight in tagger.crf_layer.weights:
        assert not weight.numpy().any()
    words = [["Jesus", "wept", "in", "Bethany", "."]]
    np.testing.assert_allclose(tagger.predict(words).numpy(), plain.predict(words).numpy(),
                               atol=1e-6)  # the checkpoint's head
    with pytest.raises(InputError) as refused:
        bk.save_transformers(tagger, tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message and "CRF (crf=True)" in message, message
    # A task directory keeps its CRF, learned weights included.
    tagger.crf_layer.transitions.assign(np.eye(5, dtype="float32"))
    save_task(str(tmp_path / "task"), tagger, tagger.preprocessor.tokenizer, "tagging",
              tagger.preprocessor.seq_length, labels=tagger.labels)
    with pytest.raises(ValueError, match="tag 'I-LOC' of word 1 of sentence 1 comes after "
                                         "'B-PER', which crf_constraints='bio' forbids"):
        tagger.fit([["Paul"], ["Paul", "Rome"]], [["B-PER"], ["B-PER", "I-LOC"]])
    again = bk.BertTokenClassifier.from_pretrained(str(tmp_path / "task"))
    assert (again.crf, again.crf_constraints) == (True, "bio")
    np.testing.assert_array_equal(again.crf_layer.transitions.numpy(), np.eye(5))
    assert again.tag(words) == tagger.tag(words)
    # Another multiplier keeps the same scores (variables hold scores / multiplier).
    slower = bk.BertTokenClassifier.from_pretrained(str(tmp_path / "task"),
                                                    crf_learning_rate_multiplier=4.0)
    for mine, theirs in zip(slower.crf_layer.scores(), tagger.crf_layer.scores()):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6)
    np.testing.assert_allclose(slower.crf_layer.transitions.numpy(), np.eye(5) * 25)
