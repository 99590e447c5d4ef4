"""The SavedModel writer of an export: a model, its tokenizer and its task type's serving
functions written to BASE/NAME/VERSION/ (`write_saved_model`), atomically, warmed up and
audited; and the metadata asset that describes it (`read_metadata`).

    VERSION/saved_model.pb, variables/
    VERSION/assets/                    the tokenizer's files, bert_keras_metadata.json
    VERSION/assets.extra/tf_serving_warmup_requests

The signatures' inputs are named after the task type's serving inputs (`text`; `text_a`,
`text_b`; `question`, `context`; ...), their outputs documented in the metadata by the task
type (`Task.output_docs`) and, for `encode` and `preprocess`, by ENCODE_OUTPUT_DOCS.
"""

import inspect
import json
import os
import shutil
import tempfile

import keras
import tensorflow as tf
from absl import logging

from bert_keras.directories import move_directory
from bert_keras.errors import InputError
from bert_keras.files import writing
from bert_keras.models.encoder.inference import cast_for_inference, uses_transposed_kernels
from bert_keras.names import INPUT_NAMES
from bert_keras.serving import int8_check, op_audit, versions
from bert_keras.serving import signatures as sigs
from bert_keras.serving.export_config import EXPORT_DTYPES
from bert_keras.serving.warmup import warmup_requests, write_warmup

METADATA_FILE = "bert_keras_metadata.json"
# Serving runs the signatures forward only: a custom gradient in them (the serving functions
# trace the models under `dense.forward_only`, which leaves none) is not traced and saved
# (~0.5 s an export of a 2-layer tagger had, 26 gradient functions); the loader would warn of
# one, which the tests' serving client refuses.
SAVE_OPTIONS = tf.saved_model.SaveOptions(experimental_custom_gradients=False)

ENCODE_OUTPUT_DOCS = {  # the outputs of `encode` and `preprocess`, every export's
    "pooled_output": "pooled [CLS] representation",
    "sequence_output": "per-token representations (0-padded rows beyond input_mask)",
    "input_word_ids": "WordPiece ids: [CLS] A [SEP] (B [SEP]), padded with [PAD]",
    "input_mask": "1 for real tokens, 0 for padding",
    "input_type_ids": "0 for segment A, 1 for segment B",
}


def read_metadata(export_dir):
    """The metadata asset of an export (task, labels, seq_length, signatures, ...)."""
    with tf.io.gfile.GFile(os.path.join(export_dir, "assets", METADATA_FILE)) as f:
        return json.load(f)


def serving_functions(model, tokenizer, info, dtype="float32", kernel_layout="auto", task=None,
                      options=None):
    """The ServingFunctions an export of `model` traces: over its inference copy
    (`cast_for_inference`: `dtype`, `kernel_layout`), so what runs them runs the export's
    computation. `task`: its Task object (default: info's task by name); `options`: the task
    type's export options object (`Task.export_options_class`; None: its defaults)."""
    return sigs.ServingFunctions(cast_for_inference(model, dtype, kernel_layout), tokenizer,
                                 info, task=task, options=options)


def signature_functions(functions):
    """{signature name: tf.function}, each with an argument per input, named as the input."""
    specs = functions.text_signature()
    fields = [spec.name for spec in specs]
    ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in INPUT_NAMES]
    fns = {
        "serving_default": _traced(functions.serve, fields, specs),
        "preprocess": _traced(functions.preprocess, fields, specs),
        "encode": tf.function(functions.encode, input_signature=ids, autograph=False),
    }
    for name, inputs in functions.task.extra_signatures.items():
        specs = [tf.TensorSpec([None] * rank, tf.string, name=input_name)
                 for input_name, rank in inputs]
        fns[name] = _traced(_extra_signature(functions, name, [n for n, _ in inputs]),
                            [n for n, _ in inputs], specs)
    return fns


def _traced(function, names, specs):
    """tf.function of `function(*tensors)` whose Python signature names its arguments
    `names`, so the loaded function takes them by name too (`serving_default(text=...)`)."""
    def call(*tensors):
        return function(*tensors)

    call.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    return tf.function(call, input_signature=specs, autograph=False)


def _extra_signature(functions, name, input_names):
    """The Python function of the task's extra signature `name`: tensors in, in the order
    of `input_names`."""
    def extra(*tensors):
        return functions.serve_extra(name, dict(zip(input_names, tensors)))
    return extra


def describe_signatures(signatures, task=None):
    """{name: {"inputs": {key: dtype/shape}, "outputs": {key: dtype/shape/doc}}}; the docs
    are `task`'s (`Task.output_docs`), then ENCODE_OUTPUT_DOCS."""
    docs = {**ENCODE_OUTPUT_DOCS, **(getattr(task, "output_docs", None) or {})}
    out = {}
    for name, fn in signatures.items():
        inputs = {spec.name: {"dtype": spec.dtype.name, "shape": spec.shape.as_list()}
                  for spec in tf.nest.flatten(fn.structured_input_signature)}
        outputs = {key: {"dtype": spec.dtype.name, "shape": spec.shape.as_list(),
                         "doc": docs.get(key, "")}
                   for key, spec in fn.structured_outputs.items()}
        out[name] = {"inputs": inputs, "outputs": outputs}
    return out


def write_saved_model(model, tokenizer, info, base_dir, model_name, version=None,
                      dtype="float32", extra_allowed_ops=(), examples=None,
                      kernel_layout="auto", calibration_examples=None, task=None, options=None):
    """Writes BASE_DIR/MODEL_NAME/VERSION/ (the arguments of `export.export_saved_model`;
    `task`: the Task object, default info's task by name; `options`: its type's export
    options object, None for their defaults); the caller has checked BASE_DIR
    (`versions.check_export_base`). Returns the version directory."""
    model_dir = os.path.join(os.fspath(base_dir), model_name)
    version = versions.next_version(model_dir) if version is None else int(version)
    if version < 1:
        raise ValueError(f"version must be a positive integer, got {version}.")
    final = os.path.join(model_dir, str(version))
    if tf.io.gfile.exists(final):
        raise FileExistsError(f"Version directory {final} already exists; choose another version.")
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"dtype must be one of {EXPORT_DTYPES}, got {dtype!r}.")
    transposed = uses_transposed_kernels(dtype, kernel_layout)  # a bad name fails here
    if calibration_examples is not None and dtype != "int8":
        raise InputError(f"{int8_check.FLAG} checks an int8 export; this one is {dtype}.")
    functions = serving_functions(model, tokenizer, info, dtype, kernel_layout, task, options)
    signatures = {name: fn.get_concrete_function()
                  for name, fn in signature_functions(functions).items()}
    metadata = dict(
        task=functions.task.name, labels=functions.labels, seq_length=functions.seq_length,
        lower_case=bool(tokenizer.lower_case), text_fields=list(functions.text_fields),
        vocab_size=len(tokenizer.vocab), dtype=dtype,
        kernel_layout="transposed" if transposed else "keras", model_name=model_name,
        version=version, top_k=None, max_answer_tokens=None,
        signatures=describe_signatures(signatures, functions.task),
    )
    metadata.update(functions.task.export_metadata(functions))
    if calibration_examples is not None:
        reference = serving_functions(model, tokenizer, info, "float32", "keras",
                                      functions.task, functions.options)
        check = int8_check.compare_outputs(reference, functions, calibration_examples)
        logging.info("int8 against float32 on %d calibration examples: agreement %s, largest "
                     "difference %s", check["examples"], check["agreement"],
                     check["max_abs_difference"])
        metadata["int8_check"] = check
    tf.io.gfile.makedirs(model_dir)
    versions.remove_abandoned_staging(model_dir)
    tmp = versions.staging_dir(model_dir, version)
    staging = tempfile.mkdtemp(prefix="bert_export_assets_")
    try:
        with writing(final):  # a full disk: one line naming the version directory
            for name, source in tokenizer.asset_files.items():
                tf.io.gfile.copy(source, os.path.join(staging, name), overwrite=True)
            with open(os.path.join(staging, METADATA_FILE), "w", encoding="utf-8") as f:
                json.dump(metadata, f, indent=2)
            # The root tracks the variables as a plain list, like keras.export.ExportArchive:
            # tracking the Keras model object itself gives the TF1 loader (TF Serving) handles
            # that the checkpoint restore does not fill ("Could not find variable ...").
            root = tf.Module()
            root.model_variables = [_tf_variable(v) for v in functions.model.variables]
            root.tokenizer_files = [tf.saved_model.Asset(os.path.join(staging, name))
                                    for name in tokenizer.asset_files]
            root.tokenizer = tokenizer  # tracks its resources (the SentencePiece model)
            root.metadata_file = tf.saved_model.Asset(os.path.join(staging, METADATA_FILE))
            # The traced concrete functions, not the tf.functions: SavedModel's save traces a
            # tf.function again in its own context (2-4 s an export; the graph is the same).
            for name, function in signatures.items():
                setattr(root, name, function)
            tf.saved_model.save(root, tmp, signatures=signatures, options=SAVE_OPTIONS)
            op_audit.audit_saved_model(tmp, extra_allowed=extra_allowed_ops)
            write_warmup(tmp, model_name, warmup_requests(functions, examples))
            move_directory(tmp, final, marker="saved_model.pb")  # TF Serving needs it whole
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if tf.io.gfile.exists(tmp):
            tf.io.gfile.rmtree(tmp)
    return final


def _tf_variable(variable):
    """The tf.Variable behind a Keras variable (TF backend): what the functions capture."""
    value = variable.value if isinstance(variable, keras.Variable) else variable
    if not isinstance(value, tf.Variable):
        raise TypeError(
            f"Expected a TF-backend variable, got {type(value).__name__} for {variable.path}.")
    return value
