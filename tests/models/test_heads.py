"""Heads: gather-then-project MLM tied to the embeddings, shapes, configs, pretraining-head
import."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras import checkpoints
from bert_keras.checkpoints.google import save_google_checkpoint
from bert_keras.tasks.pretraining import head_checkpoint
from bert_keras.tasks.span_qa import head as span_head

# `tiny_encoder` (vocab 100, hidden 16) and `assert_config_round_trip` are fixtures of
# conftest.py.


def test_mlm_head_gathers_then_projects_onto_the_tied_table(tiny_encoder):
    encoder = tiny_encoder()
    head = bk.MaskedLMHead(encoder.token_embedding, name="masked_lm_head")
    rng = np.random.default_rng(0)
    sequence = rng.normal(size=(2, 9, 16)).astype("float32")  # (B, T, H)
    positions = np.array([[1, 4, 0], [8, 8, 2]], "int32")  # (B, P)
    logits = head(sequence, positions).numpy()
    assert logits.shape == (2, 3, 100) and logits.dtype == np.float32
    assert head.decoder_table is encoder.token_embedding.embeddings

    # A numpy reference of gather -> dense -> gelu -> LayerNorm -> table^T + bias.
    head.output_bias.assign(rng.normal(size=100).astype("float32"))
    logits = head(sequence, positions).numpy()
    gathered = np.take_along_axis(sequence, positions[:, :, None], axis=1)  # (B, P, H)
    h = gathered @ head.transform.kernel.numpy() + head.transform.bias.numpy()
    h = np.asarray(keras.activations.gelu(h, approximate=False))
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-12)
    h = h * head.transform_layer_norm.gamma.numpy() + head.transform_layer_norm.beta.numpy()
    expected = h @ encoder.token_embedding.embeddings.numpy().T + head.output_bias.numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)

    # Positions not asked for never matter: changing them leaves the logits unchanged.
    changed = sequence.copy()
    changed[:, 3] += 10.0
    np.testing.assert_allclose(head(changed, positions).numpy(), logits, atol=1e-6)


def test_mlm_head_never_projects_every_position(tiny_encoder):
    """The vocabulary matmul has B*P rows, not B*T: its traced input is (B, P, H)."""
    encoder = tiny_encoder()
    head = bk.MaskedLMHead(encoder.token_embedding)
    head(np.zeros((1, 4, 16), "float32"), np.zeros((1, 2), "int32"))
    graph = tf.function(lambda s, p: head(s, p)).get_concrete_function(
        tf.TensorSpec((3, 50, 16), tf.float32), tf.TensorSpec((3, 5), tf.int32)).graph
    vocab_matmuls = [op for op in graph.get_operations()
                     if op.type in ("MatMul", "BatchMatMulV2") and op.outputs[0].shape[-1] == 100]
    assert vocab_matmuls, "no projection onto the vocabulary found"
    for op in vocab_matmuls:
        rows = int(np.prod(op.inputs[0].shape[:-1]))
        assert rows == 3 * 5, f"{op.name} projects {op.inputs[0].shape} rows, not B*P"


def test_mlm_decoder_is_the_embedding_variable_and_trains_with_it(tiny_encoder):
    encoder = tiny_encoder()
    pretrainer = bk.BertPretrainer(encoder)
    table = encoder.token_embedding.embeddings
    assert pretrainer.masked_lm_head.decoder_table is table
    assert sum(w is table for w in pretrainer.trainable_weights) == 1  # one variable, once
    x = {"input_word_ids": np.array([[2, 5, 7, 3]], "int32"),
         "input_mask": np.ones((1, 4), "int32"),
         "input_type_ids": np.zeros((1, 4), "int32"),
         "masked_lm_positions": np.array([[1, 2]], "int32")}
    y = {"masked_lm": np.array([[40, 41]]), "next_sentence": np.array([0])}
    with tf.GradientTape() as tape:
        logits = pretrainer(x, training=False)["masked_lm"]
        loss = keras.losses.sparse_categorical_crossentropy(y["masked_lm"], logits,
                                                            from_logits=True)
        loss = tf.reduce_mean(loss)
    (grad,) = tape.gradient(loss, [table])
    grad = tf.convert_to_tensor(grad).numpy()
    # Row 40 is a target, never an input: its gradient comes through the decoder alone.
    assert np.abs(grad[40]).max() > 1e-6
    before = table.numpy().copy()
    keras.optimizers.SGD(0.5).apply_gradients([(grad, table)])
    # One step moves the embedding table and the decoder identically: they are one variable.
    np.testing.assert_allclose(table.numpy(), before - 0.5 * grad, atol=1e-7)
    np.testing.assert_array_equal(pretrainer.masked_lm_head.decoder_table.numpy(), table.numpy())


def test_mlm_head_accepts_the_bare_table_and_config_round_trips(tiny_encoder,
                                                               assert_config_round_trip):
    encoder = tiny_encoder()
    head = bk.MaskedLMHead(encoder.token_embedding.embeddings, activation="relu",
                           layer_norm_epsilon=1e-6, name="mlm")
    head(np.zeros((1, 4, 16), "float32"), np.zeros((1, 2), "int32"))
    config = head.get_config()
    assert config["vocab_size"] == 100 and config["token_embedding"] is None
    clone = assert_config_round_trip(head)
    out = clone(np.zeros((1, 4, 16), "float32"), np.zeros((1, 2), "int32"))
    assert out.shape == (1, 2, 100)
    assert clone.decoder_table is not encoder.token_embedding.embeddings  # untied copy


def test_mlm_head_bad_arguments_name_the_values(tiny_encoder):
    with pytest.raises(ValueError, match="vocab_size=None"):
        bk.MaskedLMHead()
    with pytest.raises(ValueError, match="swish"):
        bk.MaskedLMHead(vocab_size=10, activation="swish")



def test_mlm_head_transform_maps_hidden_to_the_table_width(tiny_encoder):
    """ALBERT's and ELECTRA's generator's MLM heads: hidden 8 onto a 16-wide embedding table."""
    encoder = tiny_encoder()  # a [100, 16] table
    head = bk.MaskedLMHead(encoder.token_embedding)
    logits = head(np.ones((1, 4, 8), "float32"), np.zeros((1, 2), "int32"))
    assert logits.shape == (1, 2, 100)
    assert tuple(head.transform.kernel.shape) == (8, 16)


@pytest.mark.parametrize("cls, shape, out", [
    (bk.NextSentenceHead, (3, 16), (3, 2)),
    (bk.ClassificationHead, (3, 16), (3, 4)),
    (bk.TokenClassificationHead, (3, 7, 16), (3, 7, 4)),
])
def test_logit_heads_shapes_float32_and_config(cls, shape, out, assert_config_round_trip):
    kwargs = {} if cls is bk.NextSentenceHead else dict(num_classes=4, dropout=0.2)
    head = cls(dtype="mixed_bfloat16", **kwargs)
    logits = head(np.ones(shape, "float32"))
    assert logits.shape == out and logits.dtype == tf.float32
    assert_config_round_trip(head)


def test_classification_head_rejects_bad_num_classes():
    with pytest.raises(ValueError, match="num_classes.*0"):
        bk.ClassificationHead(num_classes=0)


def test_span_head_masks_padding(assert_config_round_trip):
    head = bk.SpanHead()
    sequence = np.random.default_rng(1).normal(size=(2, 5, 16)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "int32")
    start, end = head(sequence, mask)
    assert start.shape == (2, 5) and start.dtype == tf.float32
    np.testing.assert_array_equal(start.numpy()[0, 3:], span_head.PADDING_LOGIT)
    np.testing.assert_array_equal(end.numpy()[0, 3:], span_head.PADDING_LOGIT)
    assert np.all(np.abs(start.numpy()[1]) < 100)
    assert_config_round_trip(head)


# --- pretraining-head import -------------------------------------------------------------

def _fake_head_tensors(fmt, hidden=16, vocab=100, seed=0):
    rng = np.random.default_rng(seed)
    r = lambda *s: rng.normal(size=s).astype("float32")  # noqa: E731
    if fmt == "google":
        return {
            "cls/predictions/transform/dense/kernel": r(hidden, hidden),
            "cls/predictions/transform/dense/bias": r(hidden),
            "cls/predictions/transform/LayerNorm/gamma": r(hidden),
            "cls/predictions/transform/LayerNorm/beta": r(hidden),
            "cls/predictions/output_bias": r(vocab),
            "cls/seq_relationship/output_weights": r(2, hidden),
            "cls/seq_relationship/output_bias": r(2),
        }
    return {
        "cls.predictions.transform.dense.weight": r(hidden, hidden),  # PyTorch (out, in)
        "cls.predictions.transform.dense.bias": r(hidden),
        "cls.predictions.transform.LayerNorm.weight": r(hidden),
        "cls.predictions.transform.LayerNorm.bias": r(hidden),
        "cls.predictions.bias": r(vocab),
        "cls.seq_relationship.weight": r(2, hidden),
        "cls.seq_relationship.bias": r(2),
    }


def test_pretraining_head_name_map_covers_every_head_variable(tiny_encoder):
    pretrainer = bk.BertPretrainer(tiny_encoder())
    encoder_paths = {v.path for v in pretrainer.encoder.weights}
    head_paths = {v.path for v in pretrainer.weights} - encoder_paths
    for fmt in ("google", "huggingface"):
        assert set(checkpoints.pretraining_head_name_map(fmt)) == head_paths
    mlm_only = bk.BertPretrainer(tiny_encoder(), next_sentence=False)
    mlm_paths = {v.path for v in mlm_only.weights} - {v.path for v in mlm_only.encoder.weights}
    assert set(checkpoints.pretraining_head_name_map("google", next_sentence=False)) == mlm_paths
    with pytest.raises(ValueError, match="'tf1'"):
        checkpoints.pretraining_head_name_map("tf1")


def test_load_google_pretraining_heads_from_a_checkpoint_dir(tiny_encoder, tmp_path):
    # A Google TF1 pretraining checkpoint: encoder tensors + cls/ heads, as run_pretraining.py
    # writes.
    source = tiny_encoder(activation="gelu_approximate")
    save_google_checkpoint(source, str(tmp_path))
    reader = tf.train.load_checkpoint(str(tmp_path / "bert_model.ckpt"))
    tensors = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}
    fake = _fake_head_tensors("google")
    tensors.update(fake)
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "bert_model.ckpt"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])

    encoder = bk.BertEncoder.from_pretrained(str(tmp_path))  # skips the cls/ tensors
    pretrainer = bk.BertPretrainer(encoder)
    head_checkpoint.load_pretraining_heads(pretrainer, str(tmp_path))
    mlm, nsp = pretrainer.masked_lm_head, pretrainer.next_sentence_head
    np.testing.assert_array_equal(mlm.transform.kernel.numpy(),
                                  fake["cls/predictions/transform/dense/kernel"])
    np.testing.assert_array_equal(mlm.transform_layer_norm.gamma.numpy(),
                                  fake["cls/predictions/transform/LayerNorm/gamma"])
    np.testing.assert_array_equal(mlm.output_bias.numpy(), fake["cls/predictions/output_bias"])
    np.testing.assert_array_equal(nsp.logits.kernel.numpy(),
                                  fake["cls/seq_relationship/output_weights"].T)
    np.testing.assert_array_equal(nsp.logits.bias.numpy(), fake["cls/seq_relationship/output_bias"])
    np.testing.assert_array_equal(mlm.decoder_table.numpy(),
                                  tensors["bert/embeddings/word_embeddings"])


def test_load_huggingface_pretraining_heads_and_errors(tiny_encoder):
    pretrainer = bk.BertPretrainer(tiny_encoder())
    fake = _fake_head_tensors("huggingface", seed=3)
    head_checkpoint.load_pretraining_heads(pretrainer, fake, fmt="huggingface")
    mlm, nsp = pretrainer.masked_lm_head, pretrainer.next_sentence_head
    np.testing.assert_array_equal(mlm.transform.kernel.numpy(),
                                  fake["cls.predictions.transform.dense.weight"].T)
    np.testing.assert_array_equal(mlm.transform_layer_norm.beta.numpy(),
                                  fake["cls.predictions.transform.LayerNorm.bias"])
    np.testing.assert_array_equal(mlm.output_bias.numpy(), fake["cls.predictions.bias"])
    np.testing.assert_array_equal(nsp.logits.kernel.numpy(), fake["cls.seq_relationship.weight"].T)

    missing = dict(fake)
    del missing["cls.predictions.bias"]
    with pytest.raises(bk.CheckpointError, match="cls.predictions.bias"):
        head_checkpoint.load_pretraining_heads(pretrainer, missing, fmt="huggingface")
    wrong = dict(fake, **{"cls.predictions.bias": np.zeros(7, "float32")})
    with pytest.raises(bk.CheckpointError, match=r"\(7,\)"):
        head_checkpoint.load_pretraining_heads(pretrainer, wrong, fmt="huggingface")


def test_mlm_head_under_mixed_bfloat16_projects_in_bfloat16_and_adds_a_float32_bias(tiny_encoder):
    encoder = tiny_encoder(dtype="mixed_bfloat16")
    head = bk.MaskedLMHead(encoder.token_embedding, dtype="mixed_bfloat16")
    sequence = np.random.default_rng(0).normal(size=(2, 6, 16)).astype("float32")
    positions = np.array([[1, 2], [3, 4]], "int32")
    zero_bias = head(sequence, positions).numpy()
    head.output_bias.assign(np.full(100, 1.0 + 2.0 ** -12, "float32"))  # not a bfloat16 value
    logits = head(sequence, positions).numpy()
    assert logits.dtype == np.float32
    assert head.transform.compute_dtype == head.decoder.compute_dtype == "bfloat16"
    assert encoder.token_embedding.embeddings.dtype == head.output_bias.dtype == "float32"
    # The bias is added in float32, after the projection (bfloat16 would round it to 1.0).
    np.testing.assert_allclose(logits - zero_bias, 1.0 + 2.0 ** -12, atol=1e-6)
    # The projection is bfloat16's: within its rounding of the float32 one, not equal to it.
    x = head.transform_layer_norm(
        head.transform(np.take_along_axis(sequence, positions[:, :, None], 1)))
    projection = np.asarray(x, np.float32) @ encoder.token_embedding.embeddings.numpy().T
    np.testing.assert_allclose(zero_bias, projection, atol=0.02 * np.abs(projection).max())
    assert not np.allclose(zero_bias, projection, rtol=0, atol=1e-6)
