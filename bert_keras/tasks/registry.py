"""The one registry of task types: task name (--task, task.json "task") -> Task class; and
what asks every task type: which one a model is (`task_of_model`), and which one a fine-tuned
transformers checkpoint is (`describe`, `load_task`, `load_transformers_task`).

Adding a task type: write the package `bert_keras/tasks/<name>/` with a `Task` subclass and add
its class to TASK_TYPES below (see docs/architecture.md).

>>> sorted(FINETUNING_TASKS)[3:]
['regression', 'reranking', 'span_qa', 'tagging']
>>> get_task("span_qa").label_keys
('start_positions', 'end_positions')
"""

from bert_keras import files
from bert_keras.data.finetuning import task_types, tfds
from bert_keras.errors import InputError
from bert_keras.tasks import sources, task_io
from bert_keras.tasks.classification import Classification, MultiLabel, Regression
from bert_keras.tasks.embedding import Embedding
from bert_keras.tasks.encoder import Encoder
from bert_keras.tasks.multiple_choice import MultipleChoice
from bert_keras.tasks.pretraining import Pretraining
from bert_keras.tasks.pretraining.checkpoint_heads import with_checkpoint_heads
from bert_keras.tasks.reranking import Reranking
from bert_keras.tasks.span_qa import SpanQA
from bert_keras.tasks.tagging import Tagging

# Reranking before the classifications: a BertReranker is a one-output BertClassifier, a
# CrossEncoder checkpoint a one-label *ForSequenceClassification.
TASK_TYPES = {cls.name: cls for cls in (
    Reranking, Classification, MultiLabel, Regression, Tagging, SpanQA, MultipleChoice,
    Pretraining, Encoder, Embedding)}
TASKS = tuple(TASK_TYPES)
RUN_OUTPUTS = ("best", "final")  # the task directories of a fine-tuning / pretraining run
FINETUNING_TASKS = tuple(name for name, cls in TASK_TYPES.items() if cls.finetunable)
# The task types a TFDS dataset's features can make without --task, asked in this order: those
# whose features say it alone (SQuAD's; words + tags) before those a label feature's kind tells.
TFDS_INFERENCE = (SpanQA, Tagging, Regression, MultiLabel, Classification)


def task_of_model(model):
    """The Task object whose `builds(model)` is true; ValueError if none."""
    for cls in TASK_TYPES.values():
        if cls().builds(model):
            return cls()
    raise ValueError(f"{type(model).__name__} is not a model of a task type {TASKS}.")


def get_task(name):
    """The Task object of a task name; ValueError naming the known ones."""
    if name not in TASK_TYPES:
        raise ValueError(f"Unknown task {name!r}; expected one of {TASKS}.")
    return TASK_TYPES[name]()


def tfds_task_of(dataset, label_field=None):
    """The Task object whose features `dataset` (a `tfds.TfdsDataset`) has, the first of
    TFDS_INFERENCE (`Task.reads_tfds`); refused in one line if none."""
    for cls in TFDS_INFERENCE:
        if cls().reads_tfds(dataset, label_field):
            return cls()
    label = label_field if label_field in dataset.kinds else tfds.DEFAULT_LABEL_FIELD
    dataset.refuse("cannot tell its task (no SQuAD features, no tokens + ner tags, no "
                   f"{label!r} label feature); pass --task and name the features with "
                   "--text_a_field, --text_b_field and --label_field.")


task_types.use_task_types(get_task, tfds_task_of)  # data/ reads through these


def describe(directory):
    """What `directory` holds, read once (`sources.Source`: kind, family, task type, tokenizer,
    task options): a task directory written by `task_io.save_task`, or a fine-tuned
    transformers checkpoint whose head a task type reads."""
    return sources.describe(directory, TASK_TYPES.values())


def describe_encoder(directory):
    """The Source of a pretrained checkpoint directory served as a bare encoder."""
    return sources.describe_checkpoint(directory, Encoder())


def load_task(directory):
    """(model, tokenizer, info) from a directory written by `task_io.save_task`, or from a
    fine-tuned transformers checkpoint (`load_transformers_task`)."""
    source = describe(directory)
    model, info = sources.load(source)
    return model, source.tokenizer, info


def load_model(path):
    """(model, tokenizer, labels or None, model_type or None): the model directory `path`
    holds, with its heads, as bert_keras objects (what tools/convert_checkpoint.py
    --output_format=transformers writes, `bk.save_transformers`): a task directory (or a
    run's best/ or final/) its task model and labels; a fine-tuned transformers checkpoint its
    task model (`load_task`); any other checkpoint its encoder with the pretraining heads its
    files hold (`pretraining.checkpoint_heads`). model_type: a transformers directory's own.

    >>> model, tokenizer, labels, model_type = load_model("runs/paraphrase")  # doctest: +SKIP
    """
    for candidate in (path, *(files.join(path, name) for name in RUN_OUTPUTS)):
        if task_io.is_task_directory(candidate):
            model, tokenizer, info = load_task(candidate)
            return model, tokenizer, info.get("labels"), None
    source = sources.describe(path, TASK_TYPES.values(), checkpoint_task=Encoder())
    model, info = sources.load(source)
    if source.kind == sources.CHECKPOINT:
        model = with_checkpoint_heads(model, source.path, source.family)
    return (model, source.tokenizer, info.get("labels"),
            source.family.MODEL_TYPE if source.family else None)


def load_transformers_task(directory, seq_length=sources.SEQ_LENGTH):
    """(model, tokenizer, info) of a fine-tuned transformers checkpoint (config.json,
    model.safetensors, the family's tokenizer files): the task type whose head config.json's
    `architectures` names (`Task.reads_transformers`: *ForSequenceClassification by
    problem_type, *ForTokenClassification, *ForQuestionAnswering), the label names from
    `id2label`, the encoder and head weights exactly as in the file.

    >>> model, tokenizer, info = load_transformers_task("roberta-ner/")  # doctest: +SKIP
    >>> info["task"], info["labels"][:2]  # doctest: +SKIP
    ('tagging', ['O', 'B-PER'])
    """
    if not sources.is_transformers_directory(directory):
        raise InputError(f"{directory} is not a transformers checkpoint (config.json + "
                         "model.safetensors).")
    source = describe(directory)
    model, info = sources.load(source, seq_length)
    return model, source.tokenizer, info
