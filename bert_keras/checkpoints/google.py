"""Google's TF1 checkpoint directories: `bert_model.ckpt.*` / `model.ckpt-*` files in the
dialect of one family. A layout reader that asks the family registry: each family with a
Google layout (`bert_keras.families.google_layouts`: BERT's `bert_config.json`, ALBERT's
`albert_config.json`, ELECTRA's `electra/` variables and no config file) maps the config and
our variable paths to its variable names."""

import os

import numpy as np
import tensorflow as tf

from bert_keras.checkpoints.assign import concat_columns, identity, transpose
from bert_keras.errors import InputError
from bert_keras.families import bert, google_layouts, google_names
from bert_keras.files import exists, listdir, makedirs, read_json, write_json, write_text


def is_layout(files):
    return any(f.endswith(".index") for f in files)


def _checkpoint_prefix(path):
    prefix = tf.train.latest_checkpoint(path)
    if prefix:
        return prefix
    indexes = [f for f in listdir(path) if f.endswith(".index")]
    return os.path.join(path, indexes[0][: -len(".index")])


def _variable_shapes(path):
    """{variable name: shape}; TF Hub exports' `module/` prefix dropped."""
    reader = tf.train.load_checkpoint(_checkpoint_prefix(path))
    return {name.removeprefix("module/"): shape
            for name, shape in reader.get_variable_to_shape_map().items()}


def _dialect(path):
    """(the GoogleLayout of `path`, its config dict or, for a dialect known by a marker
    variable, the variable shapes)."""
    layouts = google_layouts()
    for layout in layouts:
        config_file = layout.config_file and os.path.join(path, layout.config_file)
        if config_file and exists(config_file):
            return layout, read_json(config_file)
    shapes = _variable_shapes(path)
    for layout in layouts:
        if layout.marker and layout.marker in shapes:
            return layout, shapes
    names = [layout.name for layout in layouts]
    files = [f"no {layout.config_file}" for layout in layouts if layout.config_file]
    markers = [f"no {layout.marker} variable" for layout in layouts if layout.marker]
    raise InputError(
        f"{path} holds a TensorFlow checkpoint but is not one of Google's "
        f"{', '.join(names[:-1])} or {names[-1]} checkpoints: {', '.join(files)}, and "
        f"{' or '.join(markers)}. (A bert_keras pretraining model_dir is exported "
        "to an encoder directory with `tools/export.py` / `BertEncoder.save_pretrained`.)"
    )


def encoder_config(path):
    """The BertEncoder arguments of a Google checkpoint directory."""
    layout, config = _dialect(path)
    return layout.encoder_config(config, path)


def read_tensors(path):
    reader = tf.train.load_checkpoint(_checkpoint_prefix(path))
    return {name.removeprefix("module/"): reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()}


def encoder_name_map(arch, path):
    """Our variable paths -> (Google TF1 variable names, combine) for checkpoint `path`."""
    layout, _ = _dialect(path)
    names = layout.encoder_names(arch)
    if not arch.get("use_pooler", True):
        names = {k: v for k, v in names.items() if not k.startswith("pooler/")}
    # TF1 kernels are already (in, out); the fused qkv concatenates columns.
    return {path: (sources, concat_columns if len(sources) > 1 else identity)
            for path, sources in names.items()}


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
    makedirs(path)
    arch = encoder.architecture
    if arch["activation"] == "gelu":
        raise InputError(
            "Google's TF1 BERT has only the tanh-approximate GELU; this encoder uses the exact "
            "GELU, so its outputs would change. Keep it in bert_keras or Hugging Face format "
            "(tools/convert_checkpoint.py --output_format=bert_keras or transformers)."
        )
    bert_only = dict(embedding_size=None, num_layer_groups=None, position_offset=0, use_pooler=True)
    other = {k: arch.get(k) for k, v in bert_only.items() if arch.get(k, v) != v}
    if other or arch["type_vocab_size"] < 1:
        raise InputError(f"Google's TF1 BERT layout holds BERT encoders only; this one has "
                         f"{other or dict(type_vocab_size=arch['type_vocab_size'])}.")
    variables = {v.path: v for v in encoder.weights}
    tensors = {}
    for our_path, sources in bert.GOOGLE.encoder_names(arch).items():
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
    google_act = {v: k for k, v in google_names.ACTIVATIONS.items()}[arch["activation"]]
    config = dict(
        vocab_size=arch["vocab_size"], hidden_size=arch["hidden_size"],
        num_hidden_layers=arch["num_layers"], num_attention_heads=arch["num_heads"],
        intermediate_size=arch["intermediate_size"], hidden_act=google_act,
        hidden_dropout_prob=arch["dropout"], attention_probs_dropout_prob=arch["attention_dropout"],
        max_position_embeddings=arch["max_positions"], type_vocab_size=arch["type_vocab_size"],
        initializer_range=arch["initializer_range"],
    )
    write_json(os.path.join(path, bert.GOOGLE.config_file), config)
    write_text(os.path.join(path, "checkpoint"), 'model_checkpoint_path: "bert_model.ckpt"\n')
    if tokenizer is not None:
        tokenizer.save(path)  # every file of its tokenizer, the casing included
