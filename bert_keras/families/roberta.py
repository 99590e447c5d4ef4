"""RoBERTa: transformers' `RobertaModel` and its task classes. BERT's tensor names under
`roberta.`, one token type, positions numbered from padding_idx + 1, no pooler in its task
files, byte-level BPE (`vocab.json` + `merges.txt`, pairs packed `<s> A </s></s> B </s>`),
the masked-LM head `lm_head` with the exact GELU and no pair task; no Google layout."""

from bert_keras.families.transformers_names import (
    TASK_HEADS, ClassifierHead, MaskedLMHead, bert_encoder_name_map, bert_style_arguments)
from bert_keras.text.byte_bpe_tokenizer import MERGES_FILE, VOCAB_FILE, ByteBpeTokenizer

MODEL_TYPE = "roberta"
TOKENIZER = ByteBpeTokenizer
TOKENIZER_FILES = (VOCAB_FILE, MERGES_FILE)

POOLER_TENSORS = ("pooler.dense.weight", "roberta.pooler.dense.weight")
CLASSIFIER_HEAD = ClassifierHead("tanh", "classifier.dense", "classifier.out_proj")
MASKED_LM_HEAD = MaskedLMHead("gelu", "lm_head.dense", "lm_head.layer_norm", "lm_head.bias", None)
REPLACED_TOKEN_HEAD = None
HEAD_PREFIXES = TASK_HEADS + ("lm_head",)

GOOGLE = None


def encoder_config(c, path):
    """The BertEncoder arguments of a RoBERTa config.json dict `c` (`path` for messages)."""
    arguments = bert_style_arguments(c, path)
    # RoBERTa numbers positions from padding_idx + 1 (rows 0..padding_idx are unused).
    arguments["position_offset"] = c.get("pad_token_id", 1) + 1
    return arguments


def encoder_name_map(arch, tensors):
    """Our variable paths -> `RobertaModel` tensor names ("roberta."-prefixed in task files)."""
    return bert_encoder_name_map(arch, tensors, MODEL_TYPE)
