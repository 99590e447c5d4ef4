"""The Hugging Face BERT layout: `config.json`, `model.safetensors` (read with numpy, no torch)."""

import json
import os
import re

from bert_keras.checkpoints.assign import identity, transpose, transpose_concat, concat_columns
from bert_keras.checkpoints.safetensors import read_safetensors

ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_approximate",
               "gelu_pytorch_tanh": "gelu_approximate", "relu": "relu"}


def is_layout(files):
    return "config.json" in files and "model.safetensors" in files


def encoder_config(path):
    """The BertEncoder arguments of `path`/config.json."""
    with open(os.path.join(path, "config.json")) as f:
        c = json.load(f)
    if c.get("model_type", "bert") != "bert":
        raise ValueError(f"{path}: model_type {c['model_type']!r} is not 'bert'.")
    if c.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{path}: position_embedding_type {c['position_embedding_type']!r} "
                         "is not supported (only 'absolute').")
    if c["hidden_act"] not in ACTIVATIONS:
        raise ValueError(f"{path}: hidden_act {c['hidden_act']!r} is not one of {sorted(ACTIVATIONS)}.")
    return dict(
        vocab_size=c["vocab_size"],
        num_layers=c["num_hidden_layers"],
        hidden_size=c["hidden_size"],
        num_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"],
        activation=ACTIVATIONS[c["hidden_act"]],
        dropout=c.get("hidden_dropout_prob", 0.1),
        attention_dropout=c.get("attention_probs_dropout_prob", 0.1),
        max_positions=c["max_position_embeddings"],
        type_vocab_size=c["type_vocab_size"],
        layer_norm_epsilon=c.get("layer_norm_eps", 1e-12),
        initializer_range=c.get("initializer_range", 0.02),
    )


def read_tensors(path):
    tensors = read_safetensors(os.path.join(path, "model.safetensors"))
    # Older Hugging Face files name LayerNorm weights gamma/beta.
    return {re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight",
                   re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)): value
            for name, value in tensors.items()}


def encoder_name_map(num_layers, tensors=()):
    """Our variable paths -> `BertModel` tensor names; BertForPreTraining / BertForMaskedLM
    files prefix them with "bert." (detected from `tensors`)."""
    p = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
    names = {
        "token_embedding/embeddings": ([f"{p}embeddings.word_embeddings.weight"], identity),
        "segment_embedding/embeddings": ([f"{p}embeddings.token_type_embeddings.weight"], identity),
        "position_embedding/embeddings": ([f"{p}embeddings.position_embeddings.weight"], identity),
        "embeddings_layer_norm/gamma": ([f"{p}embeddings.LayerNorm.weight"], identity),
        "embeddings_layer_norm/beta": ([f"{p}embeddings.LayerNorm.bias"], identity),
        "pooler/kernel": ([f"{p}pooler.dense.weight"], transpose),
        "pooler/bias": ([f"{p}pooler.dense.bias"], identity),
    }
    for i in range(num_layers):
        ours, hf = f"transformer_layer_{i}", f"{p}encoder.layer.{i}"
        qkv = [f"{hf}.attention.self.{part}" for part in ("query", "key", "value")]
        names.update({
            f"{ours}/attention/qkv/kernel": ([f"{n}.weight" for n in qkv], transpose_concat),
            f"{ours}/attention/qkv/bias": ([f"{n}.bias" for n in qkv], concat_columns),
            f"{ours}/attention/output/kernel": ([f"{hf}.attention.output.dense.weight"], transpose),
            f"{ours}/attention/output/bias": ([f"{hf}.attention.output.dense.bias"], identity),
            f"{ours}/attention_layer_norm/gamma": ([f"{hf}.attention.output.LayerNorm.weight"], identity),
            f"{ours}/attention_layer_norm/beta": ([f"{hf}.attention.output.LayerNorm.bias"], identity),
            f"{ours}/intermediate/kernel": ([f"{hf}.intermediate.dense.weight"], transpose),
            f"{ours}/intermediate/bias": ([f"{hf}.intermediate.dense.bias"], identity),
            f"{ours}/output/kernel": ([f"{hf}.output.dense.weight"], transpose),
            f"{ours}/output/bias": ([f"{hf}.output.dense.bias"], identity),
            f"{ours}/output_layer_norm/gamma": ([f"{hf}.output.LayerNorm.weight"], identity),
            f"{ours}/output_layer_norm/beta": ([f"{hf}.output.LayerNorm.bias"], identity),
        })
    return names


def pretraining_head_name_map(mlm_head, nsp_head, next_sentence=True):
    """Our pretraining-head variable paths -> `BertForPreTraining` head tensor names."""
    p, m, n = "cls.predictions", mlm_head, nsp_head
    names = {
        f"{m}/transform/kernel": ([f"{p}.transform.dense.weight"], transpose),
        f"{m}/transform/bias": ([f"{p}.transform.dense.bias"], identity),
        f"{m}/transform_layer_norm/gamma": ([f"{p}.transform.LayerNorm.weight"], identity),
        f"{m}/transform_layer_norm/beta": ([f"{p}.transform.LayerNorm.bias"], identity),
        f"{m}/decoder/output_bias": ([f"{p}.bias"], identity),
    }
    if next_sentence:
        names.update({
            f"{n}/logits/kernel": (["cls.seq_relationship.weight"], transpose),
            f"{n}/logits/bias": (["cls.seq_relationship.bias"], identity),
        })
    return names
