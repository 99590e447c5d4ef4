"""dropout_mask: SplitMix64 against a plain-Python implementation of the published algorithm,
the masks' statistics, and the dropout and its gradient, compiled and not."""

import numpy as np
import pytest
import tensorflow as tf

from bert_keras.models.layers import dropout_mask
from bert_keras.models.layers.dropout import Dropout

MASK64 = 2**64 - 1


def _mix64(z):  # SplitMix64's finalizer, as published (Steele, Lea and Flood 2014)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def _reference_mask(seed, count, rate):
    key = _mix64(_mix64((seed[0] + dropout_mask.GAMMA) & MASK64) ^ seed[1])
    threshold = round(rate * 2**32)
    return np.array([_mix64((key + i * dropout_mask.GAMMA) & MASK64) >> 32 >= threshold
                     for i in range(1, count + 1)])


def test_splitmix64_first_outputs():
    # SplitMix64 seeded with 0 (state += GAMMA, then mix): its published first outputs.
    state = tf.constant([dropout_mask.GAMMA, 2 * dropout_mask.GAMMA & MASK64], tf.uint64)
    assert [hex(int(v)) for v in dropout_mask.mix64(state)] == [
        "0xe220a8397b1dcdaf", "0x6e789e6aa1b965f4"]


@pytest.mark.parametrize("seed", [(0, 0), (3, 1), (-5, 2**40), (2**62, 17)])
def test_mask_equals_reference_eager_and_compiled(seed):
    want = _reference_mask([s & MASK64 for s in seed], 7 * 9, 0.3).reshape(7, 9)
    seed = tf.constant(seed, tf.int64)
    compiled = tf.function(lambda s: dropout_mask.keep_mask(s, (7, 9), 0.3), jit_compile=True)
    np.testing.assert_array_equal(dropout_mask.keep_mask(seed, (7, 9), 0.3), want)
    np.testing.assert_array_equal(compiled(seed), want)


def test_mask_statistics():
    """Drop rate, neighbours and the next call's mask (the seed generator's next seed) behave
    as independent draws: each frequency within 5 standard deviations."""
    rate, count = 0.1, 1 << 20
    first = ~dropout_mask.keep_mask(tf.constant([11, 0], tf.int64), (count,), rate).numpy()
    second = ~dropout_mask.keep_mask(tf.constant([11, 1], tf.int64), (count,), rate).numpy()
    other_layer = ~dropout_mask.keep_mask(tf.constant([12, 0], tf.int64), (count,), rate).numpy()

    def within(frequency, p):
        assert abs(frequency - p) < 5 * np.sqrt(p * (1 - p) / count), (frequency, p)

    within(first.mean(), rate)
    within(second.mean(), rate)
    within((first[:-1] & first[1:]).mean(), rate**2)  # neighbours
    within((first & second).mean(), rate**2)  # the same layer's next call
    within((first & other_layer).mean(), rate**2)
    # Every position drops at the rate: 256 columns of 4,096 rows, a chi-square test
    # (255 degrees of freedom; 330 is its 0.1% tail).
    columns = first.reshape(-1, 256).sum(axis=0)
    expected = count // 256 * rate
    assert (((columns - expected) ** 2) / (expected * (1 - rate))).sum() < 330


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dropout_and_gradient_use_one_mask(dtype):
    x = tf.cast(tf.random.stateless_normal((64, 48), [1, 2]), dtype)
    seed = tf.constant([4, 2], tf.int64)
    keep = dropout_mask.keep_mask(seed, (64, 48), 0.25).numpy()
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = dropout_mask.dropout(x, seed, 0.25)
    upstream = tf.cast(tf.random.stateless_normal((64, 48), [3, 4]), dtype)
    grad = tape.gradient(y, x, output_gradients=upstream)
    scale = tf.cast(1 / 0.75, dtype)  # in x's dtype, as Keras' dropout scales
    np.testing.assert_array_equal(y.numpy(), np.where(keep, (x * scale).numpy(), 0))
    np.testing.assert_array_equal(grad.numpy(), np.where(keep, (upstream * scale).numpy(), 0))


def test_layer_draws_a_new_mask_per_call_and_repeats_with_its_seed():
    x = np.ones((32, 64), "float32")
    layer = Dropout(0.5, seed=7)
    first, second = (layer(x, training=True).numpy() for _ in range(2))
    assert not np.array_equal(first == 0, second == 0)
    np.testing.assert_array_equal(Dropout(0.5, seed=7)(x, training=True), first)
    np.testing.assert_array_equal(layer(x, training=False), x)
