"""What the transformers families share: the BERT-style config keys and activation names, the
tensor names of BERT-style layers and embeddings, the task heads that are alike in every
family, and the shape of each family's head tables.

A name map is {our variable path: ([tensor names], combine)} (`converters` combine them).
"""

import collections

from bert_keras.errors import InputError
from bert_keras.families.config_arguments import encoder_arguments
from bert_keras.families.converters import concat_columns, identity, transpose, transpose_concat

ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_approximate",
               "gelu_pytorch_tanh": "gelu_approximate", "relu": "relu"}
# Our activation -> the name a written config.json gives it (gelu_new: BERT's and ALBERT's name
# for the tanh approximation; every family reads it).
ACTIVATION_NAMES = {"gelu": "gelu", "gelu_approximate": "gelu_new", "relu": "relu"}

# The first name part of the heads of `*ForTokenClassification` and `*ForQuestionAnswering`,
# alike in every family: head tensors every family's task files may carry.
TASK_HEADS = ("classifier", "qa_outputs")

# The head of a transformers task class over the encoder (`*ForSequenceClassification`,
# `*ForTokenClassification`, `*ForQuestionAnswering`, `*ForMultipleChoice`): the activation of
# its hidden dense (None: none, e.g. BERT's classifier on the pooler), the module of that
# dense (None: none), of the output dense, of a layer norm after the activation (ModernBERT's
# `head.norm`; None: none), and `config`: the (config.json key, value) pairs the head assumes,
# a value also being transformers' default when the key is absent (ELECTRA's sequence summary
# is configurable; another one is refused, not read as this one).
TaskHead = collections.namedtuple("TaskHead", "activation hidden output norm config",
                                  defaults=(None, ()))

# BERT's task heads, a Linear each (the sequence classifier and the multiple-choice scorer on
# the pooler), which the other families' `HEADS` start from (`task_heads`).
BERT_TASK_HEADS = {"ForSequenceClassification": TaskHead(None, None, "classifier"),
                   "ForTokenClassification": TaskHead(None, None, "classifier"),
                   "ForQuestionAnswering": TaskHead(None, None, "qa_outputs"),
                   "ForMultipleChoice": TaskHead(None, None, "classifier")}


def task_heads(**heads):
    """A family's `HEADS` (transformers class ending -> `TaskHead`): BERT's, with `heads`
    where the family's differ.

    >>> task_heads(ForSequenceClassification=TaskHead("tanh", "classifier.dense",
    ...     "classifier.out_proj"))["ForQuestionAnswering"].output
    'qa_outputs'
    """
    unknown = sorted(set(heads) - set(BERT_TASK_HEADS))
    if unknown:
        raise ValueError(f"No transformers task class ends in {unknown}.")
    return {**BERT_TASK_HEADS, **heads}


# A family's `*ForMaskedLM` / `*ForPreTraining` heads: the masked-LM transform's activation
# (None: the encoder's `hidden_act`), its dense, its layer norm, the decoder's output bias
# (the decoder is tied to the word embeddings), and the NSP / SOP classifier (None: none).
MaskedLMHead = collections.namedtuple("MaskedLMHead", "activation dense layer_norm bias pair")


def activation(config, path, key="hidden_act"):
    """Our activation name of config.json's `key`; InputError naming `path` for another one."""
    name = config[key]
    if name not in ACTIVATIONS:
        raise InputError(f"{path}: {key} {name!r} is not one of {sorted(ACTIVATIONS)}.")
    return ACTIVATIONS[name]


def bert_style_arguments(c, path, default_dropout=0.1):
    """The BertEncoder arguments that BERT, RoBERTa, ELECTRA and ALBERT configs name alike."""
    if c.get("position_embedding_type", "absolute") != "absolute":
        raise InputError(f"{path}: position_embedding_type {c['position_embedding_type']!r} "
                         "is not supported (only 'absolute').")
    return encoder_arguments(c, activation(c, path), default_dropout)


def activation_name(arch, what):
    """config.json's name of the encoder's activation; InputError naming `what` for one no
    family reads (every activation of ours has one)."""
    if arch["activation"] not in ACTIVATION_NAMES:
        raise InputError(f"{what}: its activation {arch['activation']!r} has no transformers "
                         f"name (only {sorted(ACTIVATION_NAMES)}).")
    return ACTIVATION_NAMES[arch["activation"]]


def require(arch, what, family, **expected):
    """InputError naming `what` unless each architecture key has a value of `expected`'s (a
    value, or a tuple of the values allowed): what `family`'s transformers config cannot hold.

    >>> require(dict(position_offset=2), "enc", "BERT", position_offset=0)
    Traceback (most recent call last):
    ...
    bert_keras.errors.InputError: enc: a transformers BERT model cannot hold position_offset=2 \
(it has only position_offset=0).
    """
    for key, allowed in expected.items():
        values = allowed if isinstance(allowed, tuple) else (allowed,)
        if arch.get(key) not in values:
            shown = " or ".join(f"{key}={v!r}" for v in values)
            raise InputError(f"{what}: a transformers {family} model cannot hold "
                             f"{key}={arch.get(key)!r} (it has only {shown}).")


def require_token_types(arch, what, family):
    """InputError naming `what` for an encoder without token types (DistilBERT's): the
    BERT-style transformers models always add a token-type embedding."""
    if arch["type_vocab_size"] < 1:
        raise InputError(f"{what}: a transformers {family} model always has token types; "
                         "this encoder has type_vocab_size=0.")


def bert_style_config(arch, what):
    """config.json's BERT-style keys of an encoder architecture (`bert_style_arguments`
    inverted; `what` names the model in errors): the position table is always "absolute"."""
    return dict(
        vocab_size=arch["vocab_size"], hidden_size=arch["hidden_size"],
        num_hidden_layers=arch["num_layers"], num_attention_heads=arch["num_heads"],
        intermediate_size=arch["intermediate_size"], hidden_act=activation_name(arch, what),
        hidden_dropout_prob=arch["dropout"], attention_probs_dropout_prob=arch["attention_dropout"],
        max_position_embeddings=arch["max_positions"], type_vocab_size=arch["type_vocab_size"],
        layer_norm_eps=arch["layer_norm_epsilon"], initializer_range=arch["initializer_range"],
        position_embedding_type="absolute")


def prefixed(model_type):
    """Stands for the tensors of a task-model file in the name maps' `tensors` argument: the
    maps then give the "<model_type>."-prefixed names that every task class writes.

    >>> prefix(prefixed("bert"), "bert")
    'bert.'
    """
    return {f"{model_type}.embeddings.word_embeddings.weight"}


def prefix(tensors, model_type):
    """"bert." / "roberta." / ... for task-model files, "" for bare-model files.

    >>> prefix({"roberta.embeddings.word_embeddings.weight": 0}, "roberta")
    'roberta.'
    """
    return f"{model_type}." if f"{model_type}.embeddings.word_embeddings.weight" in tensors else ""


def block_names(ours, qkv, attention_output, attention_norm, intermediate, output, output_norm):
    """Our TransformerBlock `ours` -> a PyTorch layer's Linear / LayerNorm modules (names
    without .weight / .bias): `qkv` the query, key and value Linears, fused here."""
    linear = lambda name, module: {  # noqa: E731
        f"{ours}/{name}/kernel": ([f"{module}.weight"], transpose),
        f"{ours}/{name}/bias": ([f"{module}.bias"], identity)}
    norm = lambda name, module: {  # noqa: E731
        f"{ours}/{name}/gamma": ([f"{module}.weight"], identity),
        f"{ours}/{name}/beta": ([f"{module}.bias"], identity)}
    return {
        f"{ours}/attention/qkv/kernel": ([f"{n}.weight" for n in qkv], transpose_concat),
        f"{ours}/attention/qkv/bias": ([f"{n}.bias" for n in qkv], concat_columns),
        **linear("attention/output", attention_output),
        **norm("attention_layer_norm", attention_norm),
        **linear("intermediate", intermediate), **linear("output", output),
        **norm("output_layer_norm", output_norm),
    }


def layer_names(ours, hf):
    """Our block `ours` -> the BERT-style names of layer `hf` (BERT, RoBERTa, ELECTRA)."""
    return block_names(
        ours, [f"{hf}.attention.self.{part}" for part in ("query", "key", "value")],
        f"{hf}.attention.output.dense", f"{hf}.attention.output.LayerNorm",
        f"{hf}.intermediate.dense", f"{hf}.output.dense", f"{hf}.output.LayerNorm")


def embedding_names(p, arch):
    """Our embeddings -> the `embeddings.*` tensors under prefix `p` (no token-type table
    when the architecture has no token types)."""
    names = {
        "token_embedding/embeddings": ([f"{p}embeddings.word_embeddings.weight"], identity),
        "position_embedding/embeddings": ([f"{p}embeddings.position_embeddings.weight"], identity),
        "embeddings_layer_norm/gamma": ([f"{p}embeddings.LayerNorm.weight"], identity),
        "embeddings_layer_norm/beta": ([f"{p}embeddings.LayerNorm.bias"], identity),
    }
    if arch["type_vocab_size"]:
        names["segment_embedding/embeddings"] = (
            [f"{p}embeddings.token_type_embeddings.weight"], identity)
    return names


def bert_encoder_name_map(arch, tensors, model_type):
    """Our variable paths -> `BertModel`-style tensor names (BERT, RoBERTa); task-model files
    prefix them with "<model_type>.", detected from `tensors`."""
    p = prefix(tensors, model_type)
    names = embedding_names(p, arch)
    if arch.get("use_pooler", True):
        names.update({"pooler/kernel": ([f"{p}pooler.dense.weight"], transpose),
                      "pooler/bias": ([f"{p}pooler.dense.bias"], identity)})
    for i in range(arch["num_layers"]):
        names.update(layer_names(f"transformer_layer_{i}", f"{p}encoder.layer.{i}"))
    return names
