"""The Task protocol: everything that differs between task types, in one class per type.

A task type owns how its examples are read, featurized and batched, which Keras model it
trains, how it predicts, scores and which trivial baselines it reports, and its serving
function in the export. Code above this package (training, serving, tools) asks the task
object (`registry.get_task(name)`) and never switches on a task name. A new task type is one
new package `tasks/<name>/` (its task model, featurizer and `Task` subclass) plus one line in
`registry.py`.

Shape legend (serving functions): B batch, T packed sequence length.
"""

import os

import numpy as np

from bert_keras import metrics
from bert_keras.configs import ConfigError
from bert_keras.data.finetuning import batching
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.tasks.input_lines import InputLine

DEFAULT_EXTENSION_FORMATS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl",
                             ".json": "squad_json"}


class Task:
    """Base of the task types. Class attributes describe the type; methods do its work.

    Subclasses set `name` (the --task value and task.json's "task") and override what
    differs; the defaults suit a task over single texts or pairs with a label per example.
    """

    name = None
    finetunable = True  # trained by tools/finetune.py (pretraining and encoder are not)
    file_formats = ("tsv", "csv", "jsonl")  # readable training-file formats
    main_metric = None  # eval metric that picks the best epoch (higher is better)
    label_keys = "labels"  # target key(s) of the features (see batching.make_dataset)
    needs_label_map = True
    serves_pairs = False  # its export may take two texts (text_a, text_b) per example
    # A training batch's rows are independent, so the trainer may deal them out over replicas
    # (rows r, r + R, ... to replica r); False: fine-tuning on one replica only.
    splits_over_replicas = True
    token_outputs = ()  # per-token model outputs, trimmed per feature by batching.predict
    # Task distillation (--teacher_dir): how the student's logits are compared with the
    # teacher's, one of models.objectives.task_distillation.SOFT_TARGETS; None: not distillable.
    soft_targets = None
    # The options only this task type reads (a `configs.Config` of its package, whose fields
    # are flags of tools/finetune.py): FinetuneConfig.task_options. None: it has none.
    options_class = None
    # File extension (".gz" stripped) -> format, over the defaults of every task type.
    extension_formats = {}

    # -- options ------------------------------------------------------------------------------

    def check_config(self, config):
        """ConfigError for options of a fine-tuning run (FinetuneConfig) this task type
        cannot run with, beyond what its options check alone."""

    def file_format_of(self, path):
        """The file format of `path` from its extension; ConfigError if unknown."""
        name = os.fspath(path).lower().removesuffix(".gz")
        ext = os.path.splitext(name)[1]
        formats = {**DEFAULT_EXTENSION_FORMATS, **self.extension_formats}
        if ext not in formats:
            raise ConfigError(f"cannot infer the format of {path!r} (extension {ext!r}); "
                              "pass --format.")
        return formats[ext]

    # -- data ---------------------------------------------------------------------------------

    def read_files(self, paths, file_format, labeled=True, options=None, **reader_options):
        """Examples from files of one format (`reader_options`: columns, fields, header;
        `options`: the run's task options, None: their defaults)."""
        raise NotImplementedError(f"{self.name} does not read files")

    def is_labeled(self, examples):
        return all(ex.label is not None for ex in examples)

    def label_map(self, train_examples):
        """The LabelMap of the task, from its training examples (None if it has none)."""
        return LabelMap.from_examples(train_examples) if self.needs_label_map else None

    def text_fields(self, examples):
        """The serving_default input names for models trained on these examples."""
        return ["text"]

    def resolve_config(self, config, train):
        """The fine-tuning run's config (FinetuneConfig) with the options this task type
        decides from its training examples filled in (unchanged by default)."""
        return config

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, options=None):
        """Feature rows of `examples`; `options`: the run's task options (None: defaults)."""
        raise NotImplementedError

    def dataset(self, features, batch_size, *, shuffle=False, seed=None, pad_id=0):
        """Length-bucketed (inputs, targets) batches for model.fit."""
        return batching.make_dataset(features, batch_size, self.label_keys, shuffle=shuffle,
                                     seed=seed, pad_id=pad_id)

    # -- TFDS datasets (data.finetuning.tfds) ---------------------------------------------------

    def tfds_reader(self, dataset, *, text_a_field=None, text_b_field=None, label_field=None):
        """How this task type reads the rows of `dataset` (a `tfds.TfdsDataset`): an object
        with `example(row, where, split)` and `label_map()` (the ClassLabel order; None:
        from the examples) whose attributes name the features it reads; the fields: the
        --text_a_field / --text_b_field / --label_field flags (None: found from the
        features). InputError (one line) where the features do not make this task."""
        dataset.refuse(f"--task={self.name} does not read TFDS datasets.")

    def reads_tfds(self, dataset, label_field=None):
        """Whether `dataset`'s features make a task of this type (asked when --task is not
        given, in `registry.TFDS_INFERENCE`'s order)."""
        return False

    # -- fine-tuned transformers checkpoints ----------------------------------------------------

    # The class-name suffix of the transformers heads this task type exports and keeps
    # (e.g. "ForTokenClassification").
    transformers_head = None

    def reads_transformers(self, architecture, config):
        """Whether a transformers checkpoint of `architecture` with config.json `config` is a
        model of this task type (by default: its head is ours)."""
        return (self.transformers_head is not None and bool(architecture)
                and architecture.endswith(self.transformers_head))

    def transformers_label_map(self, labels):
        """The LabelMap of a transformers checkpoint's id2label names (None: not needed)."""
        return LabelMap(labels) if self.needs_label_map else None

    def load_transformers_head(self, model, path):
        """Sets the head of `model` from the transformers checkpoint `path` (CheckpointError
        naming what is missing or mis-shaped)."""
        raise NotImplementedError(f"{self.name} has no transformers head")

    # -- model and evaluation -----------------------------------------------------------------

    def builds(self, model):
        """Whether `model` is a model of this task type (`registry.task_of_model`)."""
        return False

    def raw_examples(self):
        """A few raw inputs of this type's Keras model as a user gives them (a
        `raw_examples.RawExamples`: model class, arguments, fit and predict inputs); None
        where it has no task model of its own. Every task type's contract test runs on them."""
        return None

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None, options=None):
        """The task model over `encoder`; `checkpoint`: the directory the encoder came from
        (a family's own head, or a fine-tuned head, may come with it); `options`: the run's
        task options (an `options_class` object; None: its defaults)."""
        raise NotImplementedError

    def predict(self, model, examples, features, label_map, config):
        """(one JSON-able dict per example, the predicted values that `score` takes);
        `config`: the run's FinetuneConfig (its eval batch size, its task_options)."""
        raise NotImplementedError

    def score(self, examples, predicted, label_map, glue_task=None):
        """Metrics (bert_keras.metrics) of the predictions against the examples' labels."""
        raise NotImplementedError

    def baselines(self, train, examples, label_map):
        """Scores of trivial predictors on `examples`: the floor the model must clear."""
        return {}

    def teacher_metrics(self, predicted, teacher_predicted):
        """How far a distilled student's predictions (`predict`'s second value) agree with its
        teacher's on the same examples (task distillation)."""
        return {"teacher_agreement": metrics.accuracy(teacher_predicted, predicted)}

    # -- serving (in-graph; `fns` is the export's serving.signatures.ServingFunctions) ---------

    def serving_text_fields(self, info):
        """The serving_default input names, from task.json's dict."""
        return ("text",)

    # The serving_default inputs of another rank than 1 ([B]: a text per row), e.g.
    # {"choices": 2} for [B, K] strings; each is refused in the graph unless of its rank.
    serving_ranks = {}
    # {output name: what it holds} of its signatures' outputs, written into the export's
    # metadata (`encode` / `preprocess` outputs: serving.saved_model.ENCODE_OUTPUT_DOCS).
    output_docs = {}

    def serving_labels(self, model, labels):
        """The label names the export serves (checked against the model), or None."""
        return None

    def decoding_options(self, config):
        """The options of a fine-tuning run (FinetuneConfig) that its predictions depend on
        beyond the model, kept in task.json's "decoding" for the export."""
        return {}

    def check_serving(self, fns):
        """InputError (naming the flag) if the export's options leave the task no room."""

    def export_metadata(self, fns):
        """Task-specific entries of the export's metadata asset."""
        return {}

    def warmup_texts(self, fields):
        """{serving input name: example key of serving.warmup.EXAMPLES} for warmup requests."""
        return {f: f for f in fields}

    def warmup_longest(self, fns, field, text):
        """A long text for input `field` of the warmup requests: `text` repeated past a row."""
        return " ".join([text] * fns.seq_length)

    def preprocess(self, fns, texts):
        """Text tensors -> (the three int32 [B, T] inputs, kept segment lengths)."""
        return fns.pack([fns.tokenizer.tokenize(t) for t in texts])

    def serve(self, fns, texts):
        """Text tensors -> the dict of serving_default outputs."""
        raise NotImplementedError

    # More signatures of the export: {name: ((input name, rank), ...)}, string inputs, served
    # by `serve_extra`, warmed up by `extra_warmup`'s requests.
    extra_signatures = {}

    def serve_extra(self, fns, name, inputs):
        """The outputs of extra signature `name` for its checked inputs {name: tensor}."""
        raise NotImplementedError

    def extra_warmup(self, fns):
        """[(signature name, {input name: np.ndarray})] warmup requests of the extra ones."""
        return []

    # tools/predict.py's input line of serving_default, as its help shows it per task type
    # (`input_line` is what reads it).
    input_line_help = "text"

    def input_line(self, signature, inputs):
        """How tools/predict.py reads one line as one request row of `signature`, whose string
        inputs are `inputs` ((name, rank), ...) in the export's order: an
        `input_lines.InputLine` (tab-separated texts, a rank-2 input taking the rest)."""
        return InputLine(inputs)

    # The serving_default outputs padded to the longest text of a batch ([B, W, ...]), and
    # (output, pad value) marking where each text's own values end.
    padded_outputs = ()
    padding_marker = None

    def prediction_rows(self, outputs):
        """A batch of serving_default outputs ({name: numpy [B, ...]}) -> one dict per text
        holding only that text's values (lists, keys in sorted order), as tools/predict.py
        writes them: what a line gets never depends on the lines batched with it."""
        batch = len(next(iter(outputs.values()))) if outputs else 0
        rows = []
        for i in range(batch):
            row = {key: outputs[key][i] for key in sorted(outputs)}
            if self.padding_marker:
                key, pad = self.padding_marker
                own = int(np.sum(row[key] != pad))  # padding is trailing
                for name in self.padded_outputs:
                    if name in row:
                        row[name] = row[name][:own]
            rows.append({key: listed(value) for key, value in row.items()})
        return rows


def listed(value):
    """A numpy value as JSON-able Python: lists, str for bytes."""
    value = value.tolist() if hasattr(value, "tolist") else value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [listed(v) for v in value]
    return value


# Most rows of seq_length tokens one served text may take (the export's `max_windows`:
# tagging's rows of a long text, span QA's windows of a long context): bounds a request's cost.
DEFAULT_MAX_WINDOWS = 64
# Rows of the long texts among an export's warmup requests.
WARMUP_WINDOWS = 4


def max_windows(fns):
    """The most rows one served text may take: the export's `max_windows` option."""
    return int(fns.options.get("max_windows") or DEFAULT_MAX_WINDOWS)


def class_labels(model, labels):
    """The label names of a model with `num_classes` outputs (default "0", "1", ...), checked
    against its number of classes."""
    num = int(getattr(model, "num_classes"))
    labels = list(labels) if labels else [str(i) for i in range(num)]
    if len(labels) != num:
        raise ValueError(f"task.json has {len(labels)} labels {labels} for a model with "
                         f"{num} classes.")
    return labels
