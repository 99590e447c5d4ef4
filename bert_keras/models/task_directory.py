"""A trained task directory read back (`bert_keras.tasks.task_io.save_task` writes it):
task.json, model.keras and the tokenizer files. Here, below the task types, so that task
models' `from_pretrained` can start from one.

>>> import bert_keras as bk  # doctest: +SKIP
>>> model, tokenizer, info = load_task_directory("runs/paraphrase/best")  # doctest: +SKIP
"""

import os
import warnings
import zipfile

import keras

from bert_keras.errors import InputError
from bert_keras.files import read_json
from bert_keras.models.encoder import BertEncoder
from bert_keras.text.tokenizers import load_tokenizer

TASK_INFO = "task.json"


def is_task_directory(path):
    return os.path.isfile(os.path.join(path, TASK_INFO))


def read_task_info(directory):
    """The task.json dict of a directory written by `save_task` (FileNotFoundError without
    one, InputError for a corrupt one)."""
    info_path = os.path.join(directory, TASK_INFO)
    if not os.path.exists(info_path):
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
    model.keras names must be registered: import `bert_keras.models.task_models` first)."""
    info = read_task_info(directory)
    model_path = os.path.join(directory, "model.keras")
    if not zipfile.is_zipfile(model_path):  # Keras says "File not found" for a truncated one
        raise InputError(f"{model_path} is missing or corrupt (not a complete .keras archive); "
                         "rerun the fine-tuning or pretraining that wrote it.")
    with warnings.catch_warnings():  # the optimizer state is not needed to predict or export
        warnings.filterwarnings("ignore", message=".*Skipping variable loading for optimizer")
        model = keras.saving.load_model(model_path, compile=False)
    tokenizer = load_tokenizer(directory, lower_case=info["lower_case"])
    encoder_of = getattr(model, "encoder", model if isinstance(model, BertEncoder) else None)
    if encoder_of is not None:
        encoder_of.check_tokenizer(tokenizer, directory)
    return model, tokenizer, info
