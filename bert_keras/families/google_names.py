"""What Google's TF1 checkpoints share (google-research/bert `modeling.py` and the ALBERT and
ELECTRA code built on it): the activation names, the variable names of BERT's embeddings and
layers, and `GoogleLayout`, how a family with a Google layout is recognized and read.

Google's names map to lists of TF1 variable names; the checkpoint reader
(`bert_keras.checkpoints.google`) adds the combine (TF1 kernels are already (in, out)).
"""

import dataclasses
from typing import Callable, Optional

from bert_keras.errors import InputError
from bert_keras.families.config_arguments import encoder_arguments

# Google's TF1 modeling.py calls its tanh approximation "gelu".
ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu"}


@dataclasses.dataclass(frozen=True)
class GoogleLayout:
    """How a family's Google TF1 checkpoint directories look.

    name: the family as Google's repository names it, for messages ("ALBERT").
    config_file: the JSON config beside the checkpoint that marks the dialect, or None.
    marker: without such a file, a variable that only this dialect has, or None.
    encoder_config: (the config dict, or {variable: shape} for a `marker` dialect, path) ->
        the BertEncoder arguments.
    encoder_names: architecture -> {our variable path: [TF1 variable names]}.
    """
    name: str
    config_file: Optional[str]
    marker: Optional[str]
    encoder_config: Callable
    encoder_names: Callable


def activation(c, path):
    """Our activation name of a Google config's `hidden_act`; InputError naming `path`."""
    if c["hidden_act"] not in ACTIVATIONS:
        raise InputError(f"{path}: hidden_act {c['hidden_act']!r} is not one of "
                         f"{sorted(ACTIVATIONS)}.")
    return ACTIVATIONS[c["hidden_act"]]


def bert_encoder_config(c, path):
    """The BertEncoder arguments of a `bert_config.json` dict `c`."""
    return encoder_arguments(c, activation(c, path))


def embedding_names(scope):
    """Our embeddings -> the TF1 `<scope>/embeddings/*` variables."""
    e = f"{scope}/embeddings"
    return {
        "token_embedding/embeddings": [f"{e}/word_embeddings"],
        "segment_embedding/embeddings": [f"{e}/token_type_embeddings"],
        "position_embedding/embeddings": [f"{e}/position_embeddings"],
        "embeddings_layer_norm/gamma": [f"{e}/LayerNorm/gamma"],
        "embeddings_layer_norm/beta": [f"{e}/LayerNorm/beta"],
    }


def block_names(ours, qkv, attention_output, attention_norm, intermediate, output, output_norm):
    """Our TransformerBlock `ours` -> TF1 dense / LayerNorm scopes; `qkv` the query, key and
    value scopes (fused here by concatenating columns)."""
    dense = lambda name, scope: {f"{ours}/{name}/kernel": [f"{scope}/kernel"],  # noqa: E731
                                 f"{ours}/{name}/bias": [f"{scope}/bias"]}
    norm = lambda name, scope: {f"{ours}/{name}/gamma": [f"{scope}/gamma"],  # noqa: E731
                                f"{ours}/{name}/beta": [f"{scope}/beta"]}
    return {
        f"{ours}/attention/qkv/kernel": [f"{n}/kernel" for n in qkv],
        f"{ours}/attention/qkv/bias": [f"{n}/bias" for n in qkv],
        **dense("attention/output", attention_output),
        **norm("attention_layer_norm", attention_norm),
        **dense("intermediate", intermediate), **dense("output", output),
        **norm("output_layer_norm", output_norm),
    }


def layer_names(ours, g):
    """Our block `ours` -> the BERT names of TF1 layer scope `g` (`bert/encoder/layer_0`)."""
    return block_names(
        ours, [f"{g}/attention/self/{part}" for part in ("query", "key", "value")],
        f"{g}/attention/output/dense", f"{g}/attention/output/LayerNorm",
        f"{g}/intermediate/dense", f"{g}/output/dense", f"{g}/output/LayerNorm")


def bert_encoder_names(arch):
    """Our variable paths -> TF1 BERT variable names (`bert/encoder/layer_0/...`).

    >>> bert_encoder_names(dict(num_layers=1))["pooler/kernel"]
    ['bert/pooler/dense/kernel']
    """
    names = embedding_names("bert")
    names.update({"pooler/kernel": ["bert/pooler/dense/kernel"],
                  "pooler/bias": ["bert/pooler/dense/bias"]})
    for i in range(arch["num_layers"]):
        names.update(layer_names(f"transformer_layer_{i}", f"bert/encoder/layer_{i}"))
    return names
