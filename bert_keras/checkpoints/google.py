"""Google's TF1 BERT layout: `bert_config.json`, `bert_model.ckpt.*` (google-research/bert names)."""

import json
import os

import numpy as np
import tensorflow as tf

from bert_keras.checkpoints.assign import concat_columns, identity, transpose
from bert_keras.text.vocab import save_vocab

# Google's TF1 modeling.py calls its tanh approximation "gelu".
ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu"}


def is_layout(files):
    return "bert_config.json" in files and any(f.endswith(".index") for f in files)


def _checkpoint_prefix(path):
    prefix = tf.train.latest_checkpoint(path)
    if prefix:
        return prefix
    indexes = sorted(f for f in os.listdir(path) if f.endswith(".index"))
    return os.path.join(path, indexes[0][: -len(".index")])


def encoder_config(path):
    """The BertEncoder arguments of `path`/bert_config.json."""
    with open(os.path.join(path, "bert_config.json")) as f:
        c = json.load(f)
    if c["hidden_act"] not in ACTIVATIONS:
        raise ValueError(f"{path}: hidden_act {c['hidden_act']!r} is not one of {sorted(ACTIVATIONS)}.")
    return dict(
        vocab_size=c["vocab_size"], num_layers=c["num_hidden_layers"],
        hidden_size=c["hidden_size"], num_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"], activation=ACTIVATIONS[c["hidden_act"]],
        dropout=c.get("hidden_dropout_prob", 0.1),
        attention_dropout=c.get("attention_probs_dropout_prob", 0.1),
        max_positions=c["max_position_embeddings"], type_vocab_size=c["type_vocab_size"],
        layer_norm_epsilon=c.get("layer_norm_eps", 1e-12),
        initializer_range=c.get("initializer_range", 0.02),
    )


def read_tensors(path):
    reader = tf.train.load_checkpoint(_checkpoint_prefix(path))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def _encoder_names(num_layers):
    names = {
        "token_embedding/embeddings": ["bert/embeddings/word_embeddings"],
        "segment_embedding/embeddings": ["bert/embeddings/token_type_embeddings"],
        "position_embedding/embeddings": ["bert/embeddings/position_embeddings"],
        "embeddings_layer_norm/gamma": ["bert/embeddings/LayerNorm/gamma"],
        "embeddings_layer_norm/beta": ["bert/embeddings/LayerNorm/beta"],
        "pooler/kernel": ["bert/pooler/dense/kernel"],
        "pooler/bias": ["bert/pooler/dense/bias"],
    }
    for i in range(num_layers):
        ours, g = f"transformer_layer_{i}", f"bert/encoder/layer_{i}"
        qkv = [f"{g}/attention/self/{part}" for part in ("query", "key", "value")]
        names.update({
            f"{ours}/attention/qkv/kernel": [f"{n}/kernel" for n in qkv],
            f"{ours}/attention/qkv/bias": [f"{n}/bias" for n in qkv],
            f"{ours}/attention/output/kernel": [f"{g}/attention/output/dense/kernel"],
            f"{ours}/attention/output/bias": [f"{g}/attention/output/dense/bias"],
            f"{ours}/attention_layer_norm/gamma": [f"{g}/attention/output/LayerNorm/gamma"],
            f"{ours}/attention_layer_norm/beta": [f"{g}/attention/output/LayerNorm/beta"],
            f"{ours}/intermediate/kernel": [f"{g}/intermediate/dense/kernel"],
            f"{ours}/intermediate/bias": [f"{g}/intermediate/dense/bias"],
            f"{ours}/output/kernel": [f"{g}/output/dense/kernel"],
            f"{ours}/output/bias": [f"{g}/output/dense/bias"],
            f"{ours}/output_layer_norm/gamma": [f"{g}/output/LayerNorm/gamma"],
            f"{ours}/output_layer_norm/beta": [f"{g}/output/LayerNorm/beta"],
        })
    return names


def encoder_name_map(num_layers):
    """Our variable paths -> Google TF1 variable names (`bert/encoder/layer_0/...`)."""
    # TF1 kernels are already (in, out); the fused qkv concatenates columns.
    return {path: (sources, concat_columns if len(sources) > 1 else identity)
            for path, sources in _encoder_names(num_layers).items()}


def pretraining_head_name_map(mlm_head, nsp_head, next_sentence=True):
    """Our pretraining-head variable paths -> TF1 `run_pretraining.py` head names."""
    p, m, n = "cls/predictions", mlm_head, nsp_head
    names = {
        f"{m}/transform/kernel": ([f"{p}/transform/dense/kernel"], identity),
        f"{m}/transform/bias": ([f"{p}/transform/dense/bias"], identity),
        f"{m}/transform_layer_norm/gamma": ([f"{p}/transform/LayerNorm/gamma"], identity),
        f"{m}/transform_layer_norm/beta": ([f"{p}/transform/LayerNorm/beta"], identity),
        f"{m}/decoder/output_bias": ([f"{p}/output_bias"], identity),
    }
    if next_sentence:  # output_weights are stored [2, H].
        names.update({
            f"{n}/logits/kernel": (["cls/seq_relationship/output_weights"], transpose),
            f"{n}/logits/bias": (["cls/seq_relationship/output_bias"], identity),
        })
    return names


def save_google_checkpoint(encoder, path, tokenizer=None):
    """Writes a BertEncoder under Google's TF1 names: `bert_config.json`, `bert_model.ckpt.*`.

    The files load with Google's original `modeling.py` and with `BertEncoder.from_pretrained`.
    """
    os.makedirs(path, exist_ok=True)
    arch = encoder.architecture
    if arch["activation"] == "gelu":
        raise ValueError(
            "Google's TF1 BERT has only the tanh-approximate GELU; this encoder uses the exact "
            "GELU, so its outputs would change. Keep it in bert_keras or Hugging Face format."
        )
    bert_only = dict(embedding_size=None, num_layer_groups=None, position_offset=0, use_pooler=True)
    other = {k: arch.get(k) for k, v in bert_only.items() if arch.get(k, v) != v}
    if other or arch["type_vocab_size"] < 1:
        raise ValueError(f"Google's TF1 BERT layout holds BERT encoders only; this one has "
                         f"{other or dict(type_vocab_size=arch['type_vocab_size'])}.")
    variables = {v.path: v for v in encoder.weights}
    tensors = {}
    for our_path, sources in _encoder_names(encoder.num_layers).items():
        value = np.asarray(variables[our_path].numpy(), np.float32)
        for source, part in zip(sources, np.split(value, len(sources), axis=-1)):
            tensors[source] = part
    names = sorted(tensors)
    tf.raw_ops.SaveV2(
        prefix=os.path.join(path, "bert_model.ckpt"),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(tensors[n]) for n in names],
    )
    google_act = {v: k for k, v in ACTIVATIONS.items()}[arch["activation"]]
    config = dict(
        vocab_size=arch["vocab_size"], hidden_size=arch["hidden_size"],
        num_hidden_layers=arch["num_layers"], num_attention_heads=arch["num_heads"],
        intermediate_size=arch["intermediate_size"], hidden_act=google_act,
        hidden_dropout_prob=arch["dropout"], attention_probs_dropout_prob=arch["attention_dropout"],
        max_position_embeddings=arch["max_positions"], type_vocab_size=arch["type_vocab_size"],
        initializer_range=arch["initializer_range"],
    )
    with open(os.path.join(path, "bert_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(path, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "bert_model.ckpt"\n')
    if tokenizer is not None:
        save_vocab(tokenizer.vocab, os.path.join(path, "vocab.txt"))
