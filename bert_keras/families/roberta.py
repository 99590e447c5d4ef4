"""RoBERTa: transformers' `RobertaModel` and its task classes. BERT's tensor names under
`roberta.`, one token type, positions numbered from padding_idx + 1, no pooler in its task
files, byte-level BPE (`vocab.json` + `merges.txt`, pairs packed `<s> A </s></s> B </s>`),
the masked-LM head `lm_head` with the exact GELU and no pair task; no Google layout."""

from bert_keras.errors import InputError
from bert_keras.families.transformers_names import (
    TASK_HEADS,
    MaskedLMHead,
    TaskHead,
    bert_encoder_name_map,
    bert_style_arguments,
    bert_style_config,
    require,
    require_token_types,
    task_heads,
)
from bert_keras.text.byte_bpe_tokenizer import MERGES_FILE, VOCAB_FILE, ByteBpeTokenizer

MODEL_TYPE = "roberta"
TOKENIZER = ByteBpeTokenizer
TOKENIZER_FILES = (VOCAB_FILE, MERGES_FILE)
TRANSFORMERS_PREFIX = "Roberta"
TRANSFORMERS_TOKENIZER = "RobertaTokenizer"

POOLER_TENSORS = ("pooler.dense.weight", "roberta.pooler.dense.weight")
# Its classifier reads the first token through a dense-tanh; RobertaForMultipleChoice scores
# the pooler output, as BERT's does.
HEADS = task_heads(ForSequenceClassification=TaskHead("tanh", "classifier.dense",
                                                      "classifier.out_proj"))
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


def transformers_config(arch, tokenizer, what):
    """config.json's model keys of a RobertaModel with the encoder architecture `arch`
    (`encoder_config` inverted): transformers numbers positions from pad_token_id + 1, so the
    position offset must be the tokenizer's <pad> id + 1; InputError naming `what` otherwise."""
    require(arch, what, "RoBERTa", embedding_size=None,
            num_layer_groups=(None, arch["num_layers"]))
    require_token_types(arch, what, "RoBERTa")
    if arch["position_offset"] != tokenizer.pad_id + 1:
        raise InputError(
            f"{what}: a transformers RoBERTa model numbers positions from its pad id + 1 "
            f"({tokenizer.pad_id} + 1, the tokenizer's <pad>), but this encoder's "
            f"position_offset is {arch['position_offset']}.")
    return dict(model_type=MODEL_TYPE, **bert_style_config(arch, what),
                pad_token_id=tokenizer.pad_id, bos_token_id=tokenizer.cls_id,
                eos_token_id=tokenizer.sep_id)


def encoder_name_map(arch, tensors):
    """Our variable paths -> `RobertaModel` tensor names ("roberta."-prefixed in task files)."""
    return bert_encoder_name_map(arch, tensors, MODEL_TYPE)
