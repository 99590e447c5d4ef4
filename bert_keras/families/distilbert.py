"""DistilBERT: transformers' `DistilBertModel` and its task classes. No token types, no
pooler, layer norm epsilon fixed at 1e-12, its own tensor and config names (q_lin,
sa_layer_norm, ffn.lin1; dim, n_layers), WordPiece (`vocab.txt`), a pre_classifier-relu
classification head; no Google layout."""

from bert_keras.families.transformers_names import (
    TASK_HEADS,
    MaskedLMHead,
    TaskHead,
    activation,
    activation_name,
    block_names,
    embedding_names,
    prefix,
    require,
    task_heads,
)
from bert_keras.text.tokenizer import WordPieceTokenizer

MODEL_TYPE = "distilbert"
TOKENIZER = WordPieceTokenizer
TOKENIZER_FILES = ("vocab.txt",)
TRANSFORMERS_PREFIX = "DistilBert"
TRANSFORMERS_TOKENIZER = "DistilBertTokenizer"

POOLER_TENSORS = ()  # never a pooler
HEADS = task_heads(**dict.fromkeys(("ForSequenceClassification", "ForMultipleChoice"),
                                   TaskHead("relu", "pre_classifier", "classifier")))
MASKED_LM_HEAD = MaskedLMHead(None, "vocab_transform", "vocab_layer_norm",
                              "vocab_projector.bias", None)
REPLACED_TOKEN_HEAD = None
HEAD_PREFIXES = TASK_HEADS + ("vocab_transform", "vocab_layer_norm", "vocab_projector",
                              "pre_classifier")

GOOGLE = None


def encoder_config(c, path):
    """The BertEncoder arguments of a DistilBERT config.json dict `c` (`path` for messages)."""
    return dict(
        vocab_size=c["vocab_size"], num_layers=c["n_layers"], hidden_size=c["dim"],
        num_heads=c["n_heads"], intermediate_size=c["hidden_dim"],
        activation=activation(c, path, key="activation"), dropout=c.get("dropout", 0.1),
        attention_dropout=c.get("attention_dropout", 0.1),
        max_positions=c["max_position_embeddings"], type_vocab_size=0,
        layer_norm_epsilon=1e-12,  # hard-coded in DistilBERT
        initializer_range=c.get("initializer_range", 0.02), use_pooler=False,
    )


def transformers_config(arch, tokenizer, what):
    """config.json's model keys of a DistilBertModel with the encoder architecture `arch`
    (`encoder_config` inverted); InputError naming `what` for one it cannot hold: token types,
    a layer norm epsilon other than its fixed 1e-12, factorized or shared layers."""
    require(arch, what, "DistilBERT", type_vocab_size=0, layer_norm_epsilon=1e-12,
            embedding_size=None, position_offset=0, num_layer_groups=(None, arch["num_layers"]))
    return dict(
        model_type=MODEL_TYPE, vocab_size=arch["vocab_size"], dim=arch["hidden_size"],
        n_layers=arch["num_layers"], n_heads=arch["num_heads"],
        hidden_dim=arch["intermediate_size"], activation=activation_name(arch, what),
        dropout=arch["dropout"], attention_dropout=arch["attention_dropout"],
        max_position_embeddings=arch["max_positions"],
        initializer_range=arch["initializer_range"], sinusoidal_pos_embds=False,
        pad_token_id=tokenizer.pad_id)


def encoder_name_map(arch, tensors):
    """Our variable paths -> `DistilBertModel` tensor names ("distilbert."-prefixed in task
    files)."""
    p = prefix(tensors, MODEL_TYPE)
    names = embedding_names(p, arch)  # no token types: no segment embedding
    for i in range(arch["num_layers"]):
        ours, hf = f"transformer_layer_{i}", f"{p}transformer.layer.{i}"
        names.update(block_names(
            ours, [f"{hf}.attention.{part}" for part in ("q_lin", "k_lin", "v_lin")],
            f"{hf}.attention.out_lin", f"{hf}.sa_layer_norm", f"{hf}.ffn.lin1", f"{hf}.ffn.lin2",
            f"{hf}.output_layer_norm"))
    return names
