"""Hugging Face BERT and RoBERTa (`BertModel`, `RobertaModel` and their task classes): the same
tensor names, RoBERTa with one token type, positions offset by padding_idx + 1, no pooler in
its task files, and byte-level BPE instead of WordPiece (the tokenizer's business)."""

from bert_keras.checkpoints.assign import concat_columns, identity, transpose, transpose_concat
from bert_keras.checkpoints.config_arguments import encoder_arguments
from bert_keras.errors import InputError

ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_approximate",
               "gelu_pytorch_tanh": "gelu_approximate", "relu": "relu"}


def activation(config, path, key="hidden_act"):
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


def encoder_config(c, path):
    """The BertEncoder arguments of a BERT or RoBERTa config.json dict `c`."""
    arguments = bert_style_arguments(c, path)
    if c.get("model_type") == "roberta":
        # RoBERTa numbers positions from padding_idx + 1 (rows 0..padding_idx are unused).
        arguments["position_offset"] = c.get("pad_token_id", 1) + 1
    return arguments


def prefix(tensors, family):
    """"bert." / "roberta." / ... for task-model files, "" for bare-model files."""
    return f"{family}." if f"{family}.embeddings.word_embeddings.weight" in tensors else ""


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
        **linear("attention/output", attention_output), **norm("attention_layer_norm", attention_norm),
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


def encoder_name_map(arch, tensors, family="bert"):
    """Our variable paths -> `BertModel` / `RobertaModel` tensor names (task-model files prefix
    them with "bert." / "roberta.", detected from `tensors`)."""
    p = prefix(tensors, family)
    names = embedding_names(p, arch)
    if arch.get("use_pooler", True):
        names.update({"pooler/kernel": ([f"{p}pooler.dense.weight"], transpose),
                      "pooler/bias": ([f"{p}pooler.dense.bias"], identity)})
    for i in range(arch["num_layers"]):
        names.update(layer_names(f"transformer_layer_{i}", f"{p}encoder.layer.{i}"))
    return names


# The pretraining heads of each family's *ForMaskedLM / *ForPreTraining files: the masked-LM
# transform's activation (None: the encoder's `hidden_act`), its dense, its layer norm, the
# output bias of the decoder (tied to the word embeddings), and the NSP / SOP classifier.
MASKED_LM_HEADS = {
    "bert": (None, "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
             "cls.predictions.bias", "cls.seq_relationship"),
    "roberta": ("gelu", "lm_head.dense", "lm_head.layer_norm", "lm_head.bias", None),
    "albert": (None, "predictions.dense", "predictions.LayerNorm", "predictions.bias",
               "sop_classifier.classifier"),
    "distilbert": (None, "vocab_transform", "vocab_layer_norm", "vocab_projector.bias", None),
    # ElectraForMaskedLM, the generator; its head's activation is fixed to the exact GELU.
    "electra": ("gelu", "generator_predictions.dense", "generator_predictions.LayerNorm",
                "generator_lm_head.bias", None),
}


def pretraining_head_name_map(mlm_head, nsp_head, next_sentence=True, family="bert"):
    """Our pretraining-head variable paths -> the head tensor names of `family`'s
    `*ForPreTraining` / `*ForMaskedLM` files (ValueError: the family has no pair-task head)."""
    _, dense, layer_norm, bias, pair = MASKED_LM_HEADS[family]
    m, n = mlm_head, nsp_head
    names = {
        f"{m}/transform/kernel": ([f"{dense}.weight"], transpose),
        f"{m}/transform/bias": ([f"{dense}.bias"], identity),
        f"{m}/transform_layer_norm/gamma": ([f"{layer_norm}.weight"], identity),
        f"{m}/transform_layer_norm/beta": ([f"{layer_norm}.bias"], identity),
        f"{m}/decoder/output_bias": ([bias], identity),
    }
    if next_sentence:
        if pair is None:
            raise ValueError(f"Hugging Face {family} checkpoints have no next-sentence head.")
        names.update({
            f"{n}/logits/kernel": ([f"{pair}.weight"], transpose),
            f"{n}/logits/bias": ([f"{pair}.bias"], identity),
        })
    return names
