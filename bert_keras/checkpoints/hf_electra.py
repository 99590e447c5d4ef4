"""Hugging Face ELECTRA (`ElectraModel`, `ElectraForPreTraining` = the discriminator,
`ElectraForMaskedLM` = the generator): BERT's layers, embeddings of embedding_size projected
to hidden_size (`embeddings_project`, only when the two differ), no pooler."""

from bert_keras.checkpoints.assign import identity, transpose
from bert_keras.checkpoints.hf_bert import activation, embedding_names, layer_names, prefix


def encoder_config(c, path):
    embedding_size = c.get("embedding_size") or c["hidden_size"]
    return dict(
        vocab_size=c["vocab_size"], num_layers=c["num_hidden_layers"],
        hidden_size=c["hidden_size"], num_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"], activation=activation(c, path),
        dropout=c.get("hidden_dropout_prob", 0.1),
        attention_dropout=c.get("attention_probs_dropout_prob", 0.1),
        max_positions=c["max_position_embeddings"], type_vocab_size=c["type_vocab_size"],
        layer_norm_epsilon=c.get("layer_norm_eps", 1e-12),
        initializer_range=c.get("initializer_range", 0.02),
        # ELECTRA projects only when the widths differ (electra-small); base/large have none.
        embedding_size=None if embedding_size == c["hidden_size"] else embedding_size,
        use_pooler=False,
    )


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
