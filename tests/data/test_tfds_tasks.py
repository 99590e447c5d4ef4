"""TFDS tasks with mock data (no network): real feature keys, exact mappings, errors."""

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from bert_keras import finetuning_data as fd
from bert_keras.data.finetuning import tfds as tt


@pytest.mark.parametrize("task", sorted(tt.GLUE_TEXT_FEATURES))
def test_tfds_glue_random_mock_uses_real_feature_keys(task):
    name = f"glue/{task}"
    split = "test" if task == "ax" else "train"
    with tfds.testing.mock_data(num_examples=3):
        examples = tt.load_tfds_task(name, split)
        label_map = tt.tfds_label_map(name)
    assert len(examples) == 3
    a_key, b_key = tt.GLUE_TEXT_FEATURES[task]
    for e in examples:
        assert isinstance(e.text_a, str) and e.text_a
        assert (e.text_b is None) == (b_key is None)
    if task == "stsb":
        assert label_map is None and all(isinstance(e.label, float) for e in examples)
    elif task != "ax":
        assert all(e.label in label_map for e in examples)


def _fixed_dataset(rows, signature):
    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_generator(lambda: iter(rows), output_signature=signature)

    return as_dataset


def _spec(shape, dtype):
    return tf.TensorSpec(shape, dtype)


def test_tfds_glue_mrpc_exact_mapping():
    rows = [
        {"sentence1": "He said hi.", "sentence2": "He greeted.", "label": 1, "idx": 0},
        {"sentence1": "Dogs bark.", "sentence2": "Cats meow.", "label": 0, "idx": 1},
    ]
    sig = {"sentence1": _spec((), tf.string), "sentence2": _spec((), tf.string),
           "label": _spec((), tf.int64), "idx": _spec((), tf.int32)}
    with tfds.testing.mock_data(as_dataset_fn=_fixed_dataset(rows, sig)):
        examples = tt.load_tfds_task("glue/mrpc", "validation")
        label_map = tt.tfds_label_map("glue/mrpc")
    assert label_map.labels == ["not_equivalent", "equivalent"]  # TFDS ClassLabel order
    assert examples == [
        fd.ClassificationExample("He said hi.", "He greeted.", "equivalent"),
        fd.ClassificationExample("Dogs bark.", "Cats meow.", "not_equivalent"),
    ]
    assert label_map.encode(examples).tolist() == [1, 0]
    # Unlabeled test rows (label -1) get label None.
    rows = [{**rows[0], "label": -1}]
    with tfds.testing.mock_data(as_dataset_fn=_fixed_dataset(rows, sig)):
        assert tt.load_tfds_task("glue/mrpc", "test")[0].label is None


def test_tfds_glue_stsb_float_labels():
    rows = [{"sentence1": "a", "sentence2": "b", "label": 3.8, "idx": 0}]
    sig = {"sentence1": _spec((), tf.string), "sentence2": _spec((), tf.string),
           "label": _spec((), tf.float32), "idx": _spec((), tf.int32)}
    with tfds.testing.mock_data(as_dataset_fn=_fixed_dataset(rows, sig)):
        (ex,) = tt.load_tfds_task("glue/stsb", "train")
    assert (ex.text_a, ex.text_b) == ("a", "b") and ex.label == pytest.approx(3.8)


@pytest.mark.parametrize("name", ["squad/v1.1", "squad/v2.0"])
def test_tfds_squad_random_mock(name):
    with tfds.testing.mock_data(num_examples=2):
        examples = tt.load_tfds_task(name, "validation")
    assert len(examples) == 2
    for e in examples:
        assert isinstance(e, fd.SpanExample) and e.qid and e.context and e.question
        assert all(isinstance(t, str) and isinstance(s, int) for t, s in e.answers)
    assert tt.tfds_label_map(name) is None


def test_tfds_squad_v2_exact_mapping():
    rows = [
        {"id": "q1", "title": "t", "context": "Denver won.", "question": "Who won?",
         "is_impossible": False,
         "answers": {"text": ["Denver"], "answer_start": [0]},
         "plausible_answers": {"text": [], "answer_start": []}},
        {"id": "q2", "title": "t", "context": "Denver won.", "question": "Who lost?",
         "is_impossible": True,
         "answers": {"text": [], "answer_start": []},
         "plausible_answers": {"text": ["Denver"], "answer_start": [0]}},
    ]
    answers_sig = {"text": _spec((None,), tf.string), "answer_start": _spec((None,), tf.int32)}
    sig = {"id": _spec((), tf.string), "title": _spec((), tf.string),
           "context": _spec((), tf.string),
           "question": _spec((), tf.string), "is_impossible": _spec((), tf.bool),
           "answers": answers_sig, "plausible_answers": answers_sig}
    with tfds.testing.mock_data(as_dataset_fn=_fixed_dataset(rows, sig)):
        examples = tt.load_tfds_task("squad/v2.0", "validation")
    assert examples == [
        fd.SpanExample("q1", "Who won?", "Denver won.", [("Denver", 0)], False),
        fd.SpanExample("q2", "Who lost?", "Denver won.", [], True),
    ]


def test_tfds_conll2003_tag_names():
    rows = [{"tokens": ["EU", "rejects", "German", "call"], "pos": [22, 42, 16, 21],
             "chunks": [11, 21, 11, 12], "ner": [3, 0, 7, 0]}]
    sig = {"tokens": _spec((None,), tf.string), "pos": _spec((None,), tf.int64),
           "chunks": _spec((None,), tf.int64), "ner": _spec((None,), tf.int64)}
    with tfds.testing.mock_data(as_dataset_fn=_fixed_dataset(rows, sig)):
        examples = tt.load_tfds_task("conll2003", "train")
        label_map = tt.tfds_label_map("conll2003")
    assert examples == [fd.TaggingExample(["EU", "rejects", "German", "call"],
                                          ["B-ORG", "O", "B-MISC", "O"])]
    assert label_map.labels[:3] == ["O", "B-PER", "I-PER"]
    # Token / tag count mismatch is reported (the random mock generates exactly that).
    with tfds.testing.mock_data(num_examples=2):
        with pytest.raises(ValueError, match=r"conll2003\[train\]:0: \d+ tokens but \d+ ner tags"):
            tt.load_tfds_task("conll2003", "train")


def test_other_datasets_are_read_by_their_features():
    """Not only GLUE / SQuAD / CoNLL by name: any dataset whose features make a task (the
    real ones: tests/data/test_tfds_datasets.py); imdb_reviews is a text + ClassLabel one."""
    assert tt.tfds_task_type("imdb_reviews") is None  # its features decide
    with tfds.testing.mock_data(num_examples=3):
        task = tt.TfdsTask("imdb_reviews", data_dir="/nonexistent")
        examples = task.examples("train")
    assert (task.task_type, task.text_a, task.text_b, task.label) == (
        "classification", "text", None, "label")
    assert task.label_map().labels == ["neg", "pos"]
    assert len(examples) == 3 and all(e.label in ("neg", "pos") for e in examples)


@pytest.mark.parametrize("name, task", [("glue/mrpc", "classification"),
                                        ("glue/stsb", "regression"),
                                        ("glue/mnli:2.0.0", "classification"),
                                        ("squad/v2.0", "span_qa"), ("conll2003", "tagging")])
def test_tfds_task_type(name, task):
    assert tt.tfds_task_type(name) == task


def test_tfds_task_type_unsupported():
    with pytest.raises(ValueError, match="unsupported TFDS task 'glue/nope'"):
        tt.tfds_task_type("glue/nope")
