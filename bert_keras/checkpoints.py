"""Import of Hugging Face and Google TF1 BERT checkpoints through exact name maps.

Each of our encoder variables (by its Keras path) maps to the checkpoint tensors it is made
of. A checkpoint tensor that no variable uses, a variable that no tensor feeds, and a shape
that differs are errors that name the tensors. Head and optimizer tensors that a full
pretraining checkpoint carries (`cls/...`, `adam_m`, `global_step`) are known and skipped.

Example:
>>> import bert_keras as bk  # doctest: +SKIP
>>> encoder = bk.BertEncoder.from_pretrained("all-MiniLM-L6-v2/")  # doctest: +SKIP
"""

import json
import os
import re

import numpy as np
import tensorflow as tf

from bert_keras.encoder import BertEncoder

HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_approximate",
                  "gelu_pytorch_tanh": "gelu_approximate", "relu": "relu"}
# Google's TF1 modeling.py calls its tanh approximation "gelu".
GOOGLE_ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu"}


class CheckpointError(ValueError):
    """A checkpoint does not match the encoder: names the tensors at fault."""


# --- name maps -------------------------------------------------------------------------
# A map is {our variable path: (source tensor names, combine)}, where `combine` turns the
# source arrays (in order) into the value of our variable.

def _identity(x):
    return x


def _concat_columns(*kernels):
    return np.concatenate(kernels, axis=-1)


def _transpose_concat(*weights):  # PyTorch Linear stores (out, in).
    return np.concatenate([w.T for w in weights], axis=-1)


def _transpose(w):
    return w.T


def hf_name_map(num_layers, prefix=""):
    """Our variable paths -> Hugging Face `BertModel` tensor names (`prefix` e.g. "bert.")."""
    p = prefix
    names = {
        "token_embedding/embeddings": ([f"{p}embeddings.word_embeddings.weight"], _identity),
        "segment_embedding/embeddings": ([f"{p}embeddings.token_type_embeddings.weight"], _identity),
        "position_embedding/embeddings": ([f"{p}embeddings.position_embeddings.weight"], _identity),
        "embeddings_layer_norm/gamma": ([f"{p}embeddings.LayerNorm.weight"], _identity),
        "embeddings_layer_norm/beta": ([f"{p}embeddings.LayerNorm.bias"], _identity),
        "pooler/kernel": ([f"{p}pooler.dense.weight"], _transpose),
        "pooler/bias": ([f"{p}pooler.dense.bias"], _identity),
    }
    for i in range(num_layers):
        ours, hf = f"transformer_layer_{i}", f"{p}encoder.layer.{i}"
        qkv = [f"{hf}.attention.self.{part}" for part in ("query", "key", "value")]
        names.update({
            f"{ours}/attention/qkv/kernel": ([f"{n}.weight" for n in qkv], _transpose_concat),
            f"{ours}/attention/qkv/bias": ([f"{n}.bias" for n in qkv], _concat_columns),
            f"{ours}/attention/output/kernel": ([f"{hf}.attention.output.dense.weight"], _transpose),
            f"{ours}/attention/output/bias": ([f"{hf}.attention.output.dense.bias"], _identity),
            f"{ours}/attention_layer_norm/gamma": ([f"{hf}.attention.output.LayerNorm.weight"], _identity),
            f"{ours}/attention_layer_norm/beta": ([f"{hf}.attention.output.LayerNorm.bias"], _identity),
            f"{ours}/intermediate/kernel": ([f"{hf}.intermediate.dense.weight"], _transpose),
            f"{ours}/intermediate/bias": ([f"{hf}.intermediate.dense.bias"], _identity),
            f"{ours}/output/kernel": ([f"{hf}.output.dense.weight"], _transpose),
            f"{ours}/output/bias": ([f"{hf}.output.dense.bias"], _identity),
            f"{ours}/output_layer_norm/gamma": ([f"{hf}.output.LayerNorm.weight"], _identity),
            f"{ours}/output_layer_norm/beta": ([f"{hf}.output.LayerNorm.bias"], _identity),
        })
    return names


def google_name_map(num_layers):
    """Our variable paths -> Google TF1 BERT variable names (`bert/encoder/layer_0/...`)."""
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
    # TF1 kernels are already (in, out); the fused qkv concatenates columns.
    return {path: (sources, _concat_columns if len(sources) > 1 else _identity)
            for path, sources in names.items()}


# Tensors a full checkpoint carries that the encoder does not use: pretraining heads,
# optimizer slots, step counters, Hugging Face's constant position ids.
_SKIPPED = re.compile(
    r"(^cls[./])|(adam_[mv]$)|(^global_step$)|(position_ids$)|(^_CHECKPOINTABLE_OBJECT_GRAPH$)"
)


def assign_weights(model, name_map, tensors, source, partial=False):
    """Sets `model`'s variables from `tensors` (name -> array) through `name_map`.

    With `partial=False` the map must cover every variable and use every tensor (but the
    known head and optimizer tensors); with `partial=True` it sets only the mapped variables
    (e.g. the pretraining heads) and ignores the checkpoint's other tensors.
    """
    variables = {v.path: v for v in model.weights}
    unmapped = sorted(set(variables) - set(name_map)) if not partial else []
    unknown = sorted(set(name_map) - set(variables))
    if unmapped or unknown:  # A bug in the map itself, never the user's fault.
        raise AssertionError(f"Name map of {model.name} does not match its variables: "
                             f"unmapped {unmapped}, unknown {unknown}.")
    needed = {name for sources, _ in name_map.values() for name in sources}
    missing = sorted(needed - set(tensors))
    unused = [] if partial else sorted(
        n for n in set(tensors) - needed if not _SKIPPED.search(n))
    if missing or unused:
        raise CheckpointError(
            f"Checkpoint {source} does not match {model.name}: "
            f"missing tensors {missing[:10]}{' ...' if len(missing) > 10 else ''}; "
            f"unused tensors {unused[:10]}{' ...' if len(unused) > 10 else ''}."
        )
    values, wrong = {}, []
    for path, (sources, combine) in name_map.items():
        value = combine(*[np.asarray(tensors[name]) for name in sources])
        expected = tuple(variables[path].shape)
        if value.shape != expected:
            wrong.append(f"{'+'.join(sources)}: {value.shape} for {path} expecting {expected}")
        values[path] = value
    if wrong:
        raise CheckpointError(f"Checkpoint {source} has tensors of the wrong shape: {wrong}.")
    for path, value in values.items():
        variables[path].assign(value.astype(variables[path].dtype))


# --- formats ---------------------------------------------------------------------------

def detect_format(path):
    """Returns "bert_keras", "huggingface" or "google" for a checkpoint directory."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"Checkpoint directory {path!r} does not exist.")
    files = set(os.listdir(path))
    if "bert_keras.json" in files:
        return "bert_keras"
    if "config.json" in files and "model.safetensors" in files:
        return "huggingface"
    if "bert_config.json" in files and any(f.endswith(".index") for f in files):
        return "google"
    if "config.json" in files and "pytorch_model.bin" in files:
        raise ValueError(
            f"{path} holds a PyTorch pickle (pytorch_model.bin); bert_keras reads only "
            "model.safetensors (no torch needed). Convert it once with transformers: "
            "`AutoModel.from_pretrained(path).save_pretrained(path, safe_serialization=True)`."
        )
    raise ValueError(
        f"{path} is not a BERT checkpoint directory: expected bert_keras.json, "
        f"config.json + model.safetensors, or bert_config.json + bert_model.ckpt.*; found {sorted(files)}."
    )


def _google_checkpoint_prefix(path):
    prefix = tf.train.latest_checkpoint(path)
    if prefix:
        return prefix
    indexes = sorted(f for f in os.listdir(path) if f.endswith(".index"))
    return os.path.join(path, indexes[0][: -len(".index")])


def read_encoder_config(path):
    """The BertEncoder constructor arguments of a checkpoint directory."""
    fmt = detect_format(path)
    if fmt == "bert_keras":
        with open(os.path.join(path, "bert_keras.json")) as f:
            return json.load(f)["encoder"]
    config_file = "config.json" if fmt == "huggingface" else "bert_config.json"
    with open(os.path.join(path, config_file)) as f:
        c = json.load(f)
    if fmt == "huggingface" and c.get("model_type", "bert") != "bert":
        raise ValueError(f"{path}: model_type {c['model_type']!r} is not 'bert'.")
    if c.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{path}: position_embedding_type {c['position_embedding_type']!r} "
                         "is not supported (only 'absolute').")
    activations = HF_ACTIVATIONS if fmt == "huggingface" else GOOGLE_ACTIVATIONS
    if c["hidden_act"] not in activations:
        raise ValueError(f"{path}: hidden_act {c['hidden_act']!r} is not one of {sorted(activations)}.")
    return dict(
        vocab_size=c["vocab_size"],
        num_layers=c["num_hidden_layers"],
        hidden_size=c["hidden_size"],
        num_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"],
        activation=activations[c["hidden_act"]],
        dropout=c.get("hidden_dropout_prob", 0.1),
        attention_dropout=c.get("attention_probs_dropout_prob", 0.1),
        max_positions=c["max_position_embeddings"],
        type_vocab_size=c["type_vocab_size"],
        layer_norm_epsilon=c.get("layer_norm_eps", 1e-12),
        initializer_range=c.get("initializer_range", 0.02),
    )


def read_tensors(path):
    """(format, {name: numpy array}) of the weights in a checkpoint directory."""
    fmt = detect_format(path)
    if fmt == "bert_keras":
        from bert_keras.safetensors_io import read_safetensors

        return fmt, read_safetensors(os.path.join(path, "model.safetensors"))
    if fmt == "huggingface":
        from bert_keras.safetensors_io import read_safetensors

        tensors = read_safetensors(os.path.join(path, "model.safetensors"))
        # Older Hugging Face files name LayerNorm weights gamma/beta.
        return fmt, {re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight",
                            re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)): value
                     for name, value in tensors.items()}
    if fmt == "google":
        reader = tf.train.load_checkpoint(_google_checkpoint_prefix(path))
        names = reader.get_variable_to_shape_map()
        return fmt, {name: reader.get_tensor(name) for name in names}


def name_map_for(fmt, tensors, encoder):
    if fmt == "bert_keras":  # Our files are keyed by the variable paths themselves.
        return {v.path: ([v.path], _identity) for v in encoder.weights}
    if fmt == "google":
        return google_name_map(encoder.num_layers)
    # Hugging Face BertForPreTraining / BertForMaskedLM prefix the encoder with "bert.".
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
    return hf_name_map(encoder.num_layers, prefix)


def load_encoder(path, dtype=None, **overrides):
    """A BertEncoder with the weights of checkpoint directory `path` (any supported format).

    `overrides` change non-shape settings such as `dropout`.
    """
    config = {**read_encoder_config(path), **overrides}
    encoder = BertEncoder(dtype=dtype, **config)
    fmt, tensors = read_tensors(path)
    assign_weights(encoder, name_map_for(fmt, tensors, encoder), tensors, path)
    return encoder


def save_google_checkpoint(encoder, path, tokenizer=None):
    """Writes the encoder under Google's TF1 names: `bert_config.json`, `bert_model.ckpt.*`.

    The files load with Google's original `modeling.py` and with `BertEncoder.from_pretrained`.
    """
    os.makedirs(path, exist_ok=True)
    arch = encoder.architecture
    if arch["activation"] == "gelu":
        raise ValueError(
            "Google's TF1 BERT has only the tanh-approximate GELU; this encoder uses the exact "
            "GELU, so its outputs would change. Keep it in bert_keras or Hugging Face format."
        )
    variables = {v.path: v for v in encoder.weights}
    tensors = {}
    for our_path, (sources, _) in google_name_map(encoder.num_layers).items():
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
    google_act = {v: k for k, v in GOOGLE_ACTIVATIONS.items()}[arch["activation"]]
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
        with open(os.path.join(path, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in tokenizer.vocab))
