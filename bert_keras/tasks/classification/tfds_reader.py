"""How the sequence classification task types read a TFDS dataset's rows
(`data.finetuning.tfds`): texts in string (Text) features and a `label` feature (ClassLabel:
the label names, in the dataset's order; a string; a float for regression; a Sequence of
them for multi_label).

The texts are GLUE's for glue/*; for any other dataset the one string feature, a GLUE pair
of them (sentence1 + sentence2, question1 + question2, premise + hypothesis, question +
sentence), or the features named by --text_a_field / --text_b_field and --label_field.
"""

from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.data.finetuning.tfds import (
    DEFAULT_LABEL_FIELD,
    DEFAULT_TEXT_FIELD,
    GLUE_TEXT_FEATURES,
    decoded,
)
from bert_keras.tasks.classification.reader import ClassificationExample

# The label feature kinds that make a task of each label_type when --task is not given.
LABEL_KINDS = {"single": ("class", "text", "int"), "multi": ("seq:class", "seq:text"),
               "regression": ("float",)}


def reads_label(dataset, label_field, label_type):
    """Whether the dataset's label feature (--label_field's, else `label`) is of a kind that
    makes a task of `label_type`."""
    label = label_field if label_field in dataset.kinds else DEFAULT_LABEL_FIELD
    return dataset.kinds.get(label) in LABEL_KINDS[label_type]


class LabeledTextReader:
    """Reads rows as ClassificationExamples of task `task` (its name, for messages) with
    labels of `label_type` ("single", "multi", "regression"): `text_a`, `text_b` (None:
    single texts) and `label` (None: unlabeled) name the features; refused in one line when
    the features do not say them."""

    def __init__(self, dataset, task, label_type, *, text_a_field=None, text_b_field=None,
                 label_field=None):
        self.dataset, self.task, self.label_type = dataset, task, label_type
        self.text_a, self.text_b, self.label = self._fields(text_a_field, text_b_field,
                                                            label_field)

    def _label_field(self, label_field):
        kinds = self.dataset.kinds
        if label_field and label_field not in kinds and label_field != DEFAULT_LABEL_FIELD:
            self.dataset.refuse(f"--label_field={label_field!r} is not one of its features.")
        label = label_field if label_field in kinds else (
            DEFAULT_LABEL_FIELD if DEFAULT_LABEL_FIELD in kinds else None)
        if label is None:
            self.dataset.refuse(f"--task={self.task} needs a label feature: --label_field="
                                f"{label_field or DEFAULT_LABEL_FIELD!r} is not one of its "
                                "features.")
        return label

    def _fields(self, text_a_field, text_b_field, label_field):
        dataset, kinds = self.dataset, self.dataset.kinds
        if dataset.glue_texts:
            return (*dataset.glue_texts, DEFAULT_LABEL_FIELD)
        label = self._label_field(label_field)
        texts = [k for k, v in kinds.items() if v == "text" and k != label]
        if text_b_field and text_b_field not in kinds:
            dataset.refuse(f"--text_b_field={text_b_field!r} is not one of its features.")
        if text_a_field in kinds:
            pair = (text_a_field, text_b_field)
        elif text_a_field and text_a_field != DEFAULT_TEXT_FIELD:
            dataset.refuse(f"--text_a_field={text_a_field!r} is not one of its features.")
        else:
            pair = _texts_of(texts, text_b_field)
            if pair is None:
                dataset.refuse(f"its string features {texts} do not say which text is which; "
                               "name the text with --text_a_field (and a pair's second with "
                               "--text_b_field).")
        for key in pair:
            if key is not None and kinds[key] != "text":
                dataset.refuse(f"{key!r} is not a string feature ({kinds[key]}).")
        return pair[0], pair[1], label

    def label_map(self):
        """The LabelMap of the label feature's ClassLabel names (None: string labels)."""
        names = self.label and self.dataset.label_names(self.label)
        return LabelMap(names, multi_label=self.label_type == "multi") if names else None

    def example(self, row, where, split):
        text_b = None if self.text_b is None else decoded(row[self.text_b])
        return ClassificationExample(decoded(row[self.text_a]), text_b,
                                     self._label(row, split), source=where)

    def _label(self, row, split):
        if self.label is None:
            return None
        value, kind = row[self.label], self.dataset.kinds[self.label]
        names = self.dataset.label_names(self.label)
        if kind == "class":
            return None if int(value) < 0 else names[int(value)]
        if kind == "seq:class":
            return [names[int(v)] for v in value]
        if kind == "seq:text":
            return [decoded(v) for v in value]
        if self.label_type == "regression":  # GLUE's stsb marks unlabeled test rows with -1
            return None if (self.dataset.glue_texts and split.startswith("test")) else float(value)
        if kind == "text":
            return decoded(value) or None
        return str(int(value))


def _texts_of(texts, text_b_field):
    """(text_a, text_b) among a dataset's string features `texts` when they say it: the one
    beside --text_b_field, a GLUE pair, or the only one; else None."""
    if text_b_field:
        others = [k for k in texts if k != text_b_field]
        return (others[0], text_b_field) if len(others) == 1 else None
    glue_pairs = [p for p in GLUE_TEXT_FEATURES.values()
                  if p[1] is not None and set(p) == set(texts)]
    if glue_pairs:
        return glue_pairs[0]
    return (texts[0], None) if len(texts) == 1 else None
