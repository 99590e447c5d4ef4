"""TFDS datasets as fine-tuning tasks -> the examples of `finetuning_data`.

`TfdsTask(name, data_dir)` reads a TFDS dataset prepared in a data dir (see
`bert_keras.data.tfds_datasets`: a dataset that is not prepared there is refused in one line,
nothing is downloaded unless `download=True`) as one task type. This module holds what every
task type shares: the opened dataset (`TfdsDataset`: its features and their kinds, its rows,
a one-line refusal naming them) and the datasets known by name (GLUE's configs, SQuAD,
CoNLL-2003) with their task types. How a task type's examples are read from the rows is its
own (`Task.tfds_reader` in bert_keras/tasks/<name>/tfds_reader.py):

- classification / regression / multi_label: texts in string features and a label feature
  (GLUE's texts for glue/*; otherwise found from the features or named by `text_a_field` /
  `text_b_field` / `label_field`, the JSONL flags of tools/finetune.py);
- tagging: a Sequence of words and a Sequence of tags (conll2003's `tokens` and `ner`);
- span_qa: SQuAD's `id`, `question`, `context`, `answers` and (v2.0) `is_impossible`.

Without `task`, the dataset's name says its task type (`tfds_task_type`), else its features
do (`Task.reads_tfds`, asked by `bert_keras.tasks.registry`). `examples(split)` gives the
examples, `label_map()` the LabelMap in the dataset's ClassLabel order (so model ids equal
TFDS ids; None where the labels are read from the examples), `task_type` the task.
`load_tfds_task`, `tfds_label_map` and `tfds_task_type` are the one-call forms.

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
from bert_keras.data.finetuning import task_types
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.data.finetuning.task_types import use_task_types  # its name here before
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
# The task type of each dataset known by name: data about those datasets, never acted on here.
KNOWN_TASK_TYPES = {"glue": "classification", "glue/stsb": "regression", "squad": "span_qa",
                    "conll": "tagging"}
# The default --text_a_field / --label_field (the JSONL reader's): a dataset without a feature
# of that name has its texts / labels found from its features instead.
DEFAULT_TEXT_FIELD, DEFAULT_LABEL_FIELD = "text", "label"


def _known_kind(name: str) -> str | None:
    """"glue", "squad" or "conll" for the TFDS datasets known by name, None for any other;
    InputError for a glue/ config TFDS does not have."""
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
    return None if kind is None else KNOWN_TASK_TYPES.get(name.split(":")[0],
                                                          KNOWN_TASK_TYPES[kind])


def decoded(x) -> str:
    """A TFDS string value (bytes) as str."""
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def feature_kind(feature):
    """A feature's kind for the readers: "text", "class", "float", "int", "seq:<kind>",
    "dict" or "other"."""
    import tensorflow_datasets as tfds

    features = tfds.features
    if isinstance(feature, features.Text):
        return "text"
    if isinstance(feature, features.ClassLabel):
        return "class"
    if isinstance(feature, features.Sequence):
        return "seq:" + feature_kind(feature.feature)
    if isinstance(feature, features.FeaturesDict):
        return "dict"
    if isinstance(feature, features.Tensor) and tuple(feature.shape) == ():
        kind = getattr(feature.np_dtype, "kind", "")
        return {"f": "float", "i": "int", "u": "int", "b": "int", "S": "text", "U": "text",
                "O": "text"}.get(kind, "other")
    return "other"


class TfdsDataset:
    """A TFDS dataset prepared in a data dir: its features, their kinds and its rows.

    `glue_texts`: the (text_a, text_b) features of a glue/ config, else None. InputError (one
    line) when the dataset is not prepared (`tfds_datasets`) or is an unknown glue/ config.
    """

    def __init__(self, name, data_dir=None, *, download=False):
        self.name = name
        self.glue_texts = (GLUE_TEXT_FEATURES[name.split(":")[0][5:]]
                           if _known_kind(name) == "glue" else None)
        self.builder = tfds_datasets.open_prepared(name, data_dir, download=download)
        self.features = self.builder.info.features
        self.kinds = {key: feature_kind(feature) for key, feature in self.features.items()}

    @property
    def splits(self):
        """The dataset's split names ([] where TFDS does not know them, e.g. mocked)."""
        return list(self.builder.info.splits)

    def describe(self):
        return ", ".join(f"{k}: {v}" for k, v in self.kinds.items())

    def refuse(self, problem):
        """InputError naming the dataset, its data dir and its features, then `problem`."""
        raise InputError(f"TFDS dataset {self.name!r} ({self.builder.data_dir}; features "
                         f"{self.describe()}): {problem}")

    def pick(self, given, default, candidates, flag, what):
        """The feature named by --`flag` (`given`, unless it is the flag's `default` and no
        feature has that name), else the one candidate; refused otherwise (`what`: why)."""
        if given and given in self.kinds:
            return given
        if given and given != default:
            self.refuse(f"--{flag}={given!r} is not one of its features.")
        if len(candidates) == 1:
            return candidates[0]
        self.refuse(f"{what}; name it with --{flag}.")

    def label_names(self, key):
        """The ClassLabel names of feature `key` (a ClassLabel or a Sequence of one), else
        None."""
        inner = getattr(self.features[key], "feature", self.features[key])
        return list(inner.names) if hasattr(inner, "names") else None

    def rows(self, split):
        """(where, row) of each row of a split ("train", "train[:10%]", ...): `where` names
        the dataset, split and row for messages and examples' `source`."""
        import tensorflow_datasets as tfds

        dataset = tfds_datasets.split_dataset(self.builder, self.name, split)
        for i, row in enumerate(tfds.as_numpy(dataset)):
            yield f"{self.name}[{split}]:{i}", row


class TfdsTask:
    """A TFDS dataset prepared in a data dir, read as a fine-tuning task (see the module).

    `task`: the task type to read it as (a name or a Task object; None: the one its name or
    features say); the fields name features (None: found from the features). InputError (one
    line, naming the dataset and its features) when the dataset is not prepared or its
    features do not make a task of that type. The reader's feature names (text_a, text_b,
    label; words, tags) read as attributes.
    """

    def __init__(self, name, data_dir=None, *, task=None, download=False, text_a_field=None,
                 text_b_field=None, label_field=None):
        self.name = name
        self.dataset = TfdsDataset(name, data_dir, download=download)
        named = tfds_task_type(name)
        task = task or named
        if task is None:
            task = task_types.infer_task(self.dataset, label_field)
        elif isinstance(task, str):
            task = task_types.get_task(task)
        if named and task.name != named:
            raise InputError(f"--tfds_name={name} is a {named} task, not --task={task.name}.")
        self.task, self.task_type = task, task.name
        self.reader = task.tfds_reader(self.dataset, text_a_field=text_a_field,
                                       text_b_field=text_b_field, label_field=label_field)

    def __getattr__(self, attr):
        reader = self.__dict__.get("reader")
        if reader is None:
            raise AttributeError(attr)
        return getattr(reader, attr)

    @property
    def splits(self):
        return self.dataset.splits

    def label_map(self) -> LabelMap | None:
        """The LabelMap in the dataset's ClassLabel order; None where the examples' labels
        make it (strings) and for the task types without one (regression, span_qa)."""
        return self.reader.label_map() if self.task.needs_label_map else None

    def examples(self, split: str) -> list:
        """The examples of a split ("train", "validation", "train[:10%]", ...); unlabeled
        rows (ClassLabel -1, GLUE's test splits) get label None."""
        return [self.reader.example(row, where, split)
                for where, row in self.dataset.rows(split)]


def tfds_label_map(name: str, data_dir: str | None = None, **options) -> LabelMap | None:
    """The LabelMap of a TFDS task in the dataset's own ClassLabel order (so model ids equal
    TFDS ids); None for regression (glue/stsb), SQuAD and string labels. `options`: those
    of TfdsTask (task, download, text_a_field, text_b_field, label_field)."""
    named = tfds_task_type(name)
    if named and not task_types.get_task(named).needs_label_map:  # known without opening it
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


__all__ = ["GLUE_TEXT_FEATURES", "SQUAD_TFDS_NAMES", "CONLL_TFDS_NAMES", "KNOWN_TASK_TYPES",
           "TfdsDataset", "TfdsTask", "use_task_types", "tfds_task_type", "tfds_label_map",
           "load_tfds_task"]
