"""XLM-RoBERTa: transformers' `XLMRobertaModel` and its task classes (`model_type`
"xlm-roberta"). RoBERTa's architecture and tensor names (task files name the base model
"roberta.", as RoBERTa's do): one token type, positions numbered from padding_idx + 1, the
heads `lm_head` and `classifier.dense` / `classifier.out_proj`. Its tokenizer is a
SentencePiece Unigram model (`sentencepiece.bpe.model`) under fairseq's ids, pairs packed
`<s> A </s></s> B </s>` (`XlmRobertaTokenizer`); no Google layout."""

from bert_keras.families import roberta
from bert_keras.families.transformers_names import bert_encoder_name_map
from bert_keras.text.xlm_roberta_tokenizer import MODEL_FILE, XlmRobertaTokenizer

MODEL_TYPE = "xlm-roberta"
TOKENIZER = XlmRobertaTokenizer
TOKENIZER_FILES = (MODEL_FILE,)
TRANSFORMERS_PREFIX = "XLMRoberta"  # XLMRobertaModel, XLMRobertaForMaskedLM, ...
TRANSFORMERS_TOKENIZER = "XLMRobertaTokenizer"
BASE_MODEL_PREFIX = "roberta"  # the base model's name in task files (not MODEL_TYPE)

POOLER_TENSORS = roberta.POOLER_TENSORS
HEADS = roberta.HEADS
MASKED_LM_HEAD = roberta.MASKED_LM_HEAD
REPLACED_TOKEN_HEAD = None
HEAD_PREFIXES = roberta.HEAD_PREFIXES

GOOGLE = None


def encoder_config(c, path):
    """The BertEncoder arguments of an XLM-RoBERTa config.json dict `c` (RoBERTa's)."""
    return roberta.encoder_config(c, path)


def transformers_config(arch, tokenizer, what):
    """config.json's model keys of an XLMRobertaModel with the encoder architecture `arch`
    (RoBERTa's, `encoder_config` inverted); InputError naming `what` for one it cannot hold."""
    return dict(roberta.transformers_config(arch, tokenizer, what), model_type=MODEL_TYPE)


def encoder_name_map(arch, tensors):
    """Our variable paths -> `XLMRobertaModel` tensor names ("roberta."-prefixed in task files,
    also when `tensors` stands for a task file by a "xlm-roberta."-prefixed name)."""
    if f"{MODEL_TYPE}.embeddings.word_embeddings.weight" in tensors:
        tensors = {f"{BASE_MODEL_PREFIX}.embeddings.word_embeddings.weight"}
    return bert_encoder_name_map(arch, tensors, BASE_MODEL_PREFIX)
