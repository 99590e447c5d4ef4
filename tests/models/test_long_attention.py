"""The blocked sliding-window and the row-chunked global attention paths equal the full
T x T scores with a band mask, at every length and padding, eagerly and in graphs whose
length is unknown until run time, forward and backward."""

import contextlib

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.models.layers import local_attention, query_chunks
from bert_keras.models.layers.attention import SelfAttention
from bert_keras.names import INPUT_NAMES

HIDDEN, HEADS = 16, 2


def attention(half_window):
    layer = SelfAttention(HEADS, dropout=0.0, rotary_theta=10000.0, half_window=half_window)
    layer.build((None, None, HIDDEN))
    return layer


def inputs(length, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, length, HIDDEN)).astype("float32")
    mask = np.ones((2, length), "int32")
    mask[1, length - length // 3:] = 0  # the second sequence padded
    return x, mask


@contextlib.contextmanager
def blocks(choice):
    """The blocked path forced on (True) or off (False)."""
    saved = local_attention.use_blocks
    local_attention.use_blocks = lambda length, half_window: choice
    try:
        yield
    finally:
        local_attention.use_blocks = saved


def full_path(layer, x, mask):
    """The full (B, N, T, T) scores with the band mask: the reference."""
    with blocks(False):
        return layer(x, mask).numpy()


@pytest.mark.parametrize("length", [17, 24, 29])
def test_blocked_local_attention_equals_the_band_masked_scores(length):
    layer = attention(half_window=3)
    x, mask = inputs(length)
    assert local_attention.use_blocks(length, 3)
    expected = full_path(layer, x, mask)
    got = layer(x, mask).numpy()
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], expected[real], atol=1e-5)
    # A length unknown when tracing: the choice is made in the graph.
    spec = [tf.TensorSpec((None, None, HIDDEN), tf.float32), tf.TensorSpec((None, None), tf.int32)]
    traced = tf.function(lambda a, m: layer(a, m), input_signature=spec)
    np.testing.assert_allclose(traced(x, mask).numpy()[real], expected[real], atol=1e-5)
    short_x, short_mask = inputs(7)  # below the threshold in the same graph: the full path
    np.testing.assert_allclose(traced(short_x, short_mask).numpy(),
                               full_path(layer, short_x, short_mask), atol=1e-5)


def test_blocked_local_attention_gradients_equal_the_full_path():
    layer = attention(half_window=3)
    x, mask = inputs(20)
    weights = tf.constant(np.random.default_rng(1).normal(size=(2, 20, HIDDEN)), tf.float32)
    real = tf.constant(mask[:, :, None], tf.float32)

    def gradient(blocked):
        with blocks(blocked), tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x, mask, training=True) * weights * real)
        return [g.numpy() for g in tape.gradient(loss, layer.trainable_variables)]

    for got, expected in zip(gradient(True), gradient(False), strict=True):
        np.testing.assert_allclose(got, expected, atol=1e-4)


def test_global_attention_in_row_chunks_equals_the_full_scores(monkeypatch):
    layer = attention(half_window=None)
    x, mask = inputs(40)
    expected = layer(x, mask).numpy()
    monkeypatch.setattr(query_chunks, "SCORE_BUDGET", HEADS * 40 * 9)  # 9 rows a chunk
    monkeypatch.setattr(query_chunks, "MIN_ROWS", 1)
    assert query_chunks.needs_chunks(40, HEADS)
    np.testing.assert_allclose(layer(x, mask).numpy(), expected, atol=1e-5)
    spec = [tf.TensorSpec((None, None, HIDDEN), tf.float32), tf.TensorSpec((None, None), tf.int32)]
    traced = tf.function(lambda a, m: layer(a, m), input_signature=spec)
    np.testing.assert_allclose(traced(x, mask).numpy(), expected, atol=1e-5)
    graph = traced.get_concrete_function().graph.as_graph_def()
    ops = {node.op for node in graph.node} | {node.op for f in graph.library.function
                                              for node in f.node_def}
    assert {"While", "StatelessWhile"} & ops  # the chunk loop is in the graph


def test_attention_dropout_trains_where_the_length_picks_the_path_in_the_graph():
    """A sliding-window layer with attention dropout, traced with the length unknown (a
    tf.cond picks the blocked or the full path): its gradient reaches every weight, and the
    dropout (whose seed is drawn outside the cond) drops."""
    layer = SelfAttention(HEADS, dropout=0.5, rotary_theta=10000.0, half_window=3)
    layer.build((None, None, HIDDEN))
    spec = [tf.TensorSpec((None, None, HIDDEN), tf.float32), tf.TensorSpec((None, None), tf.int32)]

    @tf.function(input_signature=spec)
    def step(x, mask):
        with tf.GradientTape() as tape:
            out = layer(x, mask, training=True)
            loss = tf.reduce_sum(out * out)
        return out, tape.gradient(loss, layer.trainable_variables)

    x, mask = inputs(20)
    first, gradients = step(x, mask)
    assert all(g is not None and np.isfinite(g.numpy()).all() for g in gradients)
    assert not np.allclose(first.numpy(), step(x, mask)[0].numpy())  # a new mask each step


def graph_ops(layer):
    spec = [tf.TensorSpec((None, None, HIDDEN), tf.float32), tf.TensorSpec((None, None), tf.int32)]
    graph = tf.function(lambda a, m: layer(a, m), input_signature=spec).get_concrete_function(
        ).graph.as_graph_def()
    return {node.op for node in graph.node} | {node.op for f in graph.library.function
                                               for node in f.node_def}


def test_max_length_keeps_the_long_input_paths_out_of_the_graph():
    for half_window in (3, None):
        assert {"If", "StatelessIf"} & graph_ops(attention(half_window))
        short = SelfAttention(HEADS, half_window=half_window, max_length=12)
        short.build((None, None, HIDDEN))
        assert not {"If", "StatelessIf", "While", "StatelessWhile"} & graph_ops(short)


def test_an_encoder_of_short_inputs_traces_no_length_switch():
    """BERT's 512 positions never reach either long-input path: its graphs keep the one full
    path, whatever the length they are traced with. (Their only conds are the unpadded
    path's switch for a batch without padding, with no attention in a branch.)"""
    encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100)
    spec = {name: tf.TensorSpec((None, None), tf.int32) for name in INPUT_NAMES}
    graph = tf.function(lambda x: encoder(x)["sequence_output"], input_signature=[spec]
                        ).get_concrete_function().graph.as_graph_def()
    functions = {f.signature.name: f for f in graph.library.function}
    nodes = [*graph.node, *(node for f in functions.values() for node in f.node_def)]
    assert not {"While", "StatelessWhile"} & {node.op for node in nodes}
    branches = [functions[node.attr[name].func.name] for node in nodes
                if node.op in ("If", "StatelessIf") for name in ("then_branch", "else_branch")]
    assert branches  # the padding switch
    assert not any(node.op.startswith("BatchMatMul") for f in branches for node in f.node_def)
