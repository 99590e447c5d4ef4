"""bfloat16 (mixed_bfloat16 policy) stays within the documented tolerance of float32.

Both bfloat16 ways: the mixed_bfloat16 policy (float32 weights) and `cast_for_inference`
(bfloat16 weights). Reference: Hugging Face PyTorch float32 outputs of the real
all-MiniLM-L6-v2 checkpoint (tests/fixtures/minilm_reference.npz). Measured: sequence_output max
abs diff 0.033 mixed / 0.041 bfloat16 weights (values up to ~6), mean abs diff <= 0.0038,
pooled_output cosine >= 0.99993.
The bounds below leave about 3x margin.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.models.encoder.inference import cast_for_inference

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures",
                       "minilm_reference.npz")
NAMES = ("input_word_ids", "input_mask", "input_type_ids")

SEQUENCE_MAX_ABS = 0.1
SEQUENCE_MEAN_ABS = 0.01
POOLED_MIN_COSINE = 0.999


@pytest.fixture(scope="module")
def reference():
    return dict(np.load(FIXTURE))


@pytest.fixture(scope="module")
def float32_encoder(minilm_dir):
    return bk.BertEncoder.from_pretrained(minilm_dir)


@pytest.fixture(scope="module", params=["mixed_bfloat16", "bfloat16"])
def bf16_encoder(request, minilm_dir, float32_encoder):
    if request.param == "mixed_bfloat16":  # float32 weights, bfloat16 compute.
        return bk.BertEncoder.from_pretrained(minilm_dir, dtype="mixed_bfloat16")
    return cast_for_inference(float32_encoder)  # bfloat16 weights too.


def cosine(a, b):
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


# oneDNN's kernels on both batches; XLA's on the pair batch alone (its segment ids 0 and 1
# cover the single batch's 0s): each XLA case compiles the whole 6-layer encoder, seconds.
@pytest.mark.parametrize("batch, jit_compile", [
    ("single", False), ("pair", False), pytest.param("pair", True, marks=pytest.mark.slow)],
    ids=["single-onednn", "pair-onednn", "pair-xla"])
def test_bfloat16_close_to_float32_reference(bf16_encoder, reference, batch, jit_compile):
    inputs = {name: reference[f"{batch}_{name}"] for name in NAMES}
    run = tf.function(lambda x: bf16_encoder(x, training=False), jit_compile=jit_compile)
    outputs = run(inputs)
    assert outputs["sequence_output"].dtype == tf.bfloat16  # The policy really applied.
    mask = inputs["input_mask"].astype(bool)
    got = tf.cast(outputs["sequence_output"], tf.float32).numpy()[mask]  # Real tokens only.
    want = reference[f"{batch}_sequence_output"][mask]
    assert np.abs(got - want).max() < SEQUENCE_MAX_ABS
    assert np.abs(got - want).mean() < SEQUENCE_MEAN_ABS
    pooled = tf.cast(outputs["pooled_output"], tf.float32).numpy()
    assert cosine(pooled, reference[f"{batch}_pooled_output"]).min() > POOLED_MIN_COSINE
    # The bound is tight enough to fail: a float32 result with one wrong layer would not pass.
    assert np.abs(want).max() > 10 * SEQUENCE_MAX_ABS
