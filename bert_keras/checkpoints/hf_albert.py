"""Hugging Face ALBERT (`AlbertModel`, `AlbertForMaskedLM`, ...): factorized embeddings
(`embedding_hidden_mapping_in`, always present) and layers shared in `num_hidden_groups`
groups; a pooler only in some files (a bare `albert.pooler` Linear)."""

from bert_keras.checkpoints.assign import concat_columns, identity, transpose, transpose_concat
from bert_keras.checkpoints.hf_bert import activation, embedding_names, prefix


def encoder_config(c, path):
    if c.get("inner_group_num", 1) != 1:
        raise ValueError(f"{path}: inner_group_num {c['inner_group_num']} is not supported "
                         "(only 1, as in every published ALBERT).")
    return dict(
        vocab_size=c["vocab_size"], num_layers=c["num_hidden_layers"],
        hidden_size=c["hidden_size"], num_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"], activation=activation(c, path),
        dropout=c.get("hidden_dropout_prob", 0.0),
        attention_dropout=c.get("attention_probs_dropout_prob", 0.0),
        max_positions=c["max_position_embeddings"], type_vocab_size=c["type_vocab_size"],
        layer_norm_epsilon=c.get("layer_norm_eps", 1e-12),
        initializer_range=c.get("initializer_range", 0.02),
        embedding_size=c["embedding_size"], num_layer_groups=c.get("num_hidden_groups", 1),
    )


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
        qkv = [f"{hf}.attention.{part}" for part in ("query", "key", "value")]
        names.update({
            f"{ours}/attention/qkv/kernel": ([f"{n}.weight" for n in qkv], transpose_concat),
            f"{ours}/attention/qkv/bias": ([f"{n}.bias" for n in qkv], concat_columns),
            f"{ours}/attention/output/kernel": ([f"{hf}.attention.dense.weight"], transpose),
            f"{ours}/attention/output/bias": ([f"{hf}.attention.dense.bias"], identity),
            f"{ours}/attention_layer_norm/gamma": ([f"{hf}.attention.LayerNorm.weight"], identity),
            f"{ours}/attention_layer_norm/beta": ([f"{hf}.attention.LayerNorm.bias"], identity),
            f"{ours}/intermediate/kernel": ([f"{hf}.ffn.weight"], transpose),
            f"{ours}/intermediate/bias": ([f"{hf}.ffn.bias"], identity),
            f"{ours}/output/kernel": ([f"{hf}.ffn_output.weight"], transpose),
            f"{ours}/output/bias": ([f"{hf}.ffn_output.bias"], identity),
            f"{ours}/output_layer_norm/gamma": ([f"{hf}.full_layer_layer_norm.weight"], identity),
            f"{ours}/output_layer_norm/beta": ([f"{hf}.full_layer_layer_norm.bias"], identity),
        })
    return names
