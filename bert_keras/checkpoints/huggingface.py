"""The Hugging Face layout: `config.json` + `model.safetensors` (read with numpy, no torch).

A layout reader that asks the family registry (`bert_keras.families`): `config.json`'s
`model_type` picks the family module, which maps the config to BertEncoder arguments and our
variable paths to its tensor names, and names its heads' tensors; this module reads the files
and builds the heads' name maps from those tables. Whether the file holds one of the family's
`POOLER_TENSORS` decides `use_pooler` (task-model files of RoBERTa and ALBERT often have none;
DistilBERT and ELECTRA never).
"""

import os
import re

from bert_keras import families
from bert_keras.checkpoints.assign import CheckpointError, identity, transpose
from bert_keras.checkpoints.safetensors import read_safetensors, tensor_names
from bert_keras.families import (
    DEFAULT_MODEL_TYPE,
    FAMILIES,  # noqa: F401  (re-exported: this module's API)
    family_of_config,
    get_family,
)
from bert_keras.files import directory_json, exists


def is_layout(files):
    return "config.json" in files and "model.safetensors" in files


def read_family(path):
    """(family module, config.json dict) of checkpoint directory `path`; InputError naming it
    for a model_type that no family reads."""
    config = directory_json(path, "config.json")  # once, for a files.KnownDirectory
    return family_of_config(config, path), config


def read_config(path):
    """(model_type, config.json dict) of checkpoint directory `path` (`read_family`)."""
    family, config = read_family(path)
    return family.MODEL_TYPE, config


def encoder_config(path):
    """The BertEncoder arguments of `path`/config.json."""
    family, config = read_family(path)
    arguments = family.encoder_config(config, path)
    names = tensor_names(os.path.join(path, "model.safetensors"))
    arguments["use_pooler"] = any(n in family.POOLER_TENSORS for n in names)
    return arguments


def read_tensors(path):
    """The tensors of `path`/model.safetensors, and the ones its family's files leave out
    because they are zeros (`implied_tensors`: ModernBERT's bias-free heads)."""
    tensors = read_safetensors(os.path.join(path, "model.safetensors"))
    # Older Hugging Face files name LayerNorm weights gamma/beta.
    tensors = {re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight",
                      re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)): value
               for name, value in tensors.items()}
    family, config = read_family(path)
    implied = getattr(family, "implied_tensors", None)
    return {**implied(config, tensors), **tensors} if implied else tensors


def encoder_name_map(arch, tensors, path):
    """Our encoder's variable paths -> the tensor names of checkpoint `path`'s family."""
    return read_family(path)[0].encoder_name_map(arch, tensors)


def task_head(path, transformers_head):
    """The `TaskHead` of checkpoint `path`'s `*<transformers_head>`
    (`families.task_head`)."""
    return families.task_head(read_family(path)[0], transformers_head)


def head_names(table, head):
    """A head layer named `head` with the layers of `table` (a `TaskHead`: `hidden`
    dense, `hidden_norm`, `logits`) -> the tensors of the modules `table` names."""
    names = {f"{head}/logits/kernel": ([f"{table.output}.weight"], transpose),
             f"{head}/logits/bias": ([f"{table.output}.bias"], identity)}
    if table.hidden:
        names.update({f"{head}/hidden/kernel": ([f"{table.hidden}.weight"], transpose),
                      f"{head}/hidden/bias": ([f"{table.hidden}.bias"], identity)})
    if table.norm:
        names.update({f"{head}/hidden_norm/gamma": ([f"{table.norm}.weight"], identity),
                      f"{head}/hidden_norm/beta": ([f"{table.norm}.bias"], identity)})
    return names


def label_names(config):
    """config.json's id2label as a list in id order ([] without one)."""
    id2label = {int(k): v for k, v in (config.get("id2label") or {}).items()}
    return [id2label[i] for i in sorted(id2label)]


def head_labels(path):
    """The label names of a fine-tuned checkpoint's head (`label_names`), or None where they
    are transformers' placeholders LABEL_0, LABEL_1, ..."""
    labels = label_names(read_config(path)[1])
    if labels == [f"LABEL_{i}" for i in range(len(labels))]:
        return None
    return labels


def head_architecture(path):
    """config.json's first `architectures` entry (e.g. "RobertaForTokenClassification"), or
    None."""
    return (read_config(path)[1].get("architectures") or [None])[0]


def pretraining_head_name_map(mlm_head, nsp_head, next_sentence=True,
                              family=DEFAULT_MODEL_TYPE):
    """Our pretraining-head variable paths -> the head tensor names of the `*ForPreTraining` /
    `*ForMaskedLM` files of `family` (transformers' model_type); ValueError when the family
    has no pair-task head and `next_sentence` asks for one.

    >>> pretraining_head_name_map("m", "n", False, "roberta")["m/decoder/output_bias"][0]
    ['lm_head.bias']
    """
    heads = get_family(family, "pretraining_head_name_map").MASKED_LM_HEAD
    _, dense, layer_norm, bias, pair = heads
    m, n = mlm_head, nsp_head
    names = {
        f"{m}/transform/kernel": ([f"{dense}.weight"], transpose),
        f"{m}/transform/bias": ([f"{dense}.bias"], identity),
        f"{m}/transform_layer_norm/gamma": ([f"{layer_norm}.weight"], identity),
        f"{m}/transform_layer_norm/beta": ([f"{layer_norm}.bias"], identity),
        f"{m}/decoder/output_bias": ([bias], identity),
    }
    if next_sentence:
        if pair is None:
            raise ValueError(f"Hugging Face {family} checkpoints have no next-sentence head.")
        names.update({
            f"{n}/logits/kernel": ([f"{pair}.weight"], transpose),
            f"{n}/logits/bias": ([f"{pair}.bias"], identity),
        })
    return names


def masked_lm_activation(path):
    """The activation of the masked-LM head of checkpoint `path`'s family when it is not the
    encoder's (RoBERTa and ELECTRA's generator: the exact GELU), else None."""
    return read_family(path)[0].MASKED_LM_HEAD.activation


def replaced_token_head_name_map(head, path):
    """A ReplacedTokenHead named `head` -> the discriminator head of checkpoint `path`'s
    family (`ElectraForPreTraining`'s); CheckpointError for a family without one."""
    if not exists(os.path.join(path, "config.json")):
        raise CheckpointError(f"Checkpoint {path} has no config.json: a replaced-token detection "
                              "head is read from a transformers directory.")
    family = read_family(path)[0]
    if family.REPLACED_TOKEN_HEAD is None:
        raise CheckpointError(f"Checkpoint {path} is a {family.MODEL_TYPE} model, whose family "
                              "has no replaced-token detection head.")
    return replaced_token_head_names(family, head)


def replaced_token_head_names(family, head):
    """A ReplacedTokenHead named `head` -> the discriminator head tensors of `family` (a family
    module with a REPLACED_TOKEN_HEAD)."""
    p = family.REPLACED_TOKEN_HEAD
    return {f"{head}/hidden/kernel": ([f"{p}.dense.weight"], transpose),
            f"{head}/hidden/bias": ([f"{p}.dense.bias"], identity),
            f"{head}/logits/kernel": ([f"{p}.dense_prediction.weight"], transpose),
            f"{head}/logits/bias": ([f"{p}.dense_prediction.bias"], identity)}
