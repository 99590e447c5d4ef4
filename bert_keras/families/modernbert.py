"""ModernBERT: transformers' `ModernBertModel` and its task classes (Answer.AI / LightOn, and
the same architecture under Ettin, gte-modernbert, granite-embedding-r2).

The encoder's options it sets: token embeddings and a layer norm (no position table, no token
types), rotary positions (`global_rope_theta` on global layers, `local_rope_theta` on local
ones), every `global_attn_every_n_layers`-th layer global and the others within a sliding
window of `local_attention` tokens, pre-norm blocks (no attention norm in layer 0), a GeGLU
feed-forward (`Wi` gives the input then the gate half), `final_norm`, and biases only where
`attention_bias` / `mlp_bias` / `norm_bias` ask. Its tokenizer is a byte-level BPE
`tokenizer.json` with [CLS] [SEP] [PAD] [UNK] [MASK] (`[CLS] A [SEP] B [SEP]`), or mmBERT's
Gemma-style BPE with byte fallback (`MetaspaceBpeTokenizer`, which a converted tokenizer.json
gives beside vocab.json + merges.txt); no Google layout.

Its heads (`head.dense` + activation + `head.norm`, then `classifier` or the tied `decoder`;
the sequence classifier and the multiple-choice scorer read [CLS] or the tokens' mean, as
`classifier_pooling` says) have
no dense bias unless `classifier_bias`, and no norm bias unless `norm_bias`: the files leave
them out, and `implied_tensors` gives them as the zeros they stand for (the same math in our
heads, which always have both); `written_tensors` leaves them out again when writing.

>>> arguments = encoder_config(dict(vocab_size=50368, hidden_size=768,
...     intermediate_size=1152, num_hidden_layers=22, num_attention_heads=12,
...     hidden_activation="gelu", max_position_embeddings=8192, global_attn_every_n_layers=3,
...     local_attention=128, global_rope_theta=160000.0, local_rope_theta=10000.0), "ckpt")
>>> arguments["local_attention"], arguments["global_attention_every"], arguments["gated_mlp"]
(128, 3, True)
"""

import numpy as np

from bert_keras.errors import InputError
from bert_keras.families.converters import identity, transpose
from bert_keras.families.transformers_names import (
    BERT_TASK_HEADS,
    TASK_HEADS,
    MaskedLMHead,
    TaskHead,
    activation,
    activation_name,
    require,
    task_heads,
)
from bert_keras.text.byte_bpe_tokenizer import MERGES_FILE, VOCAB_FILE, ModernBertTokenizer

MODEL_TYPE = "modernbert"
TOKENIZER = ModernBertTokenizer
TOKENIZER_FILES = (VOCAB_FILE, MERGES_FILE)  # converted from its tokenizer.json
TRANSFORMERS_PREFIX = "ModernBert"
TRANSFORMERS_TOKENIZER = "PreTrainedTokenizerFast"

POOLER_TENSORS = ()  # never a pooler
# ModernBertPredictionHead (dense, activation, norm) then the output layer, in every head; the
# QA head's output layer is `classifier` too (start, end rows), not `qa_outputs`.
HEADS = task_heads(**dict.fromkeys(BERT_TASK_HEADS,
                                   TaskHead("gelu", "head.dense", "classifier", "head.norm")))
# What *ForSequenceClassification and *ForMultipleChoice read: config.json's
# classifier_pooling, [CLS] ("cls", transformers' default) or the mean of the real tokens
# ("mean").
CLASSIFIER_POOLINGS = ("cls", "mean")
MASKED_LM_HEAD = MaskedLMHead("gelu", "head.dense", "head.norm", "decoder.bias", None)
REPLACED_TOKEN_HEAD = None
HEAD_PREFIXES = TASK_HEADS + ("head", "decoder")

GOOGLE = None

_ROPE_KEYS = {"full_attention": "global_rope_theta", "sliding_attention": "local_rope_theta"}
_DEFAULT_THETA = {"full_attention": 160000.0, "sliding_attention": 10000.0}


def _layer_types(c):
    every = c.get("global_attn_every_n_layers", 3)
    return c.get("layer_types") or ["sliding_attention" if i % every else "full_attention"
                                    for i in range(c["num_hidden_layers"])]


def _global_every(c, path):
    """n of `layer_types` = global every n-th layer from layer 0; InputError otherwise."""
    types = _layer_types(c)
    local = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    if not local:
        return 1 if len(types) < 2 else len(types)  # every layer global
    for every in range(1, len(types) + 1):
        if types == ["sliding_attention" if i % every else "full_attention"
                     for i in range(len(types))]:
            return every
    raise InputError(f"{path}: layer_types {types} is not a global layer every n-th layer "
                     "from layer 0, the only pattern the encoder holds.")


def _theta(c, kind, path):
    rope = (c.get("rope_parameters") or {}).get(kind) or {}
    if rope.get("rope_type", "default") != "default":
        raise InputError(f"{path}: rope_parameters.{kind}.rope_type is "
                         f"{rope['rope_type']!r}; only 'default' rotary positions are read.")
    return float(rope.get("rope_theta", c.get(_ROPE_KEYS[kind], _DEFAULT_THETA[kind])))


def encoder_config(c, path):
    """The BertEncoder arguments of a ModernBERT config.json dict `c` (`path` for messages)."""
    if c.get("attention_bias", False) != c.get("mlp_bias", False):
        raise InputError(f"{path}: attention_bias={c.get('attention_bias')} and mlp_bias="
                         f"{c.get('mlp_bias')} differ; the encoder has one use_bias for both.")
    every = _global_every(c, path)
    local = every > 1 or any(t == "sliding_attention" for t in _layer_types(c))
    return dict(
        vocab_size=c["vocab_size"], num_layers=c["num_hidden_layers"],
        hidden_size=c["hidden_size"], num_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"],
        activation=activation(c, path, key="hidden_activation"),
        dropout=c.get("mlp_dropout", 0.0), attention_dropout=c.get("attention_dropout", 0.0),
        max_positions=c["max_position_embeddings"], type_vocab_size=0,
        layer_norm_epsilon=c.get("norm_eps", 1e-5),
        initializer_range=c.get("initializer_range", 0.02), use_pooler=False,
        rotary_theta=_theta(c, "full_attention", path),
        local_rotary_theta=_theta(c, "sliding_attention", path),
        local_attention=c.get("local_attention", 128) if local else None,
        global_attention_every=every, pre_norm=True, gated_mlp=True,
        use_bias=bool(c.get("attention_bias", False)), norm_bias=bool(c.get("norm_bias", False)),
    )


def transformers_config(arch, tokenizer, what):
    """config.json's model keys of a ModernBertModel with the encoder architecture `arch`
    (`encoder_config` inverted); InputError naming `what` for one it cannot hold."""
    require(arch, what, "ModernBERT", type_vocab_size=0, embedding_size=None, position_offset=0,
            num_layer_groups=(None, arch["num_layers"]), pre_norm=True, gated_mlp=True,
            use_pooler=False)
    if arch["rotary_theta"] is None:
        raise InputError(f"{what}: a transformers ModernBERT model has rotary positions; this "
                         "encoder has a learned position table.")
    every = arch["global_attention_every"] if arch["local_attention"] else 1
    local_theta = arch["local_rotary_theta"] or arch["rotary_theta"]
    return dict(
        model_type=MODEL_TYPE, vocab_size=arch["vocab_size"], hidden_size=arch["hidden_size"],
        intermediate_size=arch["intermediate_size"], num_hidden_layers=arch["num_layers"],
        num_attention_heads=arch["num_heads"],
        hidden_activation=activation_name(arch, what),
        max_position_embeddings=arch["max_positions"],
        initializer_range=arch["initializer_range"], norm_eps=arch["layer_norm_epsilon"],
        norm_bias=arch["norm_bias"], attention_bias=arch["use_bias"], mlp_bias=arch["use_bias"],
        attention_dropout=arch["attention_dropout"], mlp_dropout=arch["dropout"],
        embedding_dropout=arch["dropout"],
        layer_types=["sliding_attention" if i % every else "full_attention"
                     for i in range(arch["num_layers"])],
        local_attention=arch["local_attention"] or 128,
        rope_parameters={"full_attention": {"rope_type": "default",
                                            "rope_theta": arch["rotary_theta"]},
                         "sliding_attention": {"rope_type": "default",
                                               "rope_theta": local_theta}},
        global_attn_every_n_layers=every,
        # The heads: HEADS' and MASKED_LM_HEAD's activation, the masked LM's decoder bias (ours
        # always has one); classifier_bias is the writer's (`written_tensors`).
        classifier_activation=HEADS["ForSequenceClassification"].activation,
        classifier_pooling="cls", decoder_bias=True, classifier_dropout=0.0,
        # Training and kernel switches that change no output: transformers' defaults.
        sparse_prediction=False, sparse_pred_ignore_index=-100, deterministic_flash_attn=False,
        initializer_cutoff_factor=2.0,
        pad_token_id=tokenizer.pad_id, cls_token_id=tokenizer.cls_id,
        sep_token_id=tokenizer.sep_id, bos_token_id=tokenizer.cls_id,
        eos_token_id=tokenizer.sep_id)


def classifier_pooling(config, path):
    """The pooling that config.json's `classifier_pooling` names (`CLASSIFIER_POOLINGS`);
    InputError naming `path` for another."""
    pooling = config.get("classifier_pooling", "cls")
    if pooling not in CLASSIFIER_POOLINGS:
        raise InputError(f"{path}: classifier_pooling {pooling!r} is not one of "
                         f"{list(CLASSIFIER_POOLINGS)}.")
    return pooling


def implied_tensors(config, tensors):
    """{name: zeros} of the head biases a file leaves out (`classifier_bias`, `norm_bias`
    false): the prediction head's dense and norm biases, where the file has the head."""
    width = config["hidden_size"]
    return {f"{module}.bias": np.zeros(width, np.float32) for module in ("head.dense", "head.norm")
            if f"{module}.weight" in tensors and f"{module}.bias" not in tensors}


def written_tensors(config, tensors, what):
    """(config, tensors) as a ModernBERT file holds them: the prediction head's dense bias
    left out where it is zero (`classifier_bias` false) and its norm bias where the encoder
    has none (`norm_bias` false), the zeros `implied_tensors` reads back; InputError naming
    `what` for a norm bias that is not zero, which no such file holds."""
    tensors = dict(tensors)
    dense, norm = tensors.get("head.dense.bias"), tensors.get("head.norm.bias")
    if norm is not None and not config["norm_bias"]:
        if np.any(norm):
            raise InputError(f"{what}: its head's layer norm has a bias, and its encoder's "
                             "norms have none; transformers' ModernBERT (norm_bias) has both "
                             "or neither.")
        del tensors["head.norm.bias"]
    if dense is not None and not np.any(dense):
        del tensors["head.dense.bias"]
    return dict(config, classifier_bias="head.dense.bias" in tensors), tensors


def _prefix(tensors):
    """"model." in task-model files (also when `tensors` stands for one by
    `transformers_names.prefixed`), "" in ModernBertModel's."""
    task_file = {"model.embeddings.tok_embeddings.weight",
                 f"{MODEL_TYPE}.embeddings.word_embeddings.weight"} & set(tensors)
    return "model." if task_file else ""


def _norm(ours, module, arch):
    names = {f"{ours}/gamma": ([f"{module}.weight"], identity)}
    if arch["norm_bias"]:
        names[f"{ours}/beta"] = ([f"{module}.bias"], identity)
    return names


def _linear(ours, module, arch):
    names = {f"{ours}/kernel": ([f"{module}.weight"], transpose)}
    if arch["use_bias"]:
        names[f"{ours}/bias"] = ([f"{module}.bias"], identity)
    return names


def encoder_name_map(arch, tensors):
    """Our variable paths -> `ModernBertModel` tensor names ("model."-prefixed in task files):
    Wqkv is our fused qkv as it is, Wi our (input | gate) intermediate dense."""
    p = _prefix(tensors)
    names = {"token_embedding/embeddings": ([f"{p}embeddings.tok_embeddings.weight"], identity),
             **_norm("embeddings_layer_norm", f"{p}embeddings.norm", arch),
             **_norm("final_layer_norm", f"{p}final_norm", arch)}
    for i in range(arch["num_layers"]):
        ours, hf = f"transformer_layer_{i}", f"{p}layers.{i}"
        if i > 0:
            names.update(_norm(f"{ours}/attention_layer_norm", f"{hf}.attn_norm", arch))
        names.update({**_linear(f"{ours}/attention/qkv", f"{hf}.attn.Wqkv", arch),
                      **_linear(f"{ours}/attention/output", f"{hf}.attn.Wo", arch),
                      **_norm(f"{ours}/output_layer_norm", f"{hf}.mlp_norm", arch),
                      **_linear(f"{ours}/intermediate", f"{hf}.mlp.Wi", arch),
                      **_linear(f"{ours}/output", f"{hf}.mlp.Wo", arch)})
    return names


