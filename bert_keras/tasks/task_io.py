"""A trained task directory: the one hand-off between training tools and export, written
and read here.

    DIR/task.json    {"task": ..., "labels": [...] | null, "seq_length": int,
                      "lower_case": bool, "text_fields": [...], "metrics": {...},
                      "decoding": {...} (span_qa: doc_stride, max_query_length, ...)}
    DIR/model.keras  the Keras task model (BertClassifier, BertTokenClassifier, BertSpanQA,
                     BertPretrainer, BertEmbedder or a bare BertEncoder): its weights, not
                     its optimizer's state (the run's checkpoints hold that, to resume)
    DIR/vocab.txt    the tokenizer's files (WordPiece: vocab.txt)

`tools/finetune.py` and `tools/pretrain.py` write it; `tools/export.py` reads it
(`registry.load_task`, which reads a fine-tuned transformers checkpoint too). Below the task
types, so that the task models' `from_pretrained` can start from one.

Example:
>>> import bert_keras as bk  # doctest: +SKIP
>>> bk.save_task("runs/paraphrase/best", clf, tokenizer, task="classification",
...              labels=["0", "1"], seq_length=128,
...              text_fields=["text_a", "text_b"])  # doctest: +SKIP
>>> model, tokenizer, info = bk.load_task("runs/paraphrase/best")  # doctest: +SKIP
"""

import contextlib
import warnings
import zipfile

import keras

from bert_keras import files
from bert_keras.directories import is_complete, write_directory
from bert_keras.errors import InputError
from bert_keras.files import read_json, write_json
from bert_keras.models.encoder import BertEncoder
from bert_keras.text.tokenizers import load_tokenizer

TASK_INFO = "task.json"

def is_task_directory(path):
    """Whether `path` (local or a URL) is a complete task directory (`directories.is_complete`)."""
    return is_complete(path, TASK_INFO)


def read_task_info(directory):
    """The task.json dict of a directory written by `save_task` (FileNotFoundError without
    one, InputError for a corrupt one)."""
    info_path = files.join(directory, TASK_INFO)
    if not files.exists(directory):
        raise FileNotFoundError(f"{directory} does not exist.")
    if not is_task_directory(directory):
        raise FileNotFoundError(
            f"{directory} is not a trained task directory: no task.json (written last by "
            "tools/finetune.py and tools/pretrain.py, so the run may not have finished)."
        )
    info = read_json(info_path)
    missing = [key for key in ("task", "lower_case") if key not in info]
    if missing:
        raise InputError(f"{info_path} is corrupt (no {missing}); rerun the fine-tuning or "
                         "pretraining that wrote it.")
    return info


def load_task_directory(directory):
    """(model, tokenizer, info) of a directory written by `save_task` (the Keras classes that
    model.keras names are registered by `import bert_keras`)."""
    info = read_task_info(directory)
    tokenizer = load_tokenizer(directory, lower_case=info["lower_case"])
    return load_task_model(directory, tokenizer), tokenizer, info


def load_task_model(directory, tokenizer):
    """The Keras model of task directory `directory`, checked against its `tokenizer`."""
    model_path = files.join(directory, "model.keras")
    if not _is_zip_file(model_path):  # Keras says "File not found" for a truncated one
        raise InputError(f"{model_path} is missing or corrupt (not a complete .keras archive); "
                         "rerun the fine-tuning or pretraining that wrote it.")
    with warnings.catch_warnings():  # no optimizer state (or, in older files, one not needed)
        warnings.filterwarnings("ignore", message=".*Skipping variable loading for optimizer")
        model = keras.saving.load_model(model_path, compile=False)
    encoder_of = getattr(model, "encoder", model if isinstance(model, BertEncoder) else None)
    if encoder_of is not None:
        encoder_of.check_tokenizer(tokenizer, directory)
    return model


def save_task(directory, model, tokenizer, task, seq_length, labels=None, text_fields=("text",),
              metrics=None, decoding=None):
    """Writes `model`, its tokenizer's vocab and the task metadata to `directory`, atomically:
    built in a temporary sibling and swapped in when complete (`directories.write_directory`), so a
    kill or a full disk leaves the previous complete directory, and a re-save drops old files.
    `decoding`: the run's options its predictions depend on (`Task.decoding_options`), which
    the export answers with."""
    if not isinstance(task, str) or not task:
        raise ValueError(f"task must be the name of a task type, got {task!r}.")
    info = dict(task=task, labels=None if labels is None else [str(label) for label in labels],
                seq_length=int(seq_length), lower_case=bool(tokenizer.lower_case),
                text_fields=list(text_fields), metrics=metrics or {})
    if decoding:
        info["decoding"] = dict(decoding)

    def write(path):
        with _optimizer_detached(model):
            model.save(files.join(path, "model.keras"))
        tokenizer.save(path)
        write_json(files.join(path, TASK_INFO), info)

    write_directory(directory, write, marker="task.json")


@contextlib.contextmanager
def _optimizer_detached(model):
    """`model` without its optimizer while its .keras file is written, which then holds the
    weights only: Keras 3 saves a compiled model's optimizer variables too (AdamW: two slots a
    weight, a file three times the size), state that the users who load, convert and export
    the directory never read; a run resumes from its checkpoints, which keep it."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        yield
        return
    model.optimizer = None
    try:
        yield
    finally:
        model.optimizer = optimizer


def find_task_directory(path, run_subdir):
    """The task directory of `path`: `path` itself when it holds task.json, else its
    `run_subdir` (a run's output: fine-tuning's "best", pretraining's "final") when that does;
    None otherwise."""
    for candidate in (path, files.join(path, run_subdir)):
        if is_task_directory(candidate):
            return candidate
    return None


def _is_zip_file(path):
    """Whether `path` exists and is a whole zip archive (read through tf.io.gfile)."""
    if not files.exists(path) or files.isdir(path):
        return False
    with files.open_file(path, "rb") as f:
        return zipfile.is_zipfile(f)
