"""Hugging Face ELECTRA (`ElectraModel`, `ElectraForPreTraining` = the discriminator,
`ElectraForMaskedLM` = the generator): BERT's layers, embeddings of embedding_size projected
to hidden_size (`embeddings_project`, only when the two differ), no pooler."""

from bert_keras.checkpoints.assign import identity, transpose
from bert_keras.checkpoints.hf_bert import (
    bert_style_arguments, embedding_names, layer_names, prefix)


def encoder_config(c, path):
    embedding_size = c.get("embedding_size") or c["hidden_size"]
    # ELECTRA projects only when the widths differ (electra-small); base/large have none.
    return dict(bert_style_arguments(c, path), use_pooler=False,
                embedding_size=None if embedding_size == c["hidden_size"] else embedding_size)


def encoder_name_map(arch, tensors):
    p = prefix(tensors, "electra")
    names = embedding_names(p, arch)
    if arch.get("embedding_size") is not None:
        names.update({
            "embedding_projection/kernel": ([f"{p}embeddings_project.weight"], transpose),
            "embedding_projection/bias": ([f"{p}embeddings_project.bias"], identity),
        })
    for i in range(arch["num_layers"]):
        names.update(layer_names(f"transformer_layer_{i}", f"{p}encoder.layer.{i}"))
    return names
