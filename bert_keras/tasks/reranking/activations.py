"""What a reranker applies to its logits to give scores, and which one a sentence-transformers
`CrossEncoder` directory names.

CrossEncoder keeps its activation's class path in config_sentence_transformers.json
("activation_fn", version 6), in config.json's "sentence_transformers" ("activation_fn",
versions 4-5) or in config.json's "sbert_ce_default_activation_function" (before 4); a
checkpoint that names none gets Sigmoid, CrossEncoder's default for one label.

>>> import numpy as np
>>> [round(float(s), 4) for s in activate(np.array([0.0, 2.0]), "sigmoid")]
[0.5, 0.8808]
>>> activation_of_class_path("torch.nn.modules.linear.Identity", "config.json")
'identity'
"""

import numpy as np
import tensorflow as tf

from bert_keras import files
from bert_keras.errors import InputError

ACTIVATIONS = ("sigmoid", "identity", "tanh")
DEFAULT_ACTIVATION = "sigmoid"
# torch.nn class name -> ours.
_TORCH_CLASSES = {"Sigmoid": "sigmoid", "Identity": "identity", "Tanh": "tanh"}
# ours -> the class path CrossEncoder saves.
CLASS_PATHS = {"sigmoid": "torch.nn.modules.activation.Sigmoid",
               "identity": "torch.nn.modules.linear.Identity",
               "tanh": "torch.nn.modules.activation.Tanh"}
ST_CONFIG = "config_sentence_transformers.json"


def activate(logits, activation):
    """The scores of `logits` (numpy or a tensor, float32) under `activation`."""
    if isinstance(logits, np.ndarray):
        logits = logits.astype(np.float32)
        if activation == "sigmoid":
            return (1.0 / (1.0 + np.exp(-logits.astype(np.float64)))).astype(np.float32)
        return np.tanh(logits) if activation == "tanh" else logits
    if activation == "sigmoid":
        return tf.sigmoid(logits)
    return tf.tanh(logits) if activation == "tanh" else logits


def check_activation(activation, owner="BertReranker"):
    if activation not in ACTIVATIONS:
        raise ValueError(f"{owner}: activation must be one of {ACTIVATIONS}, got "
                         f"{activation!r}.")


def activation_of_class_path(path, where):
    """Our name of a torch activation class path ("torch.nn.modules.activation.Sigmoid");
    InputError naming `where` for one we do not compute."""
    name = str(path).rsplit(".", 1)[-1]
    if name not in _TORCH_CLASSES:
        raise InputError(f"{where}: activation {path!r} is not one a reranker computes "
                         f"({', '.join(sorted(_TORCH_CLASSES))}).")
    return _TORCH_CLASSES[name]


def checkpoint_activation(path):
    """The activation a CrossEncoder directory (or a plain transformers one) names; the
    default for one that names none (or is not a transformers directory)."""
    st_config = files.join(path, ST_CONFIG)
    if files.exists(st_config):
        named = files.read_json(st_config).get("activation_fn")
        if named:
            return activation_of_class_path(named, st_config)
    config_path = files.join(path, "config.json")
    if not files.exists(config_path):
        return DEFAULT_ACTIVATION
    config = files.read_json(config_path)
    named = ((config.get("sentence_transformers") or {}).get("activation_fn")
             or config.get("sbert_ce_default_activation_function"))
    return activation_of_class_path(named, config_path) if named else DEFAULT_ACTIVATION


def cross_encoder_files(activation):
    """(config.json's head keys, {file: dict}) that make a transformers directory a
    sentence-transformers CrossEncoder scoring with `activation`: one label and no
    problem_type (as CrossEncoder's save writes them), the activation in
    config_sentence_transformers.json (sentence-transformers 6) and in config.json's
    "sentence_transformers" (versions 4-5).

    >>> config, extra = cross_encoder_files("identity")
    >>> config["id2label"], extra[ST_CONFIG]["activation_fn"]
    ({'0': 'LABEL_0'}, 'torch.nn.modules.linear.Identity')
    """
    path = CLASS_PATHS[activation]
    config = {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0},
              "sentence_transformers": {"activation_fn": path}}
    extra = {ST_CONFIG: {"model_type": "CrossEncoder", "activation_fn": path, "prompts": {},
                         "default_prompt_name": None}}
    return config, extra


def names_activation(path):
    """Whether `path` is a sentence-transformers CrossEncoder directory (it says how to score)."""
    if files.exists(files.join(path, ST_CONFIG)):
        return files.read_json(files.join(path, ST_CONFIG)).get("model_type") == "CrossEncoder"
    config_path = files.join(path, "config.json")
    config = files.read_json(config_path) if files.exists(config_path) else {}
    return bool(config.get("sentence_transformers") or config.get(
        "sbert_ce_default_activation_function"))
