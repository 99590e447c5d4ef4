"""Google's TF1 ALBERT names (google-research/albert `modeling.py`, `albert_config.json`):
factorized embeddings projected by `embedding_hidden_mapping_in`, and the shared layers of
each group under `transformer/group_G/inner_group_0` (TF Hub exports prefix `module/`, which
`google.read_tensors` drops)."""

from bert_keras.checkpoints.config_arguments import encoder_arguments
from bert_keras.checkpoints.google_bert import activation, block_names, embedding_names
from bert_keras.errors import InputError

CONFIG_FILE = "albert_config.json"


def encoder_config(c, path):
    """The BertEncoder arguments of an `albert_config.json` dict `c`."""
    for key, supported in (("inner_group_num", 1), ("net_structure_type", 0),
                           ("down_scale_factor", 1), ("gap_size", 0), ("num_memory_blocks", 0)):
        if c.get(key, supported) != supported:
            raise InputError(f"{path}: {key} {c[key]} is not supported (only {supported}, as in "
                             "every published ALBERT).")
    return dict(encoder_arguments(c, activation(c, path), default_dropout=0.0),
                embedding_size=c["embedding_size"], num_layer_groups=c.get("num_hidden_groups", 1))


def encoder_names(arch):
    """Our variable paths -> TF1 ALBERT variable names."""
    names = embedding_names("bert")
    mapping = "bert/encoder/embedding_hidden_mapping_in"
    names.update({"embedding_projection/kernel": [f"{mapping}/kernel"],
                  "embedding_projection/bias": [f"{mapping}/bias"],
                  "pooler/kernel": ["bert/pooler/dense/kernel"],
                  "pooler/bias": ["bert/pooler/dense/bias"]})
    for g in range(arch["num_layer_groups"] or arch["num_layers"]):
        s = f"bert/encoder/transformer/group_{g}/inner_group_0"
        names.update(block_names(
            f"transformer_layer_{g}",
            [f"{s}/attention_1/self/{part}" for part in ("query", "key", "value")],
            f"{s}/attention_1/output/dense", f"{s}/LayerNorm", f"{s}/ffn_1/intermediate/dense",
            f"{s}/ffn_1/intermediate/output/dense", f"{s}/LayerNorm_1"))
    return names
