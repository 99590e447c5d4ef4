"""models.encoder.inference: length-bucketed batching gives the same outputs as padding
everything to T."""

import numpy as np
import pytest

from bert_keras.models.encoder.inference import (
    cast_for_inference,
    encode,
    inference_function,
    length_bucketed_batches,
)
from bert_keras.models.layers import transposed_dense


def ragged_inputs(lengths, max_length=24, vocab=50, seed=0):
    rng = np.random.default_rng(seed)
    mask = (np.arange(max_length)[None, :] < np.array(lengths)[:, None]).astype("int32")
    return {
        "input_word_ids": rng.integers(1, vocab, mask.shape).astype("int32") * mask,
        "input_mask": mask,
        "input_type_ids": (rng.random(mask.shape) > 0.5).astype("int32") * mask,
    }


def test_batches_are_length_sorted_cut_and_cover_every_row():
    lengths = [3, 20, 9, 1, 17, 9, 24]
    batches = length_bucketed_batches(ragged_inputs(lengths), batch_size=3, pad_to_multiple=8)
    rows = np.concatenate([indices for indices, _ in batches])
    assert sorted(rows.tolist()) == list(range(len(lengths)))
    assert [b["input_mask"].shape for _, b in batches] == [(3, 16), (3, 24), (1, 24)]
    for indices, batch in batches:
        assert (batch["input_mask"].sum(1) == np.array(lengths)[indices]).all()  # Nothing cut.


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="batch_size"):
        length_bucketed_batches(ragged_inputs([2]), batch_size=0)
    with pytest.raises(ValueError, match="input_type_ids"):
        length_bucketed_batches({"input_word_ids": 0, "input_mask": 0}, batch_size=2)


def test_encode_matches_full_padding_in_original_order(tiny_encoder):
    encoder = tiny_encoder(num_layers=2)
    inputs = ragged_inputs([3, 20, 9, 1, 17, 9, 24])
    full = encoder(inputs)
    pooled = encode(encoder, inputs, batch_size=3)
    np.testing.assert_allclose(pooled, full["pooled_output"], atol=1e-5)
    sequence = encode(encoder, inputs, batch_size=3, output="sequence_output")
    mask = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(sequence[mask], full["sequence_output"].numpy()[mask], atol=1e-5)


def test_cast_for_inference_is_bfloat16_and_close(tiny_encoder):
    encoder = tiny_encoder(num_layers=2)
    fast = cast_for_inference(encoder)
    assert {w.dtype for w in fast.weights} == {"bfloat16"}
    inputs = ragged_inputs([5, 24])
    got = inference_function(fast)(inputs)["pooled_output"].numpy().astype("float32")
    np.testing.assert_allclose(got, encoder(inputs)["pooled_output"], atol=0.05)
    assert not np.allclose(got, 0)


def test_float32_inference_copies_answer_alike_in_either_kernel_layout(tiny_encoder):
    encoder = tiny_encoder(num_layers=2)
    rng = np.random.default_rng(0)
    biases = [w for w in encoder.weights if w.path.endswith("/bias")]
    assert len(biases) > 8  # every dense layer's bias: each layout adds its own way
    for bias in biases:
        bias.assign(rng.normal(0.0, 0.1, bias.shape).astype("float32"))
    qkv = encoder.get_layer("transformer_layer_1").attention.qkv
    inputs = ragged_inputs([5, 24])
    transposed = cast_for_inference(encoder, "float32", kernel_layout="transposed")
    assert transposed is not encoder
    assert cast_for_inference(transposed, "float32", kernel_layout="transposed") is transposed
    fast_qkv = transposed.get_layer("transformer_layer_1").attention.qkv
    assert isinstance(fast_qkv, transposed_dense.TransposedDense)
    np.testing.assert_array_equal(fast_qkv.kernel.numpy(), qkv.kernel.numpy().T)
    # The attention output multiplies as BatchMatMulV2: compared with the encoder below.
    assert transposed.get_layer("transformer_layer_1").attention.output_dense.batch_matmul
    # "auto" keeps Keras' layout in float32 (the faster on AVX-512), and turns a transposed
    # copy back: a float32 encoder is its own float32 inference copy.
    assert cast_for_inference(encoder, "float32") is encoder
    back = cast_for_inference(transposed, "float32")
    back_qkv = back.get_layer("transformer_layer_1").attention.qkv
    np.testing.assert_array_equal(back_qkv.kernel.numpy(), qkv.kernel.numpy())
    for copy in (transposed, back):
        for name in ("sequence_output", "pooled_output"):
            np.testing.assert_allclose(copy(inputs)[name], encoder(inputs)[name], atol=1e-5)
    with pytest.raises(ValueError, match="kernel_layout"):
        cast_for_inference(encoder, "float32", kernel_layout="rows")
