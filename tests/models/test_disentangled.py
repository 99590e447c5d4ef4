"""models.layers.disentangled: DeBERTa's relative terms read from the table's used rows at one
flat index equal the terms scored from the whole table per (query, key); no (B, N, Q, T)
index is built; bfloat16 stays close to float32 (the fixture tests/fixtures/families/deberta_v3,
whose float32 parity is tests/families/test_families.py's)."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.models.encoder.inference import cast_for_inference
from bert_keras.models.layers import disentangled
from bert_keras.models.layers.attention import SelfAttention

SPAN, DISTANCE = 8, 16  # exact distances below 4, log buckets to 16, clipped beyond
FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families" / "deberta_v3"


def _inputs(batch, rows, length, heads=2, size=4, width=6, seed=0):
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(batch, heads, rows, size)).astype("float32")
    key = rng.normal(size=(batch, heads, length, size)).astype("float32")
    table = rng.normal(size=(2 * SPAN, width)).astype("float32")
    projections = rng.normal(size=(2, heads, width, size)).astype("float32")
    return query, key, table, projections


def _project(table, projections):
    """(R, H) rows -> the relative query and key, 2 x (N, R, D)."""
    return [np.einsum("rh,nhd->nrd", np.asarray(table), p) for p in projections]


def _reference(terms, query, key, table, projections, query_rows, length):
    """Each (query, key)'s terms from the whole table: q_i . K_rel[idx] + k_j . Q_rel[idx]."""
    index = disentangled.relative_index(query_rows, length, SPAN, True, DISTANCE).numpy()
    index = np.broadcast_to(index, (query.shape[0],) + index.shape[1:])  # (B, Q, T)
    relative_query, relative_key = _project(table, projections)
    scores = np.zeros(query.shape[:3] + (length,), "float32")
    if "c2p" in terms:
        scores += np.einsum("bnid,nbijd->bnij", query, relative_key[:, index])
    if "p2c" in terms:
        scores += np.einsum("bnjd,nbijd->bnij", key, relative_query[:, index])
    return scores * disentangled.score_scale(terms, query.shape[-1])


@pytest.mark.parametrize("terms", disentangled.TERMS)
@pytest.mark.parametrize("length", [1, 3, 7, 20])  # exact, log-bucketed, clipped distances
def test_position_scores_read_the_used_rows_as_the_whole_table(terms, length):
    query, key, table, projections = _inputs(2, length, length)
    rows = np.arange(length, dtype="int32")[None]
    used, index = disentangled.relative_rows(table, rows, length, SPAN, True, DISTANCE)
    got = disentangled.position_scores(terms, query, key, *_project(used, projections), index)
    want = _reference(terms, query, key, table, projections, rows, length)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_position_scores_of_some_rows_per_batch_row():
    """query_positions (the encoder's last layer on [CLS] and a few rows): each batch row's own."""
    length = 20
    rows = np.array([[0, 3, 19], [0, 11, 2]], "int32")
    query, key, table, projections = _inputs(2, 3, length)
    used, index = disentangled.relative_rows(table, rows, length, SPAN, True, DISTANCE)
    got = disentangled.position_scores("c2p|p2c", query, key, *_project(used, projections), index)
    want = _reference("c2p|p2c", query, key, table, projections, rows, length)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_short_inputs_read_fewer_rows_of_the_table():
    rows = [int(disentangled.table_rows(length, 256, True, 512)[1])
            for length in (1, 3, 128, 129, 512, 2048)]
    assert rows == [1, 5, 255, 257, 511, 512]  # the base shape's table: 512 rows
    assert int(disentangled.table_rows(3, SPAN, False, None)[1]) == 5


def test_no_index_as_large_as_the_scores_is_built():
    """The gathers read one (Q, T) index for every batch row and head: no int tensor of rank 4
    ((B, N, Q, T), the size of the scores) in the graph."""
    query, key, table, projections = _inputs(2, 5, 5)
    relative_query, relative_key = _project(table, projections)

    @tf.function
    def scores(query, key):
        rows = tf.range(5)[None]
        index = disentangled.relative_index(rows, 5, SPAN, True, DISTANCE)
        return disentangled.position_scores("c2p|p2c", query, key, relative_query,
                                            relative_key, index)

    graph = scores.get_concrete_function(query, key).graph
    assert [op.type for op in graph.get_operations() if op.type == "GatherV2"]
    large = [op.name for op in graph.get_operations() for out in op.outputs
             if out.dtype.is_integer and out.shape.rank == 4]
    assert not large


def test_float16_scores_are_scaled_before_their_sum():
    """As transformers: unscaled, these float16 scores (~1e5, over float16's 65504) would be
    inf and the softmax NaN; scaled first they stay finite and answer as float32."""
    hidden = 8
    x = np.random.default_rng(0).uniform(90.0, 120.0, (1, 4, hidden)).astype("float32")
    table = np.random.default_rng(1).normal(size=(8, hidden)).astype("float32")
    outputs = {}
    for dtype in ("float32", "mixed_float16"):  # q = k = v = x: scores sum_d x_id x_jd
        layer = SelfAttention(1, disentangled_attention="c2p|p2c", relative_span=4, dtype=dtype)
        layer.build(x.shape)
        layer.set_weights([np.tile(np.eye(hidden), (1, 3)), np.zeros(3 * hidden), np.eye(hidden),
                           np.zeros(hidden)])
        outputs[dtype] = np.asarray(layer(x, np.ones((1, 4), "int32"),
                                          relative_embeddings=table), "float32")
    assert (x[0] @ x[0].T).max() > 65504  # the content term alone, unscaled
    assert np.isfinite(outputs["mixed_float16"]).all()
    np.testing.assert_allclose(outputs["mixed_float16"], outputs["float32"], rtol=2e-3)


@pytest.fixture(scope="module")
def bfloat16_deberta():
    """What a bfloat16 export runs (`cast_for_inference`: bfloat16 weights and compute)."""
    return cast_for_inference(bk.BertEncoder.from_pretrained(str(FIXTURE)))


@pytest.mark.parametrize("batch", ["singles", "pairs"])
def test_bfloat16_deberta_close_to_float32(bfloat16_deberta, batch):
    """Against transformers' float32 outputs: measured max abs diff 0.014, mean 0.0015
    (values up to ~1; float32: 5e-7)."""
    reference = np.load(FIXTURE / "reference.npz")
    inputs = {name: reference[f"{batch}_{key}"] for name, key in (
        ("input_word_ids", "input_ids"), ("input_mask", "input_mask"),
        ("input_type_ids", "input_type_ids"))}
    outputs = bfloat16_deberta(inputs)["sequence_output"]
    assert outputs.dtype == tf.bfloat16
    mask = inputs["input_mask"].astype(bool)
    got = tf.cast(outputs, tf.float32).numpy()[mask]
    want = reference[f"{batch}_sequence_output"][mask]
    assert np.abs(got - want).max() < 0.05
    assert np.abs(got - want).mean() < 0.005
    assert np.abs(want).max() > 0.5  # the bound can fail
