"""BertEmbedder: sentence embeddings equal to the sentence-transformers recipe run by
transformers (tests/fixtures/make_embedding_references.py) for every family and the real
all-MiniLM-L6-v2, each pooling against numpy on transformers' hidden states, fine-tuning with
in-batch negatives, Matryoshka cuts (truncate_dim, matryoshka_dims; sentence-transformers'
truncate_dim on all-MiniLM-L6-v2 from tests/fixtures/make_matryoshka_references.py), the .keras
round trip, every checkpoint layout, and bad input."""

import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.tasks.embedding.matryoshka import matryoshka_cuts, matryoshka_loss
from bert_keras.tasks.embedding.model import BertEmbedder, MultipleNegativesRankingLoss
from bert_keras.tasks.embedding.pooling import SentencePooling

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures"
FAMILIES = FIXTURES / "families"
VOCAB = FIXTURES.parents[1] / "bert_keras" / "assets" / "vocab.txt"
REF = np.load(FIXTURES / "embedding_references.npz")
MATRYOSHKA_REF = np.load(FIXTURES / "matryoshka_references.npz")
TEXTS = [str(t) for t in REF["texts"]]
# The fixture of each family (as make_embedding_references.py names them).
FIXTURE_DIRS = {"bert": "bert_tagger", "roberta": "roberta", "albert": "albert",
                "distilbert": "distilbert", "electra": "electra_discriminator"}
LONG = {"minilm": 128}  # the fixtures': their position table, 64
PAIRS = (["Jesus wept.", "In the beginning God created the heavens.", "The LORD is my shepherd.",
          "Blessed are the meek.", "Love your enemies.", "Let there be light."],
         ["Jesus cried.", "God made the sky and the earth at the start.",
          "Yahweh is my shepherd.", "The gentle are blessed.", "Love those who hate you.",
          "Light, be!"])


def _path(name, minilm_dir):
    return minilm_dir if name == "minilm" else FAMILIES / FIXTURE_DIRS[name]


def _pool_numpy(hidden, mask, pooling, normalize):
    """sentence-transformers' Pooling and Normalize modules, in numpy (float64)."""
    hidden, m = hidden.astype(np.float64), mask[:, :, None].astype(np.float64)
    if pooling == "mean":
        pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    elif pooling == "max":
        pooled = np.where(m > 0, hidden, -1e9).max(1)
    else:
        pooled = hidden[:, 0]
    if normalize:
        pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return pooled


@pytest.mark.parametrize("name", ["bert", "roberta", "albert", "distilbert", "electra", "minilm"])
def test_embeddings_equal_sentence_transformers_recipe(name, minilm_dir):
    """Mean pooling + L2 of transformers' last hidden state, texts cut at seq_length 16 and
    uncut, within 1e-4; the packed ids are transformers' too. (`predict` on the raw texts
    cut, the model called on the packed ids uncut: a second predict would trace again.)"""
    embedder = bk.BertEmbedder.from_pretrained(_path(name, minilm_dir), pooling="mean",
                                               normalize=True, seq_length=16)
    for seq_length in (16, LONG.get(name, 64)):
        key = f"{name}_{seq_length}"
        embedder.preprocessor.seq_length = seq_length
        x = embedder.preprocessor(TEXTS)
        np.testing.assert_array_equal(x["input_word_ids"].numpy(), REF[f"{key}_input_ids"],
                                      err_msg=key)
        got = (embedder.predict(TEXTS, verbose=0) if seq_length == 16
               else embedder(x, training=False).numpy())
        assert got.dtype == np.float32 and got.shape == REF[f"{key}_embeddings"].shape
        np.testing.assert_allclose(got, REF[f"{key}_embeddings"], atol=1e-4, err_msg=key)
        print(key, "max |diff|", float(np.abs(got - REF[f"{key}_embeddings"]).max()))


@pytest.mark.parametrize("name", ["bert", "roberta", "albert", "distilbert", "electra"])
def test_poolings_equal_numpy_on_transformers_hidden_states(name):
    """Each pooling, normalized or not, called on the packed texts (eagerly: `predict` on raw
    texts traces a function for each of these models; test_embeddings_equal_... runs it)."""
    key = f"{name}_16"
    hidden, mask = REF[f"{key}_sequence_output"], REF[f"{key}_input_mask"]
    encoder = bk.BertEmbedder.from_pretrained(FAMILIES / FIXTURE_DIRS[name], seq_length=16).encoder
    pre = bk.TextPreprocessor(bk.load_tokenizer(FAMILIES / FIXTURE_DIRS[name]), seq_length=16)
    x = pre(TEXTS)
    for pooling in bk.POOLINGS:
        for normalize in (False, True):
            embedder = BertEmbedder(encoder, pooling=pooling, normalize=normalize,
                                    preprocessor=pre)
            got = embedder(x, training=False).numpy()
            want = _pool_numpy(hidden, mask, pooling, normalize)
            np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-5,
                                       err_msg=f"{name} {pooling} {normalize}")


def test_minilm_poolings_equal_numpy_on_reference_hidden_states(minilm_dir):
    ref = np.load(FIXTURES / "minilm_reference.npz")
    texts = [str(t) for t in ref["singles"]]
    hidden, mask = ref["single_sequence_output"], ref["single_input_mask"]
    first = bk.BertEmbedder.from_pretrained(minilm_dir, pooling="mean", normalize=False)
    x = first.preprocessor(texts)
    for pooling in bk.POOLINGS:
        embedder = BertEmbedder(first.encoder, pooling=pooling, normalize=False,
                                preprocessor=first.preprocessor)
        np.testing.assert_allclose(embedder(x, training=False).numpy(),
                                   _pool_numpy(hidden, mask, pooling, False), atol=1e-4,
                                   err_msg=pooling)


def test_pooling_layer_config_and_padding_rows_ignored(assert_config_round_trip):
    layer = SentencePooling("max", normalize=True)
    assert_config_round_trip(layer)
    x = np.array([[[1., -5.], [2., -3.], [100., 100.]]], "float32")  # the last row is padding
    np.testing.assert_allclose(SentencePooling("max")(x, np.array([[1, 1, 0]])), [[2., -3.]])
    np.testing.assert_allclose(SentencePooling("mean")(x, np.array([[1, 1, 0]])), [[1.5, -4.]])


def test_ranking_loss_equals_numpy_cross_entropy_over_scaled_cosines():
    rng = np.random.default_rng(0)
    anchors, positives = rng.normal(size=(5, 8)), rng.normal(size=(5, 8))
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    logits = 7.0 * unit(anchors) @ unit(positives).T
    logits -= logits.max(1, keepdims=True)
    want = np.mean(np.log(np.exp(logits).sum(1)) - np.diag(logits))
    y_pred = np.concatenate([anchors, positives]).astype("float32")
    got = MultipleNegativesRankingLoss(scale=7.0)(np.zeros(10), y_pred)
    assert float(got) == pytest.approx(want, rel=1e-5)


def _tiny_text_embedder():
    # A tiny encoder over the bundled vocab, without dropout: the random family fixtures
    # (weights N(0, 0.3)) embed every text in almost the same direction.
    keras.utils.set_random_seed(0)
    tokenizer = bk.BertTokenizer(str(VOCAB), lower_case=True)
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=32, dropout=0.0,
                             attention_dropout=0.0)
    return bk.BertEmbedder(encoder, preprocessor=bk.TextPreprocessor(tokenizer, 16))


def test_truncate_dim_is_sentence_transformers_cut_then_normalized(minilm_dir):
    """all-MiniLM-L6-v2 with truncate_dim=D: sentence-transformers' `encode(truncate_dim=D,
    normalize_embeddings=True)`, which is numpy's cut of the full embedding, renormalized."""
    full = REF["minilm_128_embeddings"]
    embedder = bk.BertEmbedder.from_pretrained(minilm_dir, truncate_dim=64)
    # Each model called on the packed texts (predict would trace a function for each; the
    # raw-text predict of MiniLM is test_embeddings_equal_sentence_transformers_recipe's).
    x = embedder.preprocessor(TEXTS)
    for dim in (64, 128):
        if dim != 64:
            embedder = BertEmbedder(embedder.encoder, truncate_dim=dim,
                                    preprocessor=embedder.preprocessor)
        got = embedder(x, training=False).numpy()
        cut = full[:, :dim] / np.linalg.norm(full[:, :dim], axis=1, keepdims=True)
        np.testing.assert_allclose(got, cut, atol=1e-4, err_msg=str(dim))
        np.testing.assert_allclose(got, MATRYOSHKA_REF[f"minilm_128_{dim}"], atol=1e-4)
        print(dim, "max |diff| from sentence-transformers",
              float(np.abs(got - MATRYOSHKA_REF[f"minilm_128_{dim}"]).max()))
    # Without normalize: the first D values of the pooled vector, untouched.
    plain = BertEmbedder(embedder.encoder, normalize=False, preprocessor=embedder.preprocessor)
    cut = BertEmbedder(embedder.encoder, normalize=False, truncate_dim=8,
                       preprocessor=embedder.preprocessor)
    np.testing.assert_allclose(cut(x, training=False), plain(x, training=False)[:, :8],
                               atol=1e-6)


def test_matryoshka_loss_is_the_weighted_sum_over_renormalized_cuts():
    rng = np.random.default_rng(1)
    y_pred = rng.normal(size=(6, 8)).astype("float32")  # 3 anchors, 3 positives
    loss = MultipleNegativesRankingLoss(scale=5.0)

    def cut(d):
        return y_pred[:, :d] / np.linalg.norm(y_pred[:, :d], axis=1, keepdims=True)

    got = matryoshka_loss(lambda e: loss(np.zeros(6), e), y_pred,
                          matryoshka_cuts([2, 8, 4], [0.5, 1, 2], width=8))
    want = sum(w * float(loss(np.zeros(6), cut(d))) for d, w in ((2, .5), (8, 1.), (4, 2.)))
    assert float(got) == pytest.approx(want, rel=1e-5)


def test_matryoshka_fit_lowers_the_loss_at_each_cut():
    embedder = _tiny_text_embedder()
    embedder.compile(optimizer=bk.AdamW(learning_rate=1e-2))
    dims = (16, 8, 4)
    loss = MultipleNegativesRankingLoss()

    def losses():  # the loss of BertEmbedder(truncate_dim=d) on the pairs, for each d
        vectors = embedder.predict(PAIRS[0] + PAIRS[1], verbose=0)  # anchors, then positives
        cut = {d: vectors[:, :d] / np.linalg.norm(vectors[:, :d], axis=1, keepdims=True)
               for d in dims}
        return {d: float(loss(np.zeros(12), cut[d])) for d in dims}

    before = losses()
    embedder.fit(PAIRS, epochs=3, batch_size=6, matryoshka_dims=list(dims), verbose=0)
    after = losses()
    print("loss per cut before", before, "after", after)
    assert all(after[d] < 0.5 * before[d] for d in dims), (before, after)
    # The fit's loss was for that fit only: evaluate reports the full-width loss again.
    assert embedder.evaluate(PAIRS, batch_size=6, verbose=0, return_dict=True)["loss"] == (
        pytest.approx(after[16], rel=1e-4))


def test_fit_on_pairs_lowers_the_ranking_loss():
    embedder = _tiny_text_embedder()
    assert embedder.pooling == "mean" and embedder.normalize and embedder.scale == 20.0
    embedder.compile(optimizer=bk.AdamW(learning_rate=1e-2))
    before = embedder.evaluate(PAIRS, verbose=0, return_dict=True)["loss"]
    history = embedder.fit(PAIRS, epochs=3, batch_size=6, verbose=0)
    after = embedder.evaluate(PAIRS, verbose=0, return_dict=True)["loss"]
    assert after < 0.1 * before, (before, history.history["loss"], after)
    assert embedder.preprocessor.text_fields == ("text",)  # it still embeds single texts
    assert not any("pooler" in w.path for w in embedder.trainable_weights)
    # A dataset of pairs, and validation pairs.
    ds = tf.data.Dataset.from_tensor_slices(PAIRS)
    history = embedder.fit(ds, batch_size=3, validation_data=PAIRS, verbose=0)
    assert sorted(history.history) == ["loss", "val_loss"]
    history = embedder.fit(PAIRS, validation_split=0.5, verbose=0)
    assert sorted(history.history) == ["loss", "val_loss"]


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_keras_round_trip_on_ids(pooling, tiny_encoder, assert_round_trip):
    truncate_dim = 8 if pooling == "mean" else None
    embedder = BertEmbedder(tiny_encoder(), pooling=pooling, normalize=pooling != "max",
                            scale=10.0, truncate_dim=truncate_dim)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], "int32")
    loaded = assert_round_trip(embedder, dict(input_word_ids=mask * [3, 4, 5, 6, 7],
                                              input_mask=mask, input_type_ids=0 * mask))
    assert (loaded.pooling, loaded.normalize, loaded.scale) == (pooling, pooling != "max", 10.0)
    assert loaded.truncate_dim == truncate_dim
    assert loaded.outputs[0].shape[-1] == (truncate_dim or 16)
    assert loaded.loss.scale == 10.0


def test_keras_round_trip_of_a_fine_tuned_text_embedder(tmp_path):
    embedder = bk.BertEmbedder.from_pretrained(FAMILIES / "roberta", pooling="cls",
                                               seq_length=16)
    embedder.fit(PAIRS, epochs=1, verbose=0)
    path = tmp_path / "embedder.keras"
    embedder.save(path)
    loaded = keras.models.load_model(path)  # no custom_objects
    assert type(loaded) is BertEmbedder and loaded.pooling == "cls"
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), embedder.predict(TEXTS, verbose=0),
                               atol=1e-6)


def test_every_checkpoint_layout(tmp_path):
    """Our own checkpoint directory and a task directory give transformers' embeddings."""
    source = FAMILIES / "albert"
    want = REF["albert_16_embeddings"]
    encoder = bk.BertEncoder.from_pretrained(source)
    tokenizer = bk.load_tokenizer(source)
    encoder.save_pretrained(str(tmp_path / "own"), tokenizer=tokenizer)
    classifier = bk.BertClassifier(encoder, num_classes=2)
    bk.save_task(str(tmp_path / "task"), classifier, tokenizer, "classification", 16)
    for directory in (tmp_path / "own", tmp_path / "task"):
        embedder = bk.BertEmbedder.from_pretrained(directory, seq_length=16)
        np.testing.assert_allclose(embedder.predict(TEXTS, verbose=0), want, atol=1e-4,
                                   err_msg=str(directory))


def test_bad_input_is_one_clear_line(tiny_encoder):
    with pytest.raises(ValueError, match=r"pooling must be one of \('mean', 'cls', 'max'\), "
                                         r"got 'sum'"):
        BertEmbedder(tiny_encoder(), pooling="sum")
    with pytest.raises(ValueError, match="truncate_dim=17 is more than the encoder's hidden "
                                         "size 16"):
        BertEmbedder(tiny_encoder(), truncate_dim=17)
    with pytest.raises(ValueError, match="truncate_dim must be a positive integer"):
        BertEmbedder(tiny_encoder(), truncate_dim=0)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'truncate_dimension' "
                                        r"\(did you mean 'truncate_dim'\?\)"):
        bk.BertEmbedder.from_pretrained(FAMILIES / "distilbert", truncate_dimension=8)
    embedder = bk.BertEmbedder.from_pretrained(FAMILIES / "distilbert", seq_length=16)
    with pytest.raises(ValueError, match="without labels"):
        embedder.fit(PAIRS, np.zeros(6), verbose=0)
    with pytest.raises(ValueError, match="6 anchors but 5 positives"):
        embedder.fit((PAIRS[0], PAIRS[1][:5]), verbose=0)
    with pytest.raises(ValueError, match="embeds single texts"):
        embedder.predict(PAIRS, verbose=0)
    with pytest.raises(ValueError, match="matryoshka_dims: 64 is more than the embedding's 32"):
        embedder.fit(PAIRS, matryoshka_dims=[64, 8], verbose=0)
    with pytest.raises(ValueError, match="matryoshka_weights: 1 weights for 2"):
        embedder.fit(PAIRS, matryoshka_dims=[32, 8], matryoshka_weights=[1], verbose=0)
