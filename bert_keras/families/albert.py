"""ALBERT: transformers' `AlbertModel` and its task classes, and Google's TF1 checkpoints
(google-research/albert, `albert_config.json`). Factorized embeddings projected to the hidden
size (`embedding_hidden_mapping_in`), layers shared in `num_hidden_groups` groups, a pooler
only in some transformers files (a bare `albert.pooler` Linear), SentencePiece
(`spiece.model`; Google ships `30k-clean.model`), SOP as its pair task."""

from bert_keras.errors import InputError
from bert_keras.families import google_names
from bert_keras.families.config_arguments import encoder_arguments
from bert_keras.families.converters import identity, transpose
from bert_keras.families.transformers_names import (
    TASK_HEADS,
    MaskedLMHead,
    bert_style_arguments,
    bert_style_config,
    block_names,
    embedding_names,
    prefix,
    require,
    require_token_types,
    task_heads,
)
from bert_keras.text.sentencepiece_tokenizer import MODEL_FILE, SentencePieceTokenizer

MODEL_TYPE = "albert"
TOKENIZER = SentencePieceTokenizer
TOKENIZER_FILES = (MODEL_FILE,)
TRANSFORMERS_PREFIX = "Albert"
TRANSFORMERS_TOKENIZER = "AlbertTokenizer"

POOLER_TENSORS = ("pooler.weight", "albert.pooler.weight")
HEADS = task_heads()  # BERT's: a Linear each, the classifier and multiple choice on the pooler
MASKED_LM_HEAD = MaskedLMHead(None, "predictions.dense", "predictions.LayerNorm",
                              "predictions.bias", "sop_classifier.classifier")
REPLACED_TOKEN_HEAD = None
HEAD_PREFIXES = TASK_HEADS + ("predictions", "sop_classifier", "cls")  # cls/: Google's


def encoder_config(c, path):
    """The BertEncoder arguments of an ALBERT config.json dict `c` (`path` for messages)."""
    if c.get("inner_group_num", 1) != 1:
        raise InputError(f"{path}: inner_group_num {c['inner_group_num']} is not supported "
                         "(only 1, as in every published ALBERT).")
    return dict(bert_style_arguments(c, path, default_dropout=0.0),  # ALBERT's dropout: 0
                embedding_size=c["embedding_size"], num_layer_groups=c.get("num_hidden_groups", 1))


def transformers_config(arch, tokenizer, what):
    """config.json's model keys of an AlbertModel with the encoder architecture `arch`
    (`encoder_config` inverted: one layer per group, `num_hidden_groups` groups); InputError
    naming `what` for one AlbertModel cannot hold (its embeddings are always projected)."""
    require(arch, what, "ALBERT", position_offset=0)
    require_token_types(arch, what, "ALBERT")
    if arch["embedding_size"] is None:
        raise InputError(f"{what}: a transformers ALBERT model always projects its embeddings "
                         "(embedding_size, embedding_hidden_mapping_in); this encoder has "
                         "embedding_size=None.")
    return dict(model_type=MODEL_TYPE, **bert_style_config(arch, what),
                embedding_size=arch["embedding_size"],
                num_hidden_groups=arch["num_layer_groups"] or arch["num_layers"],
                inner_group_num=1, pad_token_id=tokenizer.pad_id,
                bos_token_id=tokenizer.cls_id, eos_token_id=tokenizer.sep_id)


def encoder_name_map(arch, tensors):
    """Our variable paths -> `AlbertModel` tensor names ("albert."-prefixed in task files)."""
    p = prefix(tensors, MODEL_TYPE)
    names = embedding_names(p, arch)
    mapping = f"{p}encoder.embedding_hidden_mapping_in"
    names.update({
        "embedding_projection/kernel": ([f"{mapping}.weight"], transpose),
        "embedding_projection/bias": ([f"{mapping}.bias"], identity),
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


def google_encoder_config(c, path):
    """The BertEncoder arguments of an `albert_config.json` dict `c`."""
    for key, supported in (("inner_group_num", 1), ("net_structure_type", 0),
                           ("down_scale_factor", 1), ("gap_size", 0), ("num_memory_blocks", 0)):
        if c.get(key, supported) != supported:
            raise InputError(f"{path}: {key} {c[key]} is not supported (only {supported}, as in "
                             "every published ALBERT).")
    return dict(encoder_arguments(c, google_names.activation(c, path), default_dropout=0.0),
                embedding_size=c["embedding_size"], num_layer_groups=c.get("num_hidden_groups", 1))


def google_encoder_names(arch):
    """Our variable paths -> TF1 ALBERT variable names: the shared layers of each group under
    `transformer/group_G/inner_group_0` (TF Hub exports' `module/` prefix is dropped by the
    reader)."""
    names = google_names.embedding_names("bert")
    mapping = "bert/encoder/embedding_hidden_mapping_in"
    names.update({"embedding_projection/kernel": [f"{mapping}/kernel"],
                  "embedding_projection/bias": [f"{mapping}/bias"],
                  "pooler/kernel": ["bert/pooler/dense/kernel"],
                  "pooler/bias": ["bert/pooler/dense/bias"]})
    for g in range(arch["num_layer_groups"] or arch["num_layers"]):
        s = f"bert/encoder/transformer/group_{g}/inner_group_0"
        names.update(google_names.block_names(
            f"transformer_layer_{g}",
            [f"{s}/attention_1/self/{part}" for part in ("query", "key", "value")],
            f"{s}/attention_1/output/dense", f"{s}/LayerNorm", f"{s}/ffn_1/intermediate/dense",
            f"{s}/ffn_1/intermediate/output/dense", f"{s}/LayerNorm_1"))
    return names


GOOGLE = google_names.GoogleLayout(
    name="ALBERT", config_file="albert_config.json", marker=None,
    encoder_config=google_encoder_config, encoder_names=google_encoder_names)
