"""TFDS datasets as fine-tuning tasks -> the examples of `finetuning_data`.

`TfdsTask(name, data_dir)` reads a TFDS dataset prepared in a data dir (see
`bert_keras.data.tfds_datasets`: a dataset that is not prepared there is refused in one line,
nothing is downloaded unless `download=True`) as one task type, by its features:

- classification / regression / multi_label: texts in string (Text) features, a `label`
  feature (ClassLabel: the label names, in the dataset's order; a string; a float for
  regression; a Sequence of them for multi_label). The texts are GLUE's for glue/*; for any
  other dataset the one string feature, a GLUE pair of them (sentence1 + sentence2,
  question1 + question2, premise + hypothesis, question + sentence), or the features named
  by `text_a_field` / `text_b_field` (tools/finetune.py's --text_a_field / --text_b_field,
  the JSONL flags) and `label_field`;
- tagging: conll2003's `tokens` (a Sequence of strings) and `ner` (a Sequence of ClassLabel
  or strings); other names by `text_a_field` (the words) and `label_field` (the tags);
- span_qa: SQuAD's `id`, `question`, `context`, `answers` {`text`, `answer_start`} and
  (v2.0) `is_impossible`.

`examples(split)` gives ClassificationExample / TaggingExample / SpanExample lists,
`label_map()` the LabelMap in the dataset's ClassLabel order (so model ids equal TFDS ids;
None where the labels are read from the examples), `task_type` the task. `load_tfds_task`,
`tfds_label_map` and `tfds_task_type` are the one-call forms.

Example (mock data, no network):
    >>> import tensorflow_datasets as tfds
    >>> from bert_keras.data.finetuning import tfds as tfds_tasks
    >>> with tfds.testing.mock_data(num_examples=2):
    ...     examples = tfds_tasks.load_tfds_task("glue/mrpc", "train")
    >>> len(examples), tfds_tasks.tfds_task_type("glue/mrpc")
    (2, 'classification')
"""

from __future__ import annotations

from bert_keras.data import tfds_datasets
from bert_keras.data.finetuning.examples import ClassificationExample, SpanExample, TaggingExample
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.errors import InputError

# (text_a key, text_b key) of every GLUE config in TFDS.
GLUE_TEXT_FEATURES = {
    "cola": ("sentence", None),
    "sst2": ("sentence", None),
    "mrpc": ("sentence1", "sentence2"),
    "qqp": ("question1", "question2"),
    "stsb": ("sentence1", "sentence2"),
    "mnli": ("premise", "hypothesis"),
    "qnli": ("question", "sentence"),
    "rte": ("sentence1", "sentence2"),
    "wnli": ("sentence1", "sentence2"),
    "ax": ("premise", "hypothesis"),
}
SQUAD_TFDS_NAMES = ("squad", "squad/v1.1", "squad/v2.0")
CONLL_TFDS_NAMES = ("conll2003", "conll2003/conll2003")
# The default --text_a_field / --label_field (the JSONL reader's): a dataset without a feature
# of that name has its texts / labels found from its features instead.
DEFAULT_TEXT_FIELD, DEFAULT_LABEL_FIELD = "text", "label"
WORD_FEATURES = ("tokens", "words")
TAG_FEATURES = ("ner", "ner_tags", "tags", "labels")
SPAN_FEATURES = ("id", "question", "context", "answers")
LABELED_TASKS = ("classification", "regression", "multi_label")


def _known_kind(name: str) -> str | None:
    """"glue", "squad" or "conll" for the TFDS datasets known by name, None for any other;
    ValueError for a glue/ config TFDS does not have."""
    base = name.split(":")[0]
    if base.startswith("glue/"):
        if base[5:] in GLUE_TEXT_FEATURES:
            return "glue"
        raise InputError(f"unsupported TFDS task {name!r}; GLUE's are "
                         f"{[f'glue/{t}' for t in GLUE_TEXT_FEATURES]}")
    if base in SQUAD_TFDS_NAMES:
        return "squad"
    if base in CONLL_TFDS_NAMES:
        return "conll"
    return None


def tfds_task_type(name: str) -> str | None:
    """The fine-tuning task of a TFDS dataset known by name: "classification", "regression"
    (glue/stsb), "span_qa" (squad) or "tagging" (conll2003); None for any other dataset (its
    features decide, `TfdsTask.task_type`); ValueError for an unknown glue/ config."""
    kind = _known_kind(name)
    if kind == "glue":
        return "regression" if name.split(":")[0] == "glue/stsb" else "classification"
    return {"squad": "span_qa", "conll": "tagging", None: None}[kind]


def _str(x) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def _kind(feature):
    """A feature's kind for this module: "text", "class", "float", "int", "seq:<kind>",
    "dict" or "other"."""
    import tensorflow_datasets as tfds

    features = tfds.features
    if isinstance(feature, features.Text):
        return "text"
    if isinstance(feature, features.ClassLabel):
        return "class"
    if isinstance(feature, features.Sequence):
        return "seq:" + _kind(feature.feature)
    if isinstance(feature, features.FeaturesDict):
        return "dict"
    if isinstance(feature, features.Tensor) and tuple(feature.shape) == ():
        kind = getattr(feature.np_dtype, "kind", "")
        return {"f": "float", "i": "int", "u": "int", "b": "int", "S": "text", "U": "text",
                "O": "text"}.get(kind, "other")
    return "other"


def _labels(feature):
    """The ClassLabel names of a ClassLabel feature or a Sequence of one, else None."""
    inner = getattr(feature, "feature", feature)
    return list(inner.names) if hasattr(inner, "names") else None


class TfdsTask:
    """A TFDS dataset prepared in a data dir, read as a fine-tuning task (see the module).

    `task`: the task type to read it as (None: the one its name or features say); the
    fields name features (None: found from the features). InputError (one line, naming the
    dataset and its features) when the dataset is not prepared (`tfds_datasets`) or its
    features do not make a task of that type.
    """

    def __init__(self, name, data_dir=None, *, task=None, download=False, text_a_field=None,
                 text_b_field=None, label_field=None):
        self.name = name
        self.known = _known_kind(name)
        self.builder = tfds_datasets.open_prepared(name, data_dir, download=download)
        self.features = self.builder.info.features
        self.kinds = {key: _kind(feature) for key, feature in self.features.items()}
        self.task_type = task or tfds_task_type(name) or self._infer_task(label_field)
        named = tfds_task_type(name)
        if named and self.task_type != named:
            raise InputError(f"--tfds_name={name} is a {named} task, not --task={self.task_type}.")
        if self.task_type == "span_qa":
            self._check_span_features()
        elif self.task_type == "tagging":
            self.words, self.tags = self._tagging_fields(text_a_field, label_field)
        elif self.task_type in LABELED_TASKS:
            self.text_a, self.text_b, self.label = self._text_fields(
                text_a_field, text_b_field, label_field)
        else:
            raise InputError(f"TFDS dataset {name!r}: --task={self.task_type} does not read "
                             "TFDS datasets.")

    @property
    def splits(self):
        """The dataset's split names ([] where TFDS does not know them, e.g. mocked)."""
        return list(self.builder.info.splits)

    def describe(self):
        return ", ".join(f"{k}: {v}" for k, v in self.kinds.items())

    def _refuse(self, problem):
        raise InputError(f"TFDS dataset {self.name!r} ({self.builder.data_dir}; features "
                         f"{self.describe()}): {problem}")

    def _infer_task(self, label_field):
        if all(key in self.kinds for key in SPAN_FEATURES):
            return "span_qa"
        label = label_field if label_field in self.kinds else DEFAULT_LABEL_FIELD
        words = [k for k in WORD_FEATURES if self.kinds.get(k) == "seq:text"]
        tags = [k for k in TAG_FEATURES if self.kinds.get(k, "").startswith("seq:")]
        if words and tags:
            return "tagging"
        kind = self.kinds.get(label)
        if kind == "float":
            return "regression"
        if kind in ("seq:class", "seq:text"):
            return "multi_label"
        if kind in ("class", "text", "int"):
            return "classification"
        self._refuse("cannot tell its task (no SQuAD features, no tokens + ner tags, no "
                     f"{label!r} label feature); pass --task and name the features with "
                     "--text_a_field, --text_b_field and --label_field.")

    def _check_span_features(self):
        missing = [k for k in SPAN_FEATURES if k not in self.kinds]
        if missing or self.kinds["answers"] not in ("dict", "seq:dict"):
            self._refuse(f"span_qa reads SQuAD's features {list(SPAN_FEATURES)} (answers: "
                         f"text, answer_start), missing {missing or ['answers as a dict']}.")

    def _pick(self, given, default, candidates, flag, what):
        if given and given in self.kinds:
            return given
        if given and given != default:
            self._refuse(f"--{flag}={given!r} is not one of its features.")
        if len(candidates) == 1:
            return candidates[0]
        self._refuse(f"{what}; name it with --{flag}.")

    def _tagging_fields(self, text_a_field, label_field):
        words = [k for k in WORD_FEATURES if self.kinds.get(k) == "seq:text"] or [
            k for k, v in self.kinds.items() if v == "seq:text"]
        tags = [k for k in TAG_FEATURES if self.kinds.get(k) in ("seq:class", "seq:text")] or [
            k for k, v in self.kinds.items() if v == "seq:class"]
        word_key = self._pick(text_a_field, DEFAULT_TEXT_FIELD, words[:1], "text_a_field",
                              "tagging reads the words from a Sequence of strings, found none")
        tag_key = self._pick(label_field, DEFAULT_LABEL_FIELD, tags[:1], "label_field",
                             "tagging reads the tags from a Sequence of ClassLabel or strings, "
                             "found none")
        for key, wanted in ((word_key, ("seq:text",)), (tag_key, ("seq:class", "seq:text"))):
            if self.kinds[key] not in wanted:
                self._refuse(f"tagging reads {key!r} as a Sequence, but it is {self.kinds[key]}.")
        return word_key, tag_key

    def _text_fields(self, text_a_field, text_b_field, label_field):
        if self.known == "glue":
            a_key, b_key = GLUE_TEXT_FEATURES[self.name.split(":")[0][5:]]
            return a_key, b_key, DEFAULT_LABEL_FIELD
        if label_field and label_field not in self.kinds and label_field != DEFAULT_LABEL_FIELD:
            self._refuse(f"--label_field={label_field!r} is not one of its features.")
        label = label_field if label_field in self.kinds else (
            DEFAULT_LABEL_FIELD if DEFAULT_LABEL_FIELD in self.kinds else None)
        if label is None:
            self._refuse(f"--task={self.task_type} needs a label feature: "
                         f"--label_field={label_field or DEFAULT_LABEL_FIELD!r} is not one of "
                         "its features.")
        texts = [k for k, v in self.kinds.items() if v == "text" and k != label]
        if text_b_field and text_b_field not in self.kinds:
            self._refuse(f"--text_b_field={text_b_field!r} is not one of its features.")
        if text_a_field in self.kinds:
            pair = (text_a_field, text_b_field)
        elif text_a_field and text_a_field != DEFAULT_TEXT_FIELD:
            self._refuse(f"--text_a_field={text_a_field!r} is not one of its features.")
        else:
            glue_pairs = [p for p in GLUE_TEXT_FEATURES.values()
                          if p[1] is not None and set(p) == set(texts)]
            if text_b_field:
                others = [k for k in texts if k != text_b_field]
                pair = (others[0], text_b_field) if len(others) == 1 else None
            elif glue_pairs:
                pair = glue_pairs[0]
            else:
                pair = (texts[0], None) if len(texts) == 1 else None
            if pair is None:
                self._refuse(f"its string features {texts} do not say which text is which; name "
                             "the text with --text_a_field (and a pair's second with "
                             "--text_b_field).")
        for key in pair:
            if key is not None and self.kinds[key] != "text":
                self._refuse(f"{key!r} is not a string feature ({self.kinds[key]}).")
        return pair[0], pair[1], label

    def label_map(self) -> LabelMap | None:
        """The LabelMap in the dataset's ClassLabel order; None where the examples' labels
        make it (strings), for regression and for span_qa."""
        if self.task_type == "tagging":
            names = _labels(self.features[self.tags])
        elif self.task_type in ("classification", "multi_label") and self.label:
            names = _labels(self.features[self.label])
        else:
            names = None
        return None if names is None else LabelMap(names)

    def examples(self, split: str) -> list:
        """The examples of a split ("train", "validation", "train[:10%]", ...); unlabeled
        rows (ClassLabel -1, GLUE's test splits) get label None."""
        import tensorflow_datasets as tfds

        dataset = tfds_datasets.split_dataset(self.builder, self.name, split)
        read = {"span_qa": self._span, "tagging": self._tagging}.get(self.task_type,
                                                                      self._classification)
        return [read(ex, f"{self.name}[{split}]:{i}", split)
                for i, ex in enumerate(tfds.as_numpy(dataset))]

    def _classification(self, ex, where, split):
        text_b = None if self.text_b is None else _str(ex[self.text_b])
        return ClassificationExample(_str(ex[self.text_a]), text_b, self._label(ex, split),
                                     source=where)

    def _label(self, ex, split):
        if self.label is None:
            return None
        value, kind = ex[self.label], self.kinds[self.label]
        names = _labels(self.features[self.label])
        if kind == "class":
            return None if int(value) < 0 else names[int(value)]
        if kind == "seq:class":
            return [names[int(v)] for v in value]
        if kind == "seq:text":
            return [_str(v) for v in value]
        if self.task_type == "regression":  # GLUE's stsb marks unlabeled test rows with -1
            return None if (self.known == "glue" and split.startswith("test")) else float(value)
        if kind == "text":
            return _str(value) or None
        return str(int(value))

    def _tagging(self, ex, where, split):
        words = [_str(w) for w in ex[self.words]]
        names = _labels(self.features[self.tags])
        tags = [names[int(t)] if names else _str(t) for t in ex[self.tags]]
        if len(words) != len(tags):
            raise InputError(f"{where}: {len(words)} tokens but {len(tags)} {self.tags} tags")
        return TaggingExample(words, tags, source=where)

    def _span(self, ex, where, split):
        texts = [_str(t) for t in ex["answers"]["text"]]
        starts = [int(s) for s in ex["answers"]["answer_start"]]
        return SpanExample(qid=_str(ex["id"]), question=_str(ex["question"]),
                           context=_str(ex["context"]), answers=list(zip(texts, starts)),
                           is_impossible=bool(ex.get("is_impossible", False)), source=where)


def tfds_label_map(name: str, data_dir: str | None = None, **options) -> LabelMap | None:
    """The LabelMap of a TFDS task in the dataset's own ClassLabel order (so model ids equal
    TFDS ids); None for regression (glue/stsb), SQuAD and string labels. `options`: those
    of TfdsTask (task, download, text_a_field, text_b_field, label_field)."""
    if tfds_task_type(name) in ("span_qa", "regression"):  # known without opening it
        return None
    return TfdsTask(name, data_dir, **options).label_map()


def load_tfds_task(name: str, split: str, data_dir: str | None = None, download: bool = False,
                   **options) -> list:
    """Examples of split `split` of a TFDS dataset read as a fine-tuning task (`TfdsTask`).

    glue/{cola,sst2,mrpc,qqp,stsb,mnli,qnli,rte,wnli,ax} -> ClassificationExample (label: the
    ClassLabel name, float for stsb, None for unlabeled test splits); squad/v1.1, squad/v2.0
    -> SpanExample; conll2003 -> TaggingExample (NER tags by name, IOB2); any other dataset
    by its features (see the module). Splits are TFDS's: "train", "validation", "test"
    (mnli: "validation_matched", ...); slicing like "train[:1%]" works.

    The dataset must be prepared in `data_dir` (default: $TFDS_DATA_DIR, else
    ~/tensorflow_datasets); otherwise InputError at once, in one line that says what to do,
    unless `download` (then TFDS downloads and prepares it, which needs the network).
    Offline: prepare it where the network is
    (`bert_keras.data.tfds_datasets.prepare_command(name)`), copy the data dir, pass data_dir.
    """
    return TfdsTask(name, data_dir, download=download, **options).examples(split)


__all__ = ["GLUE_TEXT_FEATURES", "SQUAD_TFDS_NAMES", "CONLL_TFDS_NAMES", "TfdsTask",
           "tfds_task_type", "tfds_label_map", "load_tfds_task"]
