"""residual_dropout_norm (the XLA-compiled LayerNorm(x + dropout(h)) of train steps) against
the same math by TensorFlow's autodiff, and the transformer block that uses it; a bfloat16
export's layer norms fused by oneDNN (fusable_layer_norm)."""

import os
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.models.layers.dropout_mask import keep_mask
from bert_keras.models.layers.residual_norm import residual_dropout_norm
from bert_keras.models.layers.transformer import TransformerBlock
from bert_keras.serving import export
from bert_keras.text.tokenizer import BertTokenizer

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"

ROWS, WIDTH, EPSILON = 64, 32, 1e-12


def _reference(x, h, keep, rate, gamma, beta):
    """float32 autodiff of LayerNorm(x + dropout(h)) with the same kept elements."""
    x, h = tf.cast(x, tf.float32), tf.cast(h, tf.float32)
    if keep is not None:
        h = tf.where(keep, h / (1.0 - rate), 0.0)
    s = x + h
    mean, variance = tf.nn.moments(s, axes=[-1], keepdims=True)
    return (s - mean) * tf.math.rsqrt(variance + EPSILON) * gamma + beta


def _values_and_gradients(fn, x, h, gamma, beta, upstream):
    with tf.GradientTape() as tape:
        tape.watch([x, h, gamma, beta])
        y = fn(x, h, gamma, beta)
    grads = tape.gradient(y, [x, h, gamma, beta], output_gradients=tf.cast(upstream, y.dtype))
    return [tf.cast(t, tf.float32).numpy() for t in [y, *grads]]


@pytest.mark.parametrize("rate", [0.0, 0.1])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_values_and_gradients_equal_autodiff(rate, dtype):
    rng = np.random.default_rng(0)
    x, h = (tf.constant(rng.normal(size=(ROWS, WIDTH)), dtype) for _ in range(2))
    gamma = tf.constant(rng.normal(1.0, 0.2, size=WIDTH), tf.float32)
    beta = tf.constant(rng.normal(0.0, 0.2, size=WIDTH), tf.float32)
    upstream = tf.cast(tf.constant(rng.normal(size=(ROWS, WIDTH)), dtype), tf.float32)
    seed = None if rate == 0 else tf.constant([5, 9], tf.int64)
    keep = None if rate == 0 else keep_mask(seed, (ROWS, WIDTH), rate)  # the mask it draws

    fused = _values_and_gradients(
        lambda *a: residual_dropout_norm(a[0], a[1], seed, rate, a[2], a[3], EPSILON),
        x, h, gamma, beta, upstream)
    expected = _values_and_gradients(
        lambda *a: _reference(a[0], a[1], keep, rate, a[2], a[3]), x, h, gamma, beta, upstream)
    # bfloat16: the fused forward rounds once, the gradients of x and h once (8 bits).
    tolerance = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-2, atol=2e-2)
    for name, got, want in zip(["y", "dx", "dh", "dgamma", "dbeta"], fused, expected):
        np.testing.assert_allclose(got, want, err_msg=name, **tolerance)
    if keep is not None:  # the dropped elements of h get no gradient
        assert np.all(fused[2][~keep.numpy()] == 0)


def test_block_train_step_without_dropout_equals_inference():
    """The train step's compiled pieces (activation, residual norm), values and
    gradients, against the inference path's TensorFlow ops."""
    block = TransformerBlock(num_heads=2, intermediate_size=16, dropout=0.0,
                                    attention_dropout=0.0)
    x = tf.constant(np.random.default_rng(1).normal(size=(2, 5, 8)), tf.float32)
    mask = np.ones((2, 5), "int32")
    block(x, mask)  # builds
    upstream = tf.constant(np.random.default_rng(2).normal(size=(2, 5, 8)), tf.float32)
    results = []
    for training in (True, False):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = block(x, mask, training=training)
        grads = tape.gradient(y, [x, *block.trainable_weights], output_gradients=upstream)
        results.append([y, *grads])
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)



@pytest.mark.skipif(os.environ.get("TF_ENABLE_ONEDNN_OPTS") != "1",
                    reason="the _MklLayerNorm fusion is oneDNN's")
def test_a_bfloat16_export_runs_every_layer_norm_fused(tmp_path):
    """The embeddings' norm too (its (B, T, H) input once stayed an unfused FusedBatchNormV3):
    each of bert_tiny's 5 norms one _MklLayerNorm in grappler's graph of a served call."""
    encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=1000)
    tokenizer = BertTokenizer(str(FAMILIES / "bert_tagger" / "vocab.txt"))
    info = dict(task="encoder", labels=None, seq_length=16, lower_case=True,
                text_fields=["text"])
    path = export.export_saved_model(encoder, tokenizer, info, str(tmp_path), "tiny",
                                     dtype="bfloat16")
    metadata = tf.compat.v1.RunMetadata()
    with tf.compat.v1.Session(graph=tf.Graph()) as session:
        signature = tf.compat.v1.saved_model.loader.load(
            session, ["serve"], path).signature_def["encode"]
        ids = np.array([[2, 7, 9, 3]], "int32")
        feed = {signature.inputs["input_word_ids"].name: ids,
                signature.inputs["input_mask"].name: np.ones_like(ids),
                signature.inputs["input_type_ids"].name: np.zeros_like(ids)}
        session.run(signature.outputs["sequence_output"].name, feed, run_metadata=metadata,
                    options=tf.compat.v1.RunOptions(output_partition_graphs=True))
    ops = [node.op for part in metadata.partition_graphs for node in part.node]
    assert ops.count("_MklLayerNorm") == 5 and not any("BatchNorm" in op for op in ops), ops
