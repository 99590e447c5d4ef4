"""Our own layout: `bert_keras.json` (the encoder's arguments, casing) and `model.safetensors`
keyed by the Keras variable paths, so the file does not depend on Python class names."""

import os

import numpy as np

from bert_keras.checkpoints.assign import identity
from bert_keras.checkpoints.safetensors import read_safetensors, write_safetensors
from bert_keras.directories import write_directory
from bert_keras.errors import InputError
from bert_keras.files import read_json, write_json

CONFIG_FILE = "bert_keras.json"


def is_layout(files):
    return CONFIG_FILE in files


def encoder_config(path):
    """The BertEncoder arguments in `path`/bert_keras.json."""
    config_file = os.path.join(path, CONFIG_FILE)
    config = read_json(config_file)
    if not isinstance(config.get("encoder"), dict):
        raise InputError(f"{config_file} has no \"encoder\" object (the encoder's arguments); "
                         "save the encoder again with `BertEncoder.save_pretrained`.")
    return config["encoder"]


def read_tensors(path):
    return read_safetensors(os.path.join(path, "model.safetensors"))


def encoder_name_map(variable_paths):
    return {p: ([p], identity) for p in variable_paths}


def save_encoder(encoder, path, tokenizer=None):
    """Writes bert_keras.json, model.safetensors and (with a tokenizer) vocab.txt, atomically
    (`directories.write_directory`): a re-save into `path` replaces the directory, old files
    included."""
    config = {"format": "bert_keras", "encoder": encoder.architecture}
    if tokenizer is not None:
        config["lower_case"] = bool(tokenizer.lower_case)

    def write(directory):
        if tokenizer is not None:
            tokenizer.save(directory)
        write_safetensors(os.path.join(directory, "model.safetensors"),
                          {v.path: np.asarray(v.numpy()) for v in encoder.weights})
        write_json(os.path.join(directory, CONFIG_FILE), config)

    write_directory(path, write, marker=CONFIG_FILE)
