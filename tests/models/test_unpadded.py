"""Unpadded inference (models/layers/packing.py): the blocks' dense work on the real tokens
alone gives the padded path's outputs at every real row and zeros at padded rows, for global
attention (BERT), local windows (ModernBERT, window 8 below the length 20: the blocked path)
and disentangled attention (DeBERTa-v3); the export serves that way."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.models.encoder.inference import inference_function
from bert_keras.models.layers.packing import PackedRows

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"
CASES = ["bert_tagger", "modernbert", "deberta_v3"]


@pytest.fixture(scope="module", params=CASES)
def encoder(request):
    return bk.BertEncoder.from_pretrained(str(FAMILIES / request.param))


def mixed_batch(vocab_size, lengths=(20, 1, 7, 13), length=20, seed=0):
    """Rows of `lengths` real tokens (a full row and a one-token row among them), padded."""
    rng = np.random.default_rng(seed)
    mask = (np.arange(length)[None] < np.array(lengths)[:, None]).astype("int32")
    return dict(input_word_ids=rng.integers(1, vocab_size, mask.shape).astype("int32") * mask,
                input_mask=mask, input_type_ids=np.zeros_like(mask))


def assert_unpadded_outputs(got, want, mask):
    """Real rows within float32 rounding of the padded path's, padded rows zero."""
    np.testing.assert_allclose(got[mask], want[mask], atol=1e-5)
    np.testing.assert_array_equal(got[~mask], 0.0)


def test_unpadded_equals_the_padded_path_on_real_rows(encoder):
    inputs = mixed_batch(encoder.vocab_size)
    mask = inputs["input_mask"].astype(bool)
    unpadded = encoder(inputs, training=False)
    padded = encoder(inputs, training=False, unpadded=False)
    assert np.abs(np.asarray(padded["sequence_output"])[~mask]).max() > 0  # the paths differ
    for got, want in zip([unpadded["sequence_output"], *unpadded["encoder_outputs"]],
                         [padded["sequence_output"], *padded["encoder_outputs"]]):
        assert_unpadded_outputs(np.asarray(got), np.asarray(want), mask)
    np.testing.assert_allclose(unpadded["pooled_output"], padded["pooled_output"], atol=1e-5)


def test_unpadded_in_a_graph_of_unknown_shapes(encoder):
    inputs = mixed_batch(encoder.vocab_size, lengths=(3, 20, 1), seed=1)
    mask = inputs["input_mask"].astype(bool)
    got = inference_function(encoder)(inputs)["sequence_output"].numpy()
    want = encoder(inputs, training=False, unpadded=False)["sequence_output"].numpy()
    assert_unpadded_outputs(got, want, mask)


def test_unpadded_with_output_positions(encoder):
    inputs = mixed_batch(encoder.vocab_size)
    positions = np.array([[0, 5]] * 4, "int32")
    got = encoder(inputs, training=False, output_positions=positions)["sequence_output"]
    want = encoder(inputs, training=False, unpadded=False)["sequence_output"].numpy()
    real = inputs["input_mask"][:, [0, 5]].astype(bool)
    assert_unpadded_outputs(np.asarray(got), want[:, [0, 5]], real)  # row 1 has 1 token


@pytest.mark.parametrize("lengths", [(0, 0), (20, 20)], ids=["all_padding", "no_padding"])
def test_batches_of_no_real_token_or_no_padding(encoder, lengths):
    inputs = mixed_batch(encoder.vocab_size, lengths=lengths)
    mask = inputs["input_mask"].astype(bool)
    got = encoder(inputs, training=False)["sequence_output"].numpy()
    assert_unpadded_outputs(got, encoder(inputs, training=False, unpadded=False)[
        "sequence_output"].numpy(), mask)


def test_a_batch_without_padding_is_not_gathered():
    """No padding (every batch of one text): pack and unpack only reshape, in a graph too."""
    x = np.random.default_rng(2).normal(size=(2, 3, 4)).astype("float32")

    @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32)])
    def round_trip(mask):
        packed = PackedRows(mask)
        return packed.unpadded, packed.pack(x), packed.unpack(packed.pack(x))

    unpadded, rows, back = round_trip(tf.ones((2, 3), tf.int32))
    assert bool(unpadded)
    np.testing.assert_array_equal(rows, x.reshape(6, 4))
    np.testing.assert_array_equal(back, x)
    unpadded, rows, back = round_trip(tf.constant([[1, 1, 1], [1, 0, 0]]))
    assert not bool(unpadded)
    np.testing.assert_array_equal(rows, x.reshape(6, 4)[:4])
    np.testing.assert_array_equal(back, x * [[[1], [1], [1]], [[1], [0], [0]]])


def test_training_runs_the_padded_graph():
    encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100, num_layers=1, dropout=0.0,
                                         attention_dropout=0.0)
    inputs = mixed_batch(100)
    trained = encoder(inputs, training=True)["sequence_output"].numpy()
    padded = encoder(inputs, training=False, unpadded=False)["sequence_output"].numpy()
    np.testing.assert_allclose(trained, padded, atol=1e-5)  # padded rows too: not zeroed
    assert np.abs(trained[~inputs["input_mask"].astype(bool)]).min() > 0


def test_the_export_serves_unpadded(family_encoder_export):
    """`encode` of the exported ModernBERT encoder: the model's outputs on real rows, zeros
    at padded rows, as only the unpadded path gives."""
    loaded = tf.saved_model.load(family_encoder_export("modernbert"))
    encoder = bk.BertEncoder.from_pretrained(str(FAMILIES / "modernbert"))
    inputs = mixed_batch(encoder.vocab_size, lengths=(20, 1, 7, 13))
    served = loaded.signatures["encode"](**{k: tf.constant(v) for k, v in inputs.items()})
    want = encoder(inputs, training=False, unpadded=False)["sequence_output"].numpy()
    assert_unpadded_outputs(served["sequence_output"].numpy(), want,
                            inputs["input_mask"].astype(bool))
