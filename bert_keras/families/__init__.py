"""The model families and their registry: everything one family knows lives in its module, and
code outside this package asks the registry instead of comparing `model_type` strings.

A family module (`bert`, `roberta`, `albert`, `distilbert`, `electra`, `xlm_roberta`,
`modernbert`, `deberta_v3`)
defines:

- `MODEL_TYPE`: transformers' `model_type` in config.json, the family's key here.
- `TOKENIZER`, `TOKENIZER_FILES`: its tokenizer class (from `bert_keras.text`; the class
  holds the packing of pairs and the word-start rule) and the files that class reads in a
  transformers directory.
- `encoder_config(config, path)`: config.json's dict -> BertEncoder arguments.
- `transformers_config(arch, tokenizer, what)`: the inverse, BertEncoder arguments ->
  config.json's model keys (an InputError naming `what` for an architecture its transformers
  model cannot hold); `TRANSFORMERS_PREFIX` ("Bert": BertModel, BertForMaskedLM, ...) and
  `TRANSFORMERS_TOKENIZER` (tokenizer_config.json's `tokenizer_class`), for the writer.
- `encoder_name_map(arch, tensors)`: our encoder's variable paths -> its tensor names.
- `POOLER_TENSORS`: the tensor names whose presence means the file has a pooler (empty: never).
- `HEADS`: the heads of its transformers task classes by class name ending
  (`*ForSequenceClassification`, `*ForTokenClassification`, `*ForQuestionAnswering`,
  `*ForMultipleChoice` -> `transformers_names.TaskHead`: their layers and tensor names; BERT's
  where a family's are alike, `transformers_names.task_heads`); each task type asks
  `task_head` for its class's. `MASKED_LM_HEAD` (`transformers_names.MaskedLMHead`) and
  `REPLACED_TOKEN_HEAD` (ELECTRA's discriminator head, else None): its pretraining heads.
- `HEAD_PREFIXES`: the first name part of every head tensor its files may hold (an encoder
  import skips them).
- `GOOGLE`: a `google_names.GoogleLayout` for its Google TF1 checkpoints, or None.
- optionally `implied_tensors(config, tensors)`: {name: array} of tensors its files leave out
  because their value is implied (ModernBERT's zero head biases); the reader adds them. Its
  inverse, `written_tensors(config, tensors, what)` -> (config, tensors): the writer's
  config.json and tensors with those left out and the config keys that say so.
- optionally `CLASSIFIER_POOLINGS` with `classifier_pooling(config, path)`: what its
  `*ForSequenceClassification` and `*ForMultipleChoice` may read and what a config.json picks
  (default: "cls" only, the first token or the pooler on it), which
  `tasks.classification.head_checkpoint` reads (and multiple choice's through it).

Adding a family is its module here and its name in the import and in `_MODULES` below.

>>> get_family("roberta", "ckpt").TOKENIZER_FILES
('vocab.json', 'merges.txt')
>>> get_family("gpt2", "ckpt")
Traceback (most recent call last):
...
bert_keras.errors.InputError: ckpt: model_type 'gpt2' is not one of ['albert', 'bert', \
'deberta-v2', 'distilbert', 'electra', 'modernbert', 'roberta', 'xlm-roberta'].
"""

from bert_keras.errors import InputError
from bert_keras.families import (
    albert,
    bert,
    deberta_v3,
    distilbert,
    electra,
    modernbert,
    roberta,
    xlm_roberta,
)

_MODULES = (bert, roberta, albert, distilbert, electra, xlm_roberta, modernbert, deberta_v3)
FAMILIES = {family.MODEL_TYPE: family for family in _MODULES}
DEFAULT_MODEL_TYPE = bert.MODEL_TYPE  # of a config.json that names none (the oldest BERT files)

# What every family module defines (see above).
REQUIRED = ("MODEL_TYPE", "TOKENIZER", "TOKENIZER_FILES", "encoder_config", "encoder_name_map",
            "transformers_config", "TRANSFORMERS_PREFIX", "TRANSFORMERS_TOKENIZER",
            "POOLER_TENSORS", "HEADS", "MASKED_LM_HEAD", "REPLACED_TOKEN_HEAD",
            "HEAD_PREFIXES", "GOOGLE")


def get_family(model_type, path):
    """The family module of transformers' `model_type`; InputError naming `path` (where it
    was read) and the model_type for one that no family reads."""
    if model_type not in FAMILIES:
        raise InputError(f"{path}: model_type {model_type!r} is not one of {sorted(FAMILIES)}.")
    return FAMILIES[model_type]


def family_of_config(config, path):
    """The family module of a transformers config.json dict (`DEFAULT_MODEL_TYPE`'s when it
    names no model_type); InputError naming `path` for one that no family reads.

    >>> family_of_config({"model_type": "albert"}, "ckpt").TOKENIZER.__name__
    'SentencePieceTokenizer'
    """
    return get_family(config.get("model_type", DEFAULT_MODEL_TYPE), path)


def task_head(family, transformers_head):
    """The `TaskHead` of `family`'s `*<transformers_head>` ("ForSequenceClassification",
    "ForTokenClassification", "ForQuestionAnswering", "ForMultipleChoice").

    >>> task_head(get_family("bert", "ckpt"), "ForQuestionAnswering").output
    'qa_outputs'
    >>> task_head(get_family("modernbert", "ckpt"), "ForQuestionAnswering")[1:4]
    ('head.dense', 'classifier', 'head.norm')
    """
    return family.HEADS[transformers_head]


def head_prefixes():
    """The first name part of every family's head tensors, sorted.

    >>> {"cls", "lm_head", "qa_outputs"} <= set(head_prefixes())
    True
    """
    return sorted({p for family in FAMILIES.values() for p in family.HEAD_PREFIXES})


def google_layouts():
    """The `GoogleLayout` of each family that has Google TF1 checkpoints, in registry order.

    >>> [layout.name for layout in google_layouts()]
    ['BERT', 'ALBERT', 'ELECTRA']
    """
    return [family.GOOGLE for family in FAMILIES.values() if family.GOOGLE is not None]


def tokenizer_files():
    """Every file name some family's tokenizer reads, sorted (for messages).

    >>> tokenizer_files()
    ['merges.txt', 'sentencepiece.bpe.model', 'spiece.model', 'spm.model', 'vocab.json', \
'vocab.txt']
    """
    return sorted({name for family in FAMILIES.values() for name in family.TOKENIZER_FILES})


__all__ = ["DEFAULT_MODEL_TYPE", "FAMILIES", "REQUIRED", "family_of_config", "get_family",
           "google_layouts", "head_prefixes", "task_head", "tokenizer_files"]
