"""DeBERTa-v3: transformers' `DebertaV2Model` and its task classes (`model_type` "deberta-v2":
Microsoft's DeBERTa-v3 and mDeBERTa-v3, and DeBERTa-v2).

The encoder's options it sets: disentangled attention (`pos_att_type` "c2p" / "p2c" over a
relative table of 2 x `position_buckets` rows, log-bucketed up to `max_relative_positions`,
layer-normalized with `norm_rel_ebd` "layer_norm", projected by each layer's own query and key
projections: `share_att_key`), absolute positions only with `position_biased_input`, token
types only when `type_vocab_size` > 0, an embedding projection without bias before the
embeddings' layer norm when `embedding_size` differs from the hidden size, and the padded
rows' embeddings zeroed. Its tokenizer is SentencePiece `spm.model` with [PAD]=0 [CLS]=1
[SEP]=2 [UNK]=3 and [MASK] after the pieces (rebuilt from a tokenizer.json alone, as
transformers 5 saves it: text/tokenizer_json.py); no Google layout.

Heads: `*ForSequenceClassification` and `*ForMultipleChoice` read [CLS] through the
ContextPooler (`pooler.dense` + `pooler_hidden_act`), then `classifier`; the masked LM is
transformers' default ("legacy") `cls.predictions` head, tied to the word embeddings.

Not read (an InputError names the key): `share_att_key` false (separate position projections),
`conv_kernel_size` (DeBERTa-v2-xlarge's convolution), `relative_attention` with no
`pos_att_type`, a `pooler_hidden_act` other than gelu.

>>> arguments = encoder_config(dict(vocab_size=128100, hidden_size=768,
...     num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
...     hidden_act="gelu", max_position_embeddings=512, relative_attention=True,
...     position_buckets=256, pos_att_type="p2c|c2p", share_att_key=True,
...     norm_rel_ebd="layer_norm", position_biased_input=False, type_vocab_size=0), "ckpt")
>>> [arguments[k] for k in ("disentangled_attention", "position_buckets", "absolute_positions")]
['c2p|p2c', 256, False]
"""

from bert_keras.errors import InputError
from bert_keras.families.converters import identity, transpose
from bert_keras.families.transformers_names import (
    TASK_HEADS,
    MaskedLMHead,
    TaskHead,
    activation,
    activation_name,
    block_names,
    require,
    task_heads,
)
from bert_keras.text.deberta_tokenizer import MODEL_FILE, DebertaV3Tokenizer

MODEL_TYPE = "deberta-v2"
TOKENIZER = DebertaV3Tokenizer
TOKENIZER_FILES = (MODEL_FILE,)
TRANSFORMERS_PREFIX = "DebertaV2"
TRANSFORMERS_TOKENIZER = "DebertaV2Tokenizer"
BASE_MODEL_PREFIX = "deberta"  # the base model's name in task files

POOLER_TENSORS = ()  # DebertaV2Model has none; the ContextPooler is the heads' hidden dense
HEADS = task_heads(
    ForSequenceClassification=TaskHead("gelu", "pooler.dense", "classifier"),
    ForMultipleChoice=TaskHead("gelu", "pooler.dense", "classifier",
                               config=(("pooler_hidden_act", "gelu"),)))
MASKED_LM_HEAD = MaskedLMHead(None, "cls.predictions.transform.dense",
                              "cls.predictions.transform.LayerNorm", "cls.predictions.bias", None)
REPLACED_TOKEN_HEAD = None
HEAD_PREFIXES = TASK_HEADS + ("cls", "pooler", "lm_predictions", "mask_predictions")

GOOGLE = None

_TERMS = ("c2p", "p2c")


def _terms(c, path):
    """EncoderConfig.disentangled_attention of config `c` ("c2p|p2c", ...), None without."""
    if not c.get("relative_attention", False):
        return None
    types = c.get("pos_att_type") or []
    types = [t.strip() for t in types.lower().split("|")] if isinstance(types, str) else types
    unknown = [t for t in types if t not in _TERMS]
    if unknown or not types:
        raise InputError(f"{path}: pos_att_type {c.get('pos_att_type')!r} is not a non-empty "
                         f"list of {list(_TERMS)}, the relative terms read here.")
    return "|".join(t for t in _TERMS if t in types)


def encoder_config(c, path):
    """The BertEncoder arguments of a DeBERTa-v2/v3 config.json dict `c` (`path` for
    messages); InputError naming what the encoder does not compute."""
    unsupported = [("share_att_key", False, c.get("share_att_key", False) is False
                    and c.get("relative_attention", False)),
                   ("conv_kernel_size", c.get("conv_kernel_size"),
                    c.get("conv_kernel_size", 0) > 0),
                   ("pooler_hidden_act", c.get("pooler_hidden_act"),
                    c.get("pooler_hidden_act", "gelu") != "gelu")]
    for key, value, refused in unsupported:
        if refused:
            raise InputError(f"{path}: {key}={value!r} is not supported (only DeBERTa-v3's "
                             "share_att_key true, no conv layer, a gelu pooler).")
    norm = str(c.get("norm_rel_ebd", "none")).lower().split("|")
    if set(norm) - {"none", "layer_norm"}:
        raise InputError(f"{path}: norm_rel_ebd {c['norm_rel_ebd']!r} is not 'layer_norm' or "
                         "'none'.")
    hidden, embedding = c["hidden_size"], c.get("embedding_size") or c["hidden_size"]
    if c.get("attention_head_size", hidden // c["num_attention_heads"]) * c[
            "num_attention_heads"] != hidden:
        raise InputError(f"{path}: attention_head_size {c['attention_head_size']} x "
                         f"{c['num_attention_heads']} heads is not hidden_size {hidden}.")
    buckets = c.get("position_buckets", -1)
    distance = c.get("max_relative_positions", -1)
    terms = _terms(c, path)
    return dict(
        vocab_size=c["vocab_size"], num_layers=c["num_hidden_layers"], hidden_size=hidden,
        num_heads=c["num_attention_heads"], intermediate_size=c["intermediate_size"],
        activation=activation(c, path), dropout=c.get("hidden_dropout_prob", 0.1),
        attention_dropout=c.get("attention_probs_dropout_prob", 0.1),
        max_positions=c.get("max_position_embeddings", 512),
        type_vocab_size=c.get("type_vocab_size", 0),
        layer_norm_epsilon=c.get("layer_norm_eps", 1e-7),
        initializer_range=c.get("initializer_range", 0.02), use_pooler=False,
        embedding_size=embedding if embedding != hidden else None,
        project_before_norm=embedding != hidden, mask_embeddings=True,
        absolute_positions=bool(c.get("position_biased_input", True)),
        disentangled_attention=terms,
        position_buckets=buckets if terms and buckets > 0 else None,
        max_relative_positions=distance if terms and distance > 0 else None,
        relative_embedding_norm="layer_norm" in norm,
    )


def transformers_config(arch, tokenizer, what):
    """config.json's model keys of a DebertaV2Model with the encoder architecture `arch`
    (`encoder_config` inverted); InputError naming `what` for one it cannot hold."""
    require(arch, what, "DeBERTa", position_offset=0, num_layer_groups=(None, arch["num_layers"]),
            pre_norm=False, gated_mlp=False, rotary_theta=None, local_attention=None,
            use_bias=True, norm_bias=True, use_pooler=False, mask_embeddings=True,
            project_before_norm=arch["embedding_size"] is not None)
    terms = arch["disentangled_attention"]
    return dict(
        model_type=MODEL_TYPE, vocab_size=arch["vocab_size"], hidden_size=arch["hidden_size"],
        num_hidden_layers=arch["num_layers"], num_attention_heads=arch["num_heads"],
        intermediate_size=arch["intermediate_size"], hidden_act=activation_name(arch, what),
        hidden_dropout_prob=arch["dropout"], attention_probs_dropout_prob=arch["attention_dropout"],
        max_position_embeddings=arch["max_positions"], type_vocab_size=arch["type_vocab_size"],
        layer_norm_eps=arch["layer_norm_epsilon"], initializer_range=arch["initializer_range"],
        embedding_size=arch["embedding_size"] or arch["hidden_size"],
        position_biased_input=arch["absolute_positions"], relative_attention=bool(terms),
        # In the order of Microsoft's configs; transformers reads them as a set.
        pos_att_type=[t for t in ("p2c", "c2p") if t in (terms or "").split("|")],
        share_att_key=True,
        position_buckets=arch["position_buckets"] or -1,
        max_relative_positions=arch["max_relative_positions"] or -1,
        norm_rel_ebd="layer_norm" if arch["relative_embedding_norm"] else "none",
        pooler_hidden_size=arch["hidden_size"], pooler_hidden_act="gelu", pooler_dropout=0,
        legacy=True,  # the masked LM head is cls.predictions (MASKED_LM_HEAD)
        pad_token_id=tokenizer.pad_id, bos_token_id=None, eos_token_id=None)


def _prefix(tensors):
    """"deberta." in task-model files (also when `tensors` stands for one by
    `transformers_names.prefixed`), "" in DebertaV2Model's."""
    task_file = {f"{name}.embeddings.word_embeddings.weight"
                 for name in (BASE_MODEL_PREFIX, MODEL_TYPE)} & set(tensors)
    return f"{BASE_MODEL_PREFIX}." if task_file else ""


def encoder_name_map(arch, tensors):
    """Our variable paths -> `DebertaV2Model` tensor names ("deberta."-prefixed in task files):
    the query, key and value projections fused in our qkv."""
    p = _prefix(tensors)
    e = f"{p}embeddings"
    names = {"token_embedding/embeddings": ([f"{e}.word_embeddings.weight"], identity),
             "embeddings_layer_norm/gamma": ([f"{e}.LayerNorm.weight"], identity),
             "embeddings_layer_norm/beta": ([f"{e}.LayerNorm.bias"], identity)}
    if arch["absolute_positions"]:
        names["position_embedding/embeddings"] = ([f"{e}.position_embeddings.weight"], identity)
    if arch["type_vocab_size"]:
        names["segment_embedding/embeddings"] = ([f"{e}.token_type_embeddings.weight"], identity)
    if arch["embedding_size"]:
        names["embedding_projection/kernel"] = ([f"{e}.embed_proj.weight"], transpose)
    if arch["disentangled_attention"]:
        names["relative_embedding/embeddings"] = ([f"{p}encoder.rel_embeddings.weight"],
                                                  identity)
        if arch["relative_embedding_norm"]:
            names.update({"relative_embedding/gamma": ([f"{p}encoder.LayerNorm.weight"], identity),
                          "relative_embedding/beta": ([f"{p}encoder.LayerNorm.bias"], identity)})
    for i in range(arch["num_layers"]):
        hf = f"{p}encoder.layer.{i}"
        names.update(block_names(
            f"transformer_layer_{i}",
            [f"{hf}.attention.self.{part}_proj" for part in ("query", "key", "value")],
            f"{hf}.attention.output.dense", f"{hf}.attention.output.LayerNorm",
            f"{hf}.intermediate.dense", f"{hf}.output.dense", f"{hf}.output.LayerNorm"))
    return names
