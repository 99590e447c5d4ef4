"""Google's TF1 BERT names (google-research/bert `modeling.py`, `bert_config.json`); ELECTRA's
discriminator uses the same layer names under its own scope."""

from bert_keras.checkpoints.config_arguments import encoder_arguments
from bert_keras.errors import InputError

# Google's TF1 modeling.py calls its tanh approximation "gelu".
ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu"}
CONFIG_FILE = "bert_config.json"


def activation(c, path):
    if c["hidden_act"] not in ACTIVATIONS:
        raise InputError(f"{path}: hidden_act {c['hidden_act']!r} is not one of {sorted(ACTIVATIONS)}.")
    return ACTIVATIONS[c["hidden_act"]]


def encoder_config(c, path):
    """The BertEncoder arguments of a `bert_config.json` dict `c`."""
    return encoder_arguments(c, activation(c, path))


def embedding_names(scope):
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


def encoder_names(arch):
    """Our variable paths -> TF1 BERT variable names (`bert/encoder/layer_0/...`)."""
    names = embedding_names("bert")
    names.update({"pooler/kernel": ["bert/pooler/dense/kernel"],
                  "pooler/bias": ["bert/pooler/dense/bias"]})
    for i in range(arch["num_layers"]):
        names.update(layer_names(f"transformer_layer_{i}", f"bert/encoder/layer_{i}"))
    return names
