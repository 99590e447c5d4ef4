"""ELECTRA: transformers' `ElectraModel`, `ElectraForPreTraining` (the discriminator),
`ElectraForMaskedLM` (the generator) and task classes, and Google's TF1 checkpoints
(google-research/electra). BERT's layers, embeddings of embedding_size projected to
hidden_size (`embeddings_project`, only when the two differ), no pooler, WordPiece
(`vocab.txt`), a dense-gelu-dense classification head.

Google's published directories hold no config file: the discriminator is under `electra/`,
the generator under `generator/` sharing `electra/embeddings`, and the architecture is read
from the tensor shapes; the head count, which no shape shows, comes from a `config.json`
beside the checkpoint (the ElectraConfig that transformers' converter asks for) or else from
ELECTRA's 64-wide heads at every published size (small 256/4, base 768/12, large 1024/16)."""

import os
import re

from bert_keras.errors import InputError
from bert_keras.families import google_names
from bert_keras.families.converters import identity, transpose
from bert_keras.families.transformers_names import (
    TASK_HEADS,
    MaskedLMHead,
    TaskHead,
    bert_style_arguments,
    bert_style_config,
    embedding_names,
    layer_names,
    prefix,
    require,
    require_token_types,
    task_heads,
)
from bert_keras.files import exists, read_json
from bert_keras.text.tokenizer import WordPieceTokenizer

MODEL_TYPE = "electra"
TOKENIZER = WordPieceTokenizer
TOKENIZER_FILES = ("vocab.txt",)
TRANSFORMERS_PREFIX = "Electra"
TRANSFORMERS_TOKENIZER = "BertTokenizer"  # transformers 5 has no ElectraTokenizer

POOLER_TENSORS = ()  # never a pooler
HEADS = task_heads(
    ForSequenceClassification=TaskHead("gelu", "classifier.dense", "classifier.out_proj"),
    # ElectraForMultipleChoice: its sequence summary ([CLS], dense, exact GELU), then a dense.
    ForMultipleChoice=TaskHead("gelu", "sequence_summary.summary", "classifier", config=(
        ("summary_type", "first"), ("summary_use_proj", True), ("summary_activation", "gelu"))))
# ElectraForMaskedLM, the generator; its head's activation is fixed to the exact GELU.
MASKED_LM_HEAD = MaskedLMHead("gelu", "generator_predictions.dense",
                              "generator_predictions.LayerNorm", "generator_lm_head.bias", None)
REPLACED_TOKEN_HEAD = "discriminator_predictions"  # ElectraForPreTraining's
HEAD_PREFIXES = TASK_HEADS + ("discriminator_predictions", "generator", "generator_predictions",
                              "sequence_summary",
                              "generator_lm_head")

GOOGLE_MARKER = "electra/embeddings/word_embeddings"
GOOGLE_HEAD_SIZE = 64


def encoder_config(c, path):
    """The BertEncoder arguments of an ELECTRA config.json dict `c` (`path` for messages)."""
    embedding_size = c.get("embedding_size") or c["hidden_size"]
    # ELECTRA projects only when the widths differ (electra-small); base/large have none.
    return dict(bert_style_arguments(c, path), use_pooler=False,
                embedding_size=None if embedding_size == c["hidden_size"] else embedding_size)


def transformers_config(arch, tokenizer, what):
    """config.json's model keys of an ElectraModel with the encoder architecture `arch`
    (`encoder_config` inverted); InputError naming `what` for one it cannot hold: ELECTRA
    projects its embeddings exactly when embedding_size differs from hidden_size."""
    require(arch, what, "ELECTRA", position_offset=0,
            num_layer_groups=(None, arch["num_layers"]))
    require_token_types(arch, what, "ELECTRA")
    if arch["embedding_size"] == arch["hidden_size"]:
        raise InputError(f"{what}: a transformers ELECTRA model projects its embeddings only "
                         f"when embedding_size differs from hidden_size; this encoder projects "
                         f"{arch['embedding_size']} to {arch['hidden_size']}.")
    return dict(model_type=MODEL_TYPE, **bert_style_config(arch, what),
                embedding_size=arch["embedding_size"] or arch["hidden_size"],
                pad_token_id=tokenizer.pad_id)


def encoder_name_map(arch, tensors):
    """Our variable paths -> `ElectraModel` tensor names ("electra."-prefixed in task files)."""
    p = prefix(tensors, MODEL_TYPE)
    names = embedding_names(p, arch)
    if arch.get("embedding_size") is not None:
        names.update({
            "embedding_projection/kernel": ([f"{p}embeddings_project.weight"], transpose),
            "embedding_projection/bias": ([f"{p}embeddings_project.bias"], identity),
        })
    for i in range(arch["num_layers"]):
        names.update(layer_names(f"transformer_layer_{i}", f"{p}encoder.layer.{i}"))
    return names


def google_encoder_config(shapes, path, scope="electra"):
    """The BertEncoder arguments of the `scope` encoder, from {variable name: shape}."""
    vocab_size, embedding_size = shapes[GOOGLE_MARKER]
    layers = {int(m.group(1)) for n in shapes
              if (m := re.match(rf"{scope}/encoder/layer_(\d+)/", n))}
    if not layers:
        raise InputError(f"{path}: an ELECTRA checkpoint without {scope}/encoder/layer_* "
                         "variables.")
    layer = f"{scope}/encoder/layer_0"
    hidden_size, intermediate_size = shapes[f"{layer}/intermediate/dense/kernel"]
    config = {}
    if exists(os.path.join(path, "config.json")):
        config = read_json(os.path.join(path, "config.json"))
    return dict(
        vocab_size=vocab_size, num_layers=len(layers), hidden_size=hidden_size,
        num_heads=config.get("num_attention_heads", max(1, hidden_size // GOOGLE_HEAD_SIZE)),
        intermediate_size=intermediate_size,
        activation="gelu",  # ELECTRA's modeling.py uses the exact (erf) GELU
        dropout=config.get("hidden_dropout_prob", 0.1),
        attention_dropout=config.get("attention_probs_dropout_prob", 0.1),
        max_positions=shapes["electra/embeddings/position_embeddings"][0],
        type_vocab_size=shapes["electra/embeddings/token_type_embeddings"][0],
        layer_norm_epsilon=1e-12, initializer_range=0.02, use_pooler=False,
        embedding_size=None if embedding_size == hidden_size else embedding_size,
    )


def google_encoder_names(arch, scope="electra"):
    """Our variable paths -> TF1 ELECTRA names of the `scope` ("electra" or "generator")
    encoder; the embeddings are always `electra/embeddings` (shared)."""
    names = google_names.embedding_names("electra")
    if arch.get("embedding_size") is not None:
        names.update({"embedding_projection/kernel": [f"{scope}/embeddings_project/kernel"],
                      "embedding_projection/bias": [f"{scope}/embeddings_project/bias"]})
    for i in range(arch["num_layers"]):
        names.update(google_names.layer_names(f"transformer_layer_{i}",
                                              f"{scope}/encoder/layer_{i}"))
    return names


GOOGLE = google_names.GoogleLayout(
    name="ELECTRA", config_file=None, marker=GOOGLE_MARKER,
    encoder_config=google_encoder_config, encoder_names=google_encoder_names)
