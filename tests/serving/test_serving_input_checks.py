"""Serving signatures check their inputs in the graph (issue 27): a bad request fails with an
InvalidArgumentError naming the input, and the same loaded model goes on answering."""

import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the tokenizer ops of the SavedModels)

import bert_keras as bk
from bert_keras.data.pretraining.stages import default_vocab_file
from bert_keras.serving import export
from bert_keras.serving.input_checks import checked_token_ids
from bert_keras.serving.signatures import ServingFunctions
from bert_keras.text.tokenizer import BertTokenizer

from export_harness import _enc, _outputs, run_client

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"
TEXTS_2X2 = [["a fine day", "rain again"], ["sunny", "and cold"]]


def ids(rows):
    return np.array(rows, np.int32)


def refused(fn, name, expected, **inputs):
    """Calls `fn` on `inputs`: it must fail with an InvalidArgumentError whose message names
    `name` and says `expected`. Returns the message."""
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        fn(**{key: tf.constant(value) for key, value in inputs.items()})
    message = str(error.value)
    assert f"{name} must" in message and expected in message, message
    return message


@pytest.fixture(scope="module")
def pairs(tiny_pairs_model):
    """(version dir, tf.saved_model.load of it, encoder vocab size) of conftest's tiny
    BERT text_a/text_b classifier export (type_vocab_size 2, 32 positions)."""
    path = str(tiny_pairs_model["export"])
    return path, tf.saved_model.load(path), export.read_metadata(path)["vocab_size"]


@pytest.fixture(scope="module")
def roberta(family_encoder_export):
    """The RoBERTa family fixture exported as an encoder (1,000 ids, one token type; conftest's
    family_encoder_export: tools/export.py's export at 32 tokens)."""
    return tf.saved_model.load(family_encoder_export("roberta"))


def good_encode_inputs(loaded, **texts):
    return {k: v.numpy() for k, v in loaded.signatures["preprocess"](
        **{name: tf.constant(t) for name, t in texts.items()}).items()}


# -- text inputs: rank 1 only ------------------------------------------------------------------

def test_text_inputs_of_another_rank_are_refused_and_serving_goes_on(pairs):
    _, loaded, _ = pairs
    serve = loaded.signatures["serving_default"]
    # Answered as if it were a batch of two before the check.
    refused(serve, "text_a", "rank-1", text_a=TEXTS_2X2, text_b=["x", "y"])
    refused(serve, "text_b", "rank-1", text_a=["x"], text_b="just one string")
    refused(loaded.signatures["preprocess"], "text_b", "rank-1", text_a=["x", "y"],
            text_b=TEXTS_2X2)
    out = serve(text_a=tf.constant(["a fine day", "rain"]), text_b=tf.constant(["sun", "snow"]))
    assert out["labels"].shape == (2,)


def test_encoder_export_refuses_a_2x2_text(roberta):
    refused(roberta.signatures["serving_default"], "text", "got shape] [2 2]", text=TEXTS_2X2)
    out = roberta.signatures["serving_default"](text=tf.constant(["hi"]))
    assert out["pooled_output"].shape == (1, 32)


# -- token ids in: the encode signature ---------------------------------------------------------

def test_encode_refuses_ids_outside_the_model_and_serving_goes_on(pairs):
    _, loaded, vocab = pairs
    encode = loaded.signatures["encode"]
    good = good_encode_inputs(loaded, text_a=["a fine day"], text_b=["rain"])
    word, mask, types = good["input_word_ids"], good["input_mask"], good["input_type_ids"]
    cases = [
        ("input_word_ids", f"[0, {vocab}) (the vocabulary of the model); got] [-7",
         dict(input_word_ids=word * 0 - 7)),
        ("input_word_ids", f"[0, {vocab}) (the vocabulary of the model); got] [{vocab}",
         dict(input_word_ids=word * 0 + vocab)),
        ("input_type_ids", "[0, 2)", dict(input_type_ids=types * 0 + 2)),
        ("input_type_ids", "[0, 2)", dict(input_type_ids=types * 0 - 1)),
        ("input_mask", "[0, 2)", dict(input_mask=mask * 2)),
        ("input_word_ids", "rank-2", dict(input_word_ids=word[None])),
        ("input_mask", "rank-2", dict(input_mask=mask[0])),
        ("input_type_ids", "the shape of input_word_ids", dict(input_type_ids=types[:, :2])),
        ("input_word_ids", "at most 32 tokens", {k: np.tile(v, (1, 9)) for k, v in good.items()}),
    ]
    for name, expected, bad in cases:
        refused(encode, name, expected, **dict(good, **bad))
    out = encode(**{k: tf.constant(v) for k, v in good.items()})
    assert out["sequence_output"].shape == (1, word.shape[1], 16)


def test_encode_of_a_model_with_one_token_type_takes_only_type_0(roberta):
    encode = roberta.signatures["encode"]
    good = good_encode_inputs(roberta, text=["Hello there.", "Hi"])
    assert not good["input_type_ids"].any()
    refused(encode, "input_type_ids", "[0, 1)",
            **dict(good, input_type_ids=np.ones_like(good["input_type_ids"])))
    refused(encode, "input_word_ids", "[0, 1000)",
            **dict(good, input_word_ids=good["input_word_ids"] * 0 + 1000))
    refused(encode, "input_word_ids", "[0, 1000)",
            **dict(good, input_word_ids=good["input_word_ids"] * 0 - 7))
    out = encode(**{k: tf.constant(v) for k, v in good.items()})
    assert out["pooled_output"].shape == (2, 32)


def test_type_ids_without_a_segment_embedding_are_segment_a_or_b():
    # DistilBERT (type_vocab_size 0) reads no types; its tokenizer sends 0 and 1 for a pair.
    inputs = dict(input_word_ids=ids([[2, 5, 3]]), input_mask=ids([[1, 1, 1]]),
                  input_type_ids=ids([[0, 1, 1]]))
    checked = checked_token_ids(inputs, vocab_size=10, type_vocab_size=0, max_length=8)
    np.testing.assert_array_equal(checked["input_type_ids"], inputs["input_type_ids"])
    refused(lambda **x: checked_token_ids(x, 10, 0, 8), "input_type_ids", "[0, 2)",
            **dict(inputs, input_type_ids=ids([[0, 1, 2]])))


def test_preprocess_of_a_one_type_model_gives_ids_its_encode_takes():
    # A WordPiece tokenizer packs text_b as type 1; a model with one token type reads it as 0,
    # so `preprocess` says 0 and `encode` (which refuses type 1 for it) takes what it gives.
    keras.utils.set_random_seed(0)
    tokenizer = BertTokenizer(default_vocab_file(), lower_case=True)
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=32,
                             type_vocab_size=1)
    info = dict(task="encoder", labels=None, seq_length=16, lower_case=True,
                text_fields=["text_a", "text_b"])
    functions = ServingFunctions(encoder, tokenizer, info)
    packed = functions.preprocess(tf.constant(["a fine day"]), tf.constant(["rain"]))
    assert not packed["input_type_ids"].numpy().any()
    assert functions.encode(**packed)["pooled_output"].shape == (1, 16)


# -- the TF1 Session path, as TF Serving runs a request ----------------------------------------

def test_session_refuses_bad_requests_and_answers_the_next(pairs):
    """TF Serving feeds the request's tensor whatever the signature declares: mapped onto
    placeholders of unknown shape (the Python Session would refuse a 2x2 feed itself), the
    2x2 text reaches the graph as it does in the model server."""
    path, _, vocab = pairs
    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as sess:
        text_a = tf.compat.v1.placeholder(tf.string, shape=None)
        text_b = tf.compat.v1.placeholder(tf.string, shape=None)
        meta = tf.compat.v1.saved_model.loader.load(
            sess, ["serve"], path,
            input_map={"serving_default_text_a:0": text_a, "serving_default_text_b:0": text_b})
        labels = meta.signature_def["serving_default"].outputs["labels"].name
        with pytest.raises(tf.errors.InvalidArgumentError, match="text_a must be a rank-1"):
            sess.run(labels, {text_a: np.array(TEXTS_2X2, object), text_b: ["x", "y"]})
        assert sess.run(labels, {text_a: ["a fine day"], text_b: ["rain"]}).shape == (1,)

        encode = meta.signature_def["encode"]
        feed = {encode.inputs[k].name: v for k, v in dict(
            input_word_ids=ids([[2, -7, 3]]), input_mask=ids([[1, 1, 1]]),
            input_type_ids=ids([[0, 0, 0]])).items()}
        pooled = encode.outputs["pooled_output"].name
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=rf"input_word_ids must be in \[0, {vocab}\)"):
            sess.run(pooled, feed)
        feed[encode.inputs["input_word_ids"].name] = ids([[2, 7, 3]])
        assert sess.run(pooled, feed).shape == (1, 16)


@pytest.mark.slow
def test_served_without_the_project_a_bad_request_fails_and_the_next_is_answered(tmp_path,
                                                                                 pairs):
    path, _, vocab = pairs
    good = dict(input_word_ids=ids([[2, 7, 3]]), input_mask=ids([[1, 1, 1]]),
                input_type_ids=ids([[0, 0, 1]]))
    bad = dict(good, input_mask=ids([[1, 2, 1]]))
    requests = {path: [["encode", {k: _enc(v) for k, v in bad.items()}],
                       ["encode", {k: _enc(v) for k, v in good.items()}]]}
    results = [r for r in run_client(tmp_path, [path], requests)["exports"][path]
               if not r["warmup"]]
    for loader in ("tf1_error", "tf2_error"):
        assert "InvalidArgumentError" in results[0][loader], results[0]
        assert "input_mask must be in [0, 2)" in results[0][loader], results[0]
    assert _outputs(results[1])["pooled_output"].shape == (1, 16)
