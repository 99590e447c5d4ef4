"""Raw text in fit/evaluate/predict: the shapes of texts that `text_inputs` takes and refuses."""

import numpy as np
import pytest
import tensorflow as tf

from bert_keras.tasks import text_inputs

TEXTS = ["In the beginning", "Jesus wept.", "The LORD is my shepherd"]


@tf.function  # as a preprocessor's batch_function
def words(texts):
    return tf.strings.split(texts).to_tensor("")


def batches(x, y=None):
    return [tuple(part.numpy().tolist() for part in element)
            for element in text_inputs.text_dataset(x, words, y=y, batch_size=2)]


@pytest.mark.parametrize("column", [
    lambda: np.array(TEXTS)[:, None],
    lambda: np.array(TEXTS, dtype=object)[:, None],
    lambda: tf.constant(TEXTS)[:, None],
    lambda: tf.data.Dataset.from_tensor_slices(np.array(TEXTS)[:, None]).batch(2),
], ids=["numpy", "numpy-object", "tensor", "dataset"])
def test_a_column_of_texts_reads_as_the_texts(column):
    x = column()
    assert text_inputs.is_text(x) and text_inputs.text_count(x) == 1
    assert batches(x) == batches(TEXTS)


def test_one_string_is_one_text():
    assert text_inputs.is_text("Jesus wept.") and text_inputs.text_count("Jesus wept.") == 1
    assert batches("Jesus wept.") == batches(["Jesus wept."])


def test_pairs_of_columns_read_as_pairs():
    pairs = (np.array(TEXTS)[:, None], tf.constant(TEXTS[::-1])[:, None])
    assert text_inputs.text_count(pairs) == 2
    assert batches(pairs, y=[0, 1, 2]) == batches((TEXTS, TEXTS[::-1]), y=[0, 1, 2])


@pytest.mark.parametrize("table", [
    lambda: np.array([TEXTS, TEXTS]).T,
    lambda: tf.constant([TEXTS, TEXTS]),
    lambda: tf.data.Dataset.from_tensor_slices(np.array([TEXTS, TEXTS]).T).batch(2),
    lambda: np.array(TEXTS)[:, None, None],
], ids=["numpy", "tensor", "dataset", "rank-3"])
def test_texts_of_other_shapes_are_refused_with_their_shape(table):
    x = table()
    assert text_inputs.is_text(x)
    with pytest.raises(ValueError, match=r"Texts must be a \[batch\] of strings .*got shape "
                                         r"\((3|2|None), .*pass pairs as a tuple"):
        text_inputs.text_dataset(x, words)


def test_texts_and_labels_of_other_lengths_are_refused_by_name():
    with pytest.raises(ValueError, match="texts has 3, y has 2"):
        text_inputs.text_dataset(TEXTS, words, y=[0, 1])
    with pytest.raises(ValueError, match="texts_a has 3, texts_b has 2"):
        text_inputs.text_dataset((TEXTS, TEXTS[:2]), words)
    with pytest.raises(ValueError, match="Text 1 is None"):
        text_inputs.text_dataset(["a", None], words)
    assert text_inputs.is_text([])
    with pytest.raises(ValueError, match="No texts"):
        text_inputs.text_dataset([], words)


def test_split_off_keeps_the_last_fraction_for_validation_as_keras_does():
    (x, y, weights), validation = text_inputs.split_off(
        (TEXTS, TEXTS[::-1]), [0, 1, 2], None, fraction=0.3)
    assert [t.numpy().tolist() for t in x] == [[b"In the beginning", b"Jesus wept."],
                                               [b"The LORD is my shepherd", b"Jesus wept."]]
    assert y.tolist() == [0, 1] and weights is None
    (x_val, y_val) = validation
    assert [t.numpy().tolist() for t in x_val] == [[b"The LORD is my shepherd"],
                                                   [b"In the beginning"]]
    assert y_val.tolist() == [2]
    with pytest.raises(ValueError, match="leaves no training examples"):
        text_inputs.split_off(TEXTS, [0, 1, 2], None, fraction=0.9)
    with pytest.raises(ValueError, match="not a tf.data.Dataset"):
        text_inputs.split_off(tf.data.Dataset.from_tensor_slices(TEXTS), None, None, 0.5)
