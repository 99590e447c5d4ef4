"""What a directory given to an export or a loader holds, resolved once: `describe` reads its
task.json or its transformers config.json (once), and names its kind, family, task type,
tokenizer and task options (`Source`); `load` builds its model from that description alone.

Every reader below gets the directory as a `files.KnownDirectory` that carries the config.json
already read, so the tokenizer, the encoder and the heads never read it again (an export of a
fine-tuned transformers checkpoint read it 12 times before).

Kinds:
- TASK_DIRECTORY: written by `task_io.save_task` (task.json, model.keras, tokenizer files);
- TRANSFORMERS_TASK: a fine-tuned transformers checkpoint, the task type whose head config.json's
  `architectures` names (`Task.reads_transformers`);
- CHECKPOINT: a pretrained checkpoint of any layout (transformers, Google TF1, our encoder
  directory), served as the task type it is described as (a bare encoder).

The task types come from the registry (`registry.describe`), which sits above this module.

>>> source = describe("runs/paraphrase/best", task_types)  # doctest: +SKIP
>>> source.kind, source.task.name, source.info["labels"]  # doctest: +SKIP
('task directory', 'classification', ['0', '1'])
>>> model, info = load(source)  # doctest: +SKIP
"""

import dataclasses
import os
import types

from bert_keras import checkpoints, files
from bert_keras.checkpoints import huggingface
from bert_keras.errors import InputError
from bert_keras.models.encoder import BertEncoder
from bert_keras.tasks import task_io
from bert_keras.tasks.base import Task
from bert_keras.text.tokenizers import load_tokenizer

TASK_DIRECTORY = "task directory"
TRANSFORMERS_TASK = "transformers task"
CHECKPOINT = "checkpoint"
SEQ_LENGTH = 128  # a checkpoint's served row, where its position table is not shorter
CONFIG_FILE = "config.json"


@dataclasses.dataclass(frozen=True)
class Source:
    """A directory's description: enough to load its model and export it.

    Attributes:
      path: the directory (a `files.KnownDirectory` carrying its config.json, if it has one).
      kind: TASK_DIRECTORY, TRANSFORMERS_TASK or CHECKPOINT.
      task: the Task object of what it holds.
      tokenizer: its tokenizer.
      info: task.json's options (task, labels, seq_length, lower_case, text_fields, decoding);
        seq_length None until `load` for a transformers directory or a checkpoint.
      family: the family module of a transformers directory, else None.
      architecture: config.json's first `architectures` entry, else None.
    """

    path: str
    kind: str
    task: Task
    tokenizer: object
    info: dict
    family: types.ModuleType = None
    architecture: str = None


def is_transformers_directory(path):
    """Whether `path` is a transformers checkpoint directory (config.json + safetensors)."""
    return huggingface.is_layout(files.listdir(path) if files.isdir(path) else ())


def describe(path, task_types, checkpoint_task=None):
    """The Source of a task directory or a fine-tuned transformers checkpoint; `task_types`:
    the registry's Task classes. FileNotFoundError for a directory that is neither (as
    `task_io.read_task_info` says it); InputError for a transformers head no task type reads.
    With `checkpoint_task` (a Task), any other directory is a CHECKPOINT served as it."""
    path = os.fspath(path)
    if task_io.is_task_directory(path) or (checkpoint_task is None
                                           and not is_transformers_directory(path)):
        info = task_io.read_task_info(path)
        by_name = {cls.name: cls for cls in task_types}
        if info["task"] not in by_name:
            raise InputError(f"{files.join(path, task_io.TASK_INFO)}: unknown task "
                             f"{info['task']!r}; expected one of {tuple(by_name)}.")
        return Source(path, TASK_DIRECTORY, by_name[info["task"]](),
                      load_tokenizer(path, lower_case=info["lower_case"]), info)
    if not is_transformers_directory(path):
        return describe_checkpoint(path, checkpoint_task)
    path, family, config = _transformers(path)
    architecture = (config.get("architectures") or [None])[0]
    tasks = [cls() for cls in task_types]
    task = next((t for t in tasks if t.reads_transformers(architecture, config)), None)
    if task is None and checkpoint_task is not None:
        return _checkpoint(path, checkpoint_task, family, architecture)
    if task is None:
        head_names = sorted({t.transformers_head for t in tasks if t.transformers_head})
        raise InputError(f"{path}: config.json's architectures {architecture!r} (problem_type "
                         f"{config.get('problem_type')!r}) is not a fine-tuned head that can be "
                         f"exported (*{', *'.join(head_names)}); export an encoder with "
                         "--encoder_dir.")
    tokenizer = load_tokenizer(path)
    labels = huggingface.label_names(config) if task.needs_label_map else None
    info = dict(task=task.name, labels=labels, seq_length=None,
                lower_case=tokenizer.lower_case, text_fields=task.text_fields([]))
    return Source(path, TRANSFORMERS_TASK, task, tokenizer, info, family, architecture)


def describe_checkpoint(path, task):
    """The Source of a pretrained checkpoint directory (any layout) served as `task` (the
    registry's bare encoder)."""
    path = os.fspath(path)
    if not is_transformers_directory(path):
        return _checkpoint(path, task)
    path, family, config = _transformers(path)
    return _checkpoint(path, task, family, (config.get("architectures") or [None])[0])


def _checkpoint(path, task, family=None, architecture=None):
    checkpoints.detect_format(path)  # a directory that is no checkpoint: said as such first
    tokenizer = load_tokenizer(path)
    info = dict(task=task.name, labels=None, seq_length=None, lower_case=tokenizer.lower_case,
                text_fields=["text"])
    return Source(path, CHECKPOINT, task, tokenizer, info, family, architecture)


def load(source, seq_length=SEQ_LENGTH):
    """(model, info) of `source`: its Keras model, checked against its tokenizer, and its
    info with seq_length set (`seq_length` or the position table, whichever is shorter, for a
    transformers directory or a checkpoint)."""
    if source.kind == TASK_DIRECTORY:
        return task_io.load_task_model(source.path, source.tokenizer), source.info
    encoder = BertEncoder.from_pretrained(source.path)
    encoder.check_tokenizer(source.tokenizer, source.path)
    info = dict(source.info, seq_length=min(seq_length, encoder.max_sequence_length))
    if source.kind == CHECKPOINT:
        return encoder, info
    task = source.task
    model = task.build_model(encoder, task.transformers_label_map(info["labels"]), dropout=0.0,
                             checkpoint=source.path)  # the family's head, as trained
    task.load_transformers_head(model, source.path)  # strict: a head that does not fit fails
    return model, info


def _transformers(path):
    """(path as a KnownDirectory carrying its config.json, family module, config dict): the
    one read of config.json."""
    config = files.read_json(files.join(path, CONFIG_FILE))
    known = files.KnownDirectory(path, {CONFIG_FILE: config})
    family, _ = huggingface.read_family(known)
    return known, family, config
