"""BERT: transformers' `BertModel` and its task classes, and Google's TF1 checkpoints
(google-research/bert, `bert_config.json`); WordPiece (`vocab.txt`), two token types, a
pooler (absent from some task files), the masked-LM head under `cls.predictions` with NSP."""

from bert_keras.families import google_names
from bert_keras.families.transformers_names import (
    TASK_HEADS,
    MaskedLMHead,
    bert_encoder_name_map,
    bert_style_arguments,
    bert_style_config,
    require,
    require_token_types,
    task_heads,
)
from bert_keras.text.tokenizer import WordPieceTokenizer

MODEL_TYPE = "bert"
TOKENIZER = WordPieceTokenizer
TOKENIZER_FILES = ("vocab.txt",)
TRANSFORMERS_PREFIX = "Bert"  # BertModel, BertForMaskedLM, ...
TRANSFORMERS_TOKENIZER = "BertTokenizer"

POOLER_TENSORS = ("pooler.dense.weight", "bert.pooler.dense.weight")
HEADS = task_heads()  # BERT's: a Linear each, the classifier and multiple choice on the pooler
MASKED_LM_HEAD = MaskedLMHead(None, "cls.predictions.transform.dense",
                              "cls.predictions.transform.LayerNorm", "cls.predictions.bias",
                              "cls.seq_relationship")
REPLACED_TOKEN_HEAD = None
HEAD_PREFIXES = TASK_HEADS + ("cls",)  # cls/ in Google's checkpoints too

GOOGLE = google_names.GoogleLayout(
    name="BERT", config_file="bert_config.json", marker=None,
    encoder_config=google_names.bert_encoder_config,
    encoder_names=google_names.bert_encoder_names)


def encoder_config(c, path):
    """The BertEncoder arguments of a BERT config.json dict `c` (`path` for messages)."""
    return bert_style_arguments(c, path)


def transformers_config(arch, tokenizer, what):
    """config.json's model keys of a BertModel with the encoder architecture `arch` (the
    inverse of `encoder_config`; `tokenizer` gives the pad id); InputError naming `what` for an
    architecture BertModel cannot hold."""
    require(arch, what, "BERT", embedding_size=None, position_offset=0,
            num_layer_groups=(None, arch["num_layers"]))
    require_token_types(arch, what, "BERT")
    return dict(model_type=MODEL_TYPE, **bert_style_config(arch, what),
                pad_token_id=tokenizer.pad_id)


def encoder_name_map(arch, tensors):
    """Our variable paths -> `BertModel` tensor names ("bert."-prefixed in task files)."""
    return bert_encoder_name_map(arch, tensors, MODEL_TYPE)
