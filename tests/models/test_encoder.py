"""BertEncoder: shapes, padding mask, config and .keras round trips, presets, bad arguments."""

import numpy as np
import pytest

import bert_keras as bk

# `tiny_encoder` (vocab 100, 1 layer, hidden 16, 2 heads, max_positions 32) and
# `assert_round_trip` are fixtures of conftest.py.


def random_inputs(batch=2, length=7, vocab=100, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    mask[0, length - 3:] = 0  # The first row has three padding tokens.
    return {
        "input_word_ids": rng.integers(1, vocab, (batch, length)).astype("int32") * mask,
        "input_mask": mask,
        "input_type_ids": (rng.random((batch, length)) > 0.5).astype("int32") * mask,
    }


def test_output_names_and_shapes(tiny_encoder):
    encoder = tiny_encoder(num_layers=2)
    outputs = encoder(random_inputs())
    assert set(outputs) == {"sequence_output", "pooled_output", "encoder_outputs"}
    assert outputs["sequence_output"].shape == (2, 7, 16)
    assert outputs["pooled_output"].shape == (2, 16)
    assert len(outputs["encoder_outputs"]) == 2
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1], outputs["sequence_output"])


def test_padded_tokens_never_change_real_tokens(tiny_encoder):
    encoder = tiny_encoder(num_layers=2)
    inputs = random_inputs()
    changed = {k: v.copy() for k, v in inputs.items()}
    changed["input_word_ids"][0, -3:] = [11, 12, 13]  # Garbage under the padding.
    changed["input_type_ids"][0, -3:] = 1
    a = encoder(inputs)["sequence_output"].numpy()
    b = encoder(changed)["sequence_output"].numpy()
    np.testing.assert_allclose(a[0, :4], b[0, :4], atol=1e-6)
    np.testing.assert_allclose(a[1], b[1], atol=1e-6)
    # More padding at the end does not change real tokens either.
    longer = {k: np.pad(v, ((0, 0), (0, 5))) for k, v in inputs.items()}
    c = encoder(longer)["sequence_output"].numpy()
    np.testing.assert_allclose(a[0, :4], c[0, :4], atol=1e-5)
    # ... while changing a real token does change them (the test can fail).
    changed["input_word_ids"][0, 1] += 1
    d = encoder(changed)["sequence_output"].numpy()
    assert np.abs(a[0, 0] - d[0, 0]).max() > 1e-4


def test_any_length_up_to_max_positions(tiny_encoder):
    encoder = tiny_encoder()
    for length in (1, encoder.max_positions):
        assert encoder(random_inputs(length=length))["sequence_output"].shape == (2, length, 16)


def test_longer_than_max_positions_is_a_clear_error(tiny_encoder):
    encoder = tiny_encoder()
    with pytest.raises(Exception, match=f"max_positions={encoder.max_positions}"):
        encoder(random_inputs(length=encoder.max_positions + 1))


def test_config_and_keras_round_trip(tiny_encoder, assert_round_trip):
    # Settings other than the defaults: they must come back in the config and the outputs.
    encoder = tiny_encoder(num_layers=2, activation="gelu_approximate", dropout=0.2,
                           layer_norm_epsilon=1e-6)
    loaded = assert_round_trip(encoder, random_inputs())
    assert isinstance(loaded, bk.BertEncoder)
    assert loaded.get_config() == encoder.get_config()


def test_save_pretrained_round_trip(tiny_encoder, tmp_path):
    encoder = tiny_encoder()
    inputs = random_inputs()
    encoder.save_pretrained(str(tmp_path))
    loaded = bk.BertEncoder.from_pretrained(str(tmp_path))
    assert loaded.get_config() == encoder.get_config() | {"name": loaded.name}
    np.testing.assert_array_equal(
        encoder(inputs)["pooled_output"], loaded(inputs)["pooled_output"]
    )


def test_presets():
    assert len([name for name in bk.PRESETS if name.startswith("bert_L-")]) == 24
    assert bk.PRESETS["bert_base"] == bk.EncoderConfig(num_layers=12, hidden_size=768,
                                                       num_heads=12, intermediate_size=3072)
    assert bk.PRESETS["bert_large"].num_layers == 24
    assert bk.BertEncoder.from_preset("bert_tiny", vocab_size=100).encoder_config == (
        bk.PRESETS["bert_tiny"].replace(vocab_size=100))
    # Keras layer arguments pass through (the benchmark builds bfloat16 encoders this way).
    bf16 = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100, dtype="bfloat16")
    assert bf16.weights[0].dtype == "bfloat16"
    small = bk.BertEncoder.from_preset("bert_L-4_H-512", vocab_size=100)
    assert (small.num_layers, small.hidden_size, small.num_heads) == (4, 512, 8)
    with pytest.raises(ValueError, match="bert_nonexistent"):
        bk.BertEncoder.from_preset("bert_nonexistent")


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate", "relu"])
def test_activations(tiny_encoder, activation):
    assert tiny_encoder(activation=activation)(random_inputs())["pooled_output"].shape == (2, 16)


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate", "relu"])
def test_training_activation_matches_the_activation_and_its_gradient(activation):
    """Train steps run the activation XLA-compiled: same values and gradients as Keras'."""
    import tensorflow as tf

    from bert_keras.models.layers.activations import get_activation, training_activation

    x = tf.constant(np.random.default_rng(0).normal(0, 2, (64, 48)), tf.float32)

    def value_and_gradient(function, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = function(x)
        return y, tape.gradient(y, x, output_gradients=tf.cos(tf.cast(x, y.dtype)))

    expected = value_and_gradient(get_activation(activation), x)
    for got, want in zip(value_and_gradient(training_activation(activation), x), expected):
        np.testing.assert_allclose(got, want, atol=2e-6)
    x16 = tf.cast(x, tf.bfloat16)
    got16 = value_and_gradient(training_activation(activation), x16)
    assert got16[0].dtype == got16[1].dtype == tf.bfloat16
    expected = value_and_gradient(get_activation(activation), tf.cast(x16, tf.float32))
    for got, want in zip(got16, expected):
        np.testing.assert_allclose(tf.cast(got, tf.float32), want, atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(hidden_size=15), "not divisible by num_heads=2"),
        (dict(activation="swishy"), "swishy"),
        (dict(num_layers=0), "num_layers must be an integer >= 1, got 0"),
    ],
)
def test_bad_arguments_name_the_value(tiny_encoder, overrides, message):
    with pytest.raises(ValueError, match=message):
        tiny_encoder(**overrides)


def test_mixed_bfloat16_runs_and_keeps_float32_variables(tiny_encoder):
    encoder = tiny_encoder(dtype="mixed_bfloat16")
    outputs = encoder(random_inputs())
    assert all(v.dtype == "float32" for v in encoder.weights)
    assert np.isfinite(np.asarray(outputs["sequence_output"], np.float32)).all()


def test_an_encoders_dtype_reaches_its_policy_config_heads_and_inference_copies(tiny_encoder):
    """`dtype` given to the encoder (no global policy), not the global float32: Keras'
    Functional drops it. Before, a mixed_bfloat16 encoder serialized float32, its task heads
    ran in float32, and `cast_for_inference(encoder, "float32")` returned the encoder itself,
    answering in bfloat16."""
    import keras

    from bert_keras.models.encoder.inference import cast_for_inference

    assert keras.config.dtype_policy().name == "float32"
    encoder = tiny_encoder(dtype="mixed_bfloat16")
    assert encoder.dtype_policy.name == "mixed_bfloat16"
    assert type(encoder).from_config(encoder.get_config()).dtype_policy.name == "mixed_bfloat16"
    head = bk.BertPretrainer(encoder).masked_lm_head
    assert head.decoder.compute_dtype == "bfloat16"
    copy = cast_for_inference(encoder, "float32")
    assert copy is not encoder and copy.dtype_policy.name == "float32"
    assert copy(random_inputs())["sequence_output"].dtype == "float32"
    # Task heads train in the encoder's policy; inference copies keep them float32.
    classifier = bk.BertClassifier(encoder, num_classes=3)
    assert classifier.get_layer("classification_head").dtype_policy.name == "mixed_bfloat16"
    for dtype in ("bfloat16", "float32"):
        copy = cast_for_inference(classifier, dtype)
        assert copy.get_layer("classification_head").dtype_policy.name == "float32"


@pytest.mark.parametrize("overrides", [
    dict(num_layers=2),
    dict(num_layers=3, num_layer_groups=1, embedding_size=8),  # ALBERT: one shared block
    dict(num_layers=2, use_pooler=False, type_vocab_size=0),  # DistilBERT
    dict(num_layers=2, transposed_kernels=True),  # the inference copies exports serve
])
def test_output_positions_give_the_full_outputs_at_those_rows(tiny_encoder, overrides):
    import tensorflow as tf

    encoder = tiny_encoder(**overrides)
    inputs = random_inputs(batch=3, length=9)
    positions = np.array([[1, 4, 8], [2, 0, 3], [5, 5, 0]], "int32")  # repeats, [CLS], padding
    full = encoder(inputs)
    rows = encoder(inputs, output_positions=positions)
    at_positions = np.take_along_axis(full["sequence_output"].numpy(), positions[:, :, None], 1)
    np.testing.assert_allclose(rows["sequence_output"], at_positions, atol=1e-5)
    np.testing.assert_allclose(rows["pooled_output"], full["pooled_output"], atol=1e-5)
    np.testing.assert_array_equal(rows["encoder_outputs"][-1], rows["sequence_output"])
    for theirs, mine in zip(full["encoder_outputs"][:-1], rows["encoder_outputs"][:-1],
                            strict=True):
        np.testing.assert_allclose(mine, theirs, atol=1e-6)
    only_pooled = encoder(inputs, output_positions=())
    assert only_pooled["sequence_output"].shape == (3, 0, 16)
    np.testing.assert_allclose(only_pooled["pooled_output"], full["pooled_output"], atol=1e-5)

    # The same gradients as the full encoder gathered at the rows (the test can fail: a
    # wrong row changes them).
    def gradients(loss_of):
        with tf.GradientTape() as tape:
            loss = loss_of()
        return [tf.convert_to_tensor(g).numpy()  # the embeddings' are IndexedSlices
                for g in tape.gradient(loss, encoder.trainable_variables)]

    weights = np.linspace(-1, 1, 3 * 3 * 16).reshape(3, 3, 16).astype("float32")

    def loss_full(pick=positions):
        out = encoder(inputs)
        picked = tf.gather(out["sequence_output"], pick, batch_dims=1)
        return tf.reduce_sum(picked * weights) + tf.reduce_sum(out["pooled_output"] ** 2)

    def loss_rows():
        out = encoder(inputs, output_positions=positions)
        return tf.reduce_sum(out["sequence_output"] * weights) + tf.reduce_sum(
            out["pooled_output"] ** 2)

    for theirs, mine in zip(gradients(loss_full), gradients(loss_rows), strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-5)
    shifted = gradients(lambda: loss_full(np.roll(positions, 1, axis=1)))
    assert max(np.abs(a - b).max() for a, b in zip(shifted, gradients(loss_rows))) > 1e-4
