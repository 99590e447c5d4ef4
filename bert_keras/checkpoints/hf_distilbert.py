"""Hugging Face DistilBERT (`DistilBertModel` and its task classes): no token types, no
pooler, layer norm epsilon fixed at 1e-12, its own tensor names (q_lin, sa_layer_norm, ffn.lin1)."""

from bert_keras.checkpoints.hf_bert import activation, block_names, embedding_names, prefix


def encoder_config(c, path):
    return dict(
        vocab_size=c["vocab_size"], num_layers=c["n_layers"], hidden_size=c["dim"],
        num_heads=c["n_heads"], intermediate_size=c["hidden_dim"],
        activation=activation(c, path, key="activation"), dropout=c.get("dropout", 0.1),
        attention_dropout=c.get("attention_dropout", 0.1),
        max_positions=c["max_position_embeddings"], type_vocab_size=0,
        layer_norm_epsilon=1e-12,  # hard-coded in DistilBERT
        initializer_range=c.get("initializer_range", 0.02), use_pooler=False,
    )


def encoder_name_map(arch, tensors):
    p = prefix(tensors, "distilbert")
    names = embedding_names(p, arch)  # no token types: no segment embedding
    for i in range(arch["num_layers"]):
        ours, hf = f"transformer_layer_{i}", f"{p}transformer.layer.{i}"
        names.update(block_names(
            ours, [f"{hf}.attention.{part}" for part in ("q_lin", "k_lin", "v_lin")],
            f"{hf}.attention.out_lin", f"{hf}.sa_layer_norm", f"{hf}.ffn.lin1", f"{hf}.ffn.lin2",
            f"{hf}.output_layer_norm"))
    return names
