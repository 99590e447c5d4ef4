"""Dense: Keras' dense layer with a bias gradient that is right in bfloat16."""

import keras
import numpy as np
import tensorflow as tf

import bert_keras as bk
from bert_keras.models.layers.dense import Dense


def _gradients(layer, x, upstream):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    return tape.gradient(y, [x, layer.kernel, layer.bias], output_gradients=upstream)


def test_dense_is_keras_dense_in_float32():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(3, 5, 8)), tf.float32)  # rank 3: (B, T, H)
    upstream = tf.constant(rng.normal(size=(3, 5, 4)), tf.float32)
    ours, theirs = Dense(4, activation="tanh"), keras.layers.Dense(4, activation="tanh")
    ours.build(x.shape), theirs.build(x.shape)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-6, atol=1e-6)
    for mine, keras_grad in zip(_gradients(ours, x, upstream), _gradients(theirs, x, upstream)):
        np.testing.assert_allclose(mine, keras_grad, rtol=1e-5, atol=1e-6)
    assert ours.get_config() == theirs.get_config() | {"name": ours.name}


def test_bias_gradient_is_accurate_in_bfloat16():
    # 32 x 128 rows, as a train step's dense layers see them. TensorFlow's BiasAddGrad (Keras'
    # Dense) sums bfloat16 in bfloat16 on CPU: 22% off here. Ours is off by the final rounding.
    rng = np.random.default_rng(1)
    rows = 4096
    x = tf.constant(rng.normal(size=(rows, 8)), tf.bfloat16)
    upstream = tf.constant(rng.normal(size=(rows, 16)) * 1e-3 + 2e-4, tf.bfloat16)
    layer = Dense(16, dtype="mixed_bfloat16")
    bias_grad = _gradients(layer, x, upstream)[2]
    exact = tf.reduce_sum(tf.cast(upstream, tf.float64), 0)
    error = float(tf.norm(tf.cast(bias_grad, tf.float64) - exact) / tf.norm(exact))
    assert error < 5e-3, error


def _sublayers(layer, seen):
    """Every layer reachable through `layer`'s attributes (and lists of them)."""
    for value in vars(layer).values():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, keras.layers.Layer) and id(item) not in seen:
                seen.add(id(item))
                yield item
                yield from _sublayers(item, seen)


def test_every_dense_layer_of_the_models_is_ours(tiny_encoder):
    encoder = tiny_encoder()
    models = [bk.BertPretrainer(encoder), bk.BertClassifier(encoder, num_classes=2),
              bk.BertTokenClassifier(encoder, num_classes=3), bk.BertSpanQA(encoder)]
    for model in models:
        denses = [layer for layer in _sublayers(model, set())
                  if isinstance(layer, keras.layers.Dense)]
        assert len(denses) > 4 and all(isinstance(layer, Dense) for layer in denses), model.name
