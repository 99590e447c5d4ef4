"""The pretraining TFRecord format: serialized bytes against protobuf, Google's files read back."""

import numpy as np
import pytest
import tensorflow as tf

from bert_keras.data.pretraining import records as pr


@pytest.mark.parametrize("t,p", [(128, 20), (256, 40), (8, 3)])
def test_serialize_examples_equals_protobuf(t, p):
    # Google's names and types from the model's; ids up to 30k need 3-byte varints.
    rng, b = np.random.default_rng(t), 16
    batch = {"input_word_ids": rng.integers(0, 30522, (b, t)), "masked_lm_ids":
             rng.integers(0, 30522, (b, p)), "masked_lm_positions": rng.integers(0, t, (b, p)),
             "input_mask": rng.integers(0, 2, (b, t)), "input_type_ids": rng.integers(0, 2, (b, t)),
             "masked_lm_weights": rng.integers(0, 2, (b, p)).astype(np.float32),
             "next_sentence_labels": rng.integers(0, 2, b)}
    serialize = tf.function(pr.serialize_examples)

    def as_tensors(values):
        return {k: tf.constant(v, tf.float32 if v.dtype == np.float32 else tf.int32)
                for k, v in values.items()}

    got = serialize(as_tensors(batch)).numpy()
    for i in range(b):
        feature = {g: tf.train.Feature(int64_list=tf.train.Int64List(
            value=np.reshape(batch[m][i], -1))) for g, m in pr.GOOGLE_TO_MODEL_NAMES.items()
            if g != "masked_lm_weights"}
        feature["masked_lm_weights"] = tf.train.Feature(float_list=tf.train.FloatList(
            value=batch["masked_lm_weights"][i]))
        want = tf.train.Example(features=tf.train.Features(feature=feature))
        assert got[i] == want.SerializeToString(deterministic=True)


def _google_example(rng, t, p):
    ints = lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))  # noqa: E731
    n = int(rng.integers(5, t))
    ids = [2] + list(rng.integers(5, 100, n - 2)) + [3] + [0] * (t - n)
    k = int(rng.integers(1, p))
    feature = {
        "input_ids": ints(ids), "input_mask": ints([1] * n + [0] * (t - n)),
        "segment_ids": ints([0] * (n // 2) + [1] * (t - n // 2)),
        "masked_lm_positions": ints(list(range(1, k + 1)) + [0] * (p - k)),
        "masked_lm_ids": ints(list(rng.integers(5, 100, k)) + [0] * (p - k)),
        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
            value=[1.0] * k + [0.0] * (p - k))),
        "next_sentence_labels": ints([int(rng.integers(0, 2))]),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def test_reader_reads_google_schema(tmp_path):
    rng = np.random.default_rng(0)
    examples = [_google_example(rng, 32, 5) for _ in range(10)]
    path = str(tmp_path / "google.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for e in examples:
            w.write(e.SerializeToString())
    ds = pr.read_pretraining_tfrecords(path, 4, 32, 5, is_training=False, drop_remainder=False)
    features, labels, weights = next(iter(ds))
    assert sorted(features) == ["input_mask", "input_type_ids", "input_word_ids",
                                "masked_lm_positions"]
    assert sorted(labels) == ["masked_lm", "next_sentence"] and sorted(weights) == ["masked_lm"]
    f0 = examples[0].features.feature
    np.testing.assert_array_equal(features["input_word_ids"][0], f0["input_ids"].int64_list.value)
    np.testing.assert_array_equal(features["input_type_ids"][0],
                                  f0["segment_ids"].int64_list.value)
    np.testing.assert_array_equal(labels["masked_lm"][0], f0["masked_lm_ids"].int64_list.value)
    np.testing.assert_array_equal(weights["masked_lm"][0],
                                  f0["masked_lm_weights"].float_list.value)
    assert labels["next_sentence"].shape == (4,)
    assert int(labels["next_sentence"][0]) == f0["next_sentence_labels"].int64_list.value[0]
    assert features["masked_lm_positions"].dtype == tf.int32
    train = pr.read_pretraining_tfrecords(path, 4, 32, 5, seed=1)
    assert next(iter(train))[0]["input_word_ids"].shape == (4, 32)


def test_reader_errors_name_file_and_feature(tmp_path):
    rng = np.random.default_rng(0)
    bad = _google_example(rng, 32, 5)
    del bad.features.feature["segment_ids"]
    path = str(tmp_path / "bad.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        w.write(bad.SerializeToString())
    with pytest.raises(ValueError, match=r"bad\.tfrecord.*'segment_ids' is missing"):
        pr.read_pretraining_tfrecords(path, 4, 32, 5)
    with pytest.raises(ValueError, match=r"'input_ids' is int64_list of length 32, expected "
                                         r"int64_list of length 64"):
        pr.read_pretraining_tfrecords(path, 4, 64, 5)
    with pytest.raises(FileNotFoundError, match="nothing"):
        pr.read_pretraining_tfrecords(str(tmp_path / "nothing*"), 4, 32, 5)
    open(tmp_path / "empty.tfrecord", "wb").close()
    with pytest.raises(ValueError, match="all files .* are empty"):
        pr.read_pretraining_tfrecords(str(tmp_path / "empty.tfrecord"), 4, 32, 5)
