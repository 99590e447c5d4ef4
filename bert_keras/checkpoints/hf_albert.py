"""Hugging Face ALBERT (`AlbertModel`, `AlbertForMaskedLM`, ...): factorized embeddings
(`embedding_hidden_mapping_in`, always present) and layers shared in `num_hidden_groups`
groups; a pooler only in some files (a bare `albert.pooler` Linear)."""

from bert_keras.checkpoints.assign import identity, transpose
from bert_keras.checkpoints.hf_bert import (
    bert_style_arguments, block_names, embedding_names, prefix)
from bert_keras.errors import InputError


def encoder_config(c, path):
    if c.get("inner_group_num", 1) != 1:
        raise InputError(f"{path}: inner_group_num {c['inner_group_num']} is not supported "
                         "(only 1, as in every published ALBERT).")
    return dict(bert_style_arguments(c, path, default_dropout=0.0),  # ALBERT's dropout: 0
                embedding_size=c["embedding_size"], num_layer_groups=c.get("num_hidden_groups", 1))


def has_pooler(names):
    return any(n in ("pooler.weight", "albert.pooler.weight") for n in names)


def encoder_name_map(arch, tensors):
    p = prefix(tensors, "albert")
    names = embedding_names(p, arch)
    names.update({
        "embedding_projection/kernel": ([f"{p}encoder.embedding_hidden_mapping_in.weight"], transpose),
        "embedding_projection/bias": ([f"{p}encoder.embedding_hidden_mapping_in.bias"], identity),
    })
    if arch.get("use_pooler", True):
        names.update({"pooler/kernel": ([f"{p}pooler.weight"], transpose),
                      "pooler/bias": ([f"{p}pooler.bias"], identity)})
    for g in range(arch["num_layer_groups"] or arch["num_layers"]):
        ours, hf = f"transformer_layer_{g}", f"{p}encoder.albert_layer_groups.{g}.albert_layers.0"
        names.update(block_names(
            ours, [f"{hf}.attention.{part}" for part in ("query", "key", "value")],
            f"{hf}.attention.dense", f"{hf}.attention.LayerNorm", f"{hf}.ffn", f"{hf}.ffn_output",
            f"{hf}.full_layer_layer_norm"))
    return names
