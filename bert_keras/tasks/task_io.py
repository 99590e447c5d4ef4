"""A trained task directory: the one hand-off between training tools and export.

    DIR/task.json    {"task": ..., "labels": [...] | null, "seq_length": int,
                      "lower_case": bool, "text_fields": [...], "metrics": {...},
                      "decoding": {...} (span_qa: doc_stride, max_query_length, ...)}
    DIR/model.keras  the Keras task model (BertClassifier, BertTokenClassifier, BertSpanQA,
                     BertPretrainer or a bare BertEncoder)
    DIR/vocab.txt    the WordPiece vocabulary

`tools/finetune.py` and `tools/pretrain.py` write it; `tools/export.py` reads it.

Example:
>>> import bert_keras as bk  # doctest: +SKIP
>>> bk.save_task("runs/paraphrase/best", clf, tokenizer, task="classification",
...              labels=["0", "1"], seq_length=128, text_fields=["text_a", "text_b"])  # doctest: +SKIP
>>> model, tokenizer, info = bk.load_task("runs/paraphrase/best")  # doctest: +SKIP
"""

import os

from bert_keras.checkpoints import huggingface
from bert_keras.errors import InputError
from bert_keras.files import write_directory, write_json

# Imported for their side effect of registering the Keras classes that model.keras names.
from bert_keras.models import encoder, heads, task_models  # noqa: F401
from bert_keras.models.task_directory import (  # noqa: F401  (read_task_info: task_io's API)
    is_task_directory, load_task_directory, read_task_info)
from bert_keras.models.encoder import BertEncoder
from bert_keras.tasks.registry import TASKS, get_task
from bert_keras.text.tokenizers import load_tokenizer


def save_task(directory, model, tokenizer, task, seq_length, labels=None, text_fields=("text",),
              metrics=None, decoding=None):
    """Writes `model`, its tokenizer's vocab and the task metadata to `directory`, atomically:
    built in a temporary sibling and swapped in when complete (`files.write_directory`), so a
    kill or a full disk leaves the previous complete directory, and a re-save drops old files.
    `decoding`: the run's options its predictions depend on (`Task.decoding_options`), which
    the export answers with."""
    if task not in TASKS:
        raise ValueError(f"Unknown task {task!r}; expected one of {TASKS}.")
    info = dict(task=task, labels=None if labels is None else [str(l) for l in labels],
                seq_length=int(seq_length), lower_case=bool(tokenizer.lower_case),
                text_fields=list(text_fields), metrics=metrics or {})
    if decoding:
        info["decoding"] = dict(decoding)

    def write(path):
        model.save(os.path.join(path, "model.keras"))
        tokenizer.save(path)
        write_json(os.path.join(path, "task.json"), info)

    write_directory(directory, write, marker="task.json")


def find_task_directory(path, run_subdir):
    """The task directory of `path`: `path` itself when it holds task.json, else its
    `run_subdir` (a run's output: fine-tuning's "best", pretraining's "final") when that does;
    None otherwise."""
    for candidate in (path, os.path.join(path, run_subdir)):
        if os.path.isfile(os.path.join(candidate, "task.json")):
            return candidate
    return None


def load_task(directory):
    """(model, tokenizer, info) from a directory written by `save_task`, or from a fine-tuned
    transformers checkpoint (`load_transformers_task`)."""
    if (not is_task_directory(directory)
            and huggingface.is_layout(os.listdir(directory) if os.path.isdir(directory) else ())):
        return load_transformers_task(directory)
    return load_task_directory(directory)


def load_transformers_task(directory, seq_length=128):
    """(model, tokenizer, info) of a fine-tuned transformers checkpoint (config.json,
    model.safetensors, the family's tokenizer files): the task type whose head config.json's
    `architectures` names (`Task.reads_transformers`: *ForSequenceClassification by
    problem_type, *ForTokenClassification, *ForQuestionAnswering), the label names from
    `id2label`, the encoder and head weights exactly as in the file.

    >>> model, tokenizer, info = load_transformers_task("roberta-ner/")  # doctest: +SKIP
    >>> info["task"], info["labels"][:2]  # doctest: +SKIP
    ('tagging', ['O', 'B-PER'])
    """
    architecture = huggingface.head_architecture(directory)
    config = huggingface.read_config(directory)[1]
    tasks = [get_task(name) for name in TASKS]
    task = next((t for t in tasks if t.reads_transformers(architecture, config)), None)
    if task is None:
        head_names = sorted({t.transformers_head for t in tasks if t.transformers_head})
        raise InputError(f"{directory}: config.json's architectures {architecture!r} (problem_type "
                         f"{config.get('problem_type')!r}) is not a fine-tuned head that can be "
                         f"exported (*{', *'.join(head_names)}); export an encoder with --encoder_dir.")
    labels = huggingface.label_names(config) if task.needs_label_map else None
    tokenizer = load_tokenizer(directory)
    encoder_of = BertEncoder.from_pretrained(directory)
    encoder_of.check_tokenizer(tokenizer, directory)
    model = task.build_model(encoder_of, task.transformers_label_map(labels), dropout=0.0,
                             checkpoint=directory)  # the family's head, as trained
    task.load_transformers_head(model, directory)  # strict: a head that does not fit is an error
    info = dict(task=task.name, labels=labels,
                seq_length=min(seq_length, encoder_of.max_sequence_length),
                lower_case=tokenizer.lower_case, text_fields=task.text_fields([]))
    return model, tokenizer, info
