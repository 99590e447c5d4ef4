"""In-graph tf.train.Example serialization against the protobuf library's own bytes."""

import numpy as np
import pytest
import tensorflow as tf

from bert_keras.data.pretraining import example_proto


def test_varint_matches_protobuf():
    for n in (0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**35):
        packed = tf.train.Int64List(value=[n]).SerializeToString()  # tag, length, varint
        assert packed[2:] == example_proto.varint(n)


@pytest.mark.parametrize("length", [1, 5, 128, 300])
def test_serialized_bytes_equal_protobuf(length):
    rng = np.random.default_rng(length)
    b = 6
    ints = {  # every varint size, negative values (10 bytes) included
        "small": rng.integers(0, 2, (b, length)),
        "bytes": rng.integers(0, 128, (b, length)),
        "ids": rng.integers(0, 2**22, (b, length)),
        "any": rng.integers(-2**62, 2**62, (b, length)),
        "z_single": rng.integers(0, 300, (b, 1)),
    }
    floats = {"weights": rng.normal(size=(b, length)).astype(np.float32)}
    features = {k: tf.constant(v, tf.int64) for k, v in ints.items()}
    features.update({k: tf.constant(v) for k, v in floats.items()})
    for serialize in (example_proto.serialize_examples, tf.function(
            example_proto.serialize_examples)):
        got = serialize(features, float_names=["weights"], byte_names=["bytes"]).numpy()
        for i in range(b):
            feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v[i]))
                       for k, v in ints.items()}
            feature.update({k: tf.train.Feature(float_list=tf.train.FloatList(value=v[i]))
                            for k, v in floats.items()})
            want = tf.train.Example(features=tf.train.Features(feature=feature))
            assert got[i] == want.SerializeToString(deterministic=True)


def test_unknown_length_is_an_error():
    fn = tf.function(example_proto.serialize_examples,
                     input_signature=[{"x": tf.TensorSpec([None, None], tf.int64)}])
    with pytest.raises(ValueError, match=r"feature 'x' must have a static shape \[B, L\]"):
        fn.get_concrete_function()


def test_byte_feature_out_of_range_is_an_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"must be in \[0, 128\)"):
        example_proto.serialize_examples({"x": tf.constant([[1, 128]])}, byte_names=["x"])
