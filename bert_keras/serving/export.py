"""Export a trained model as a self-contained, versioned SavedModel for TF Serving.

    saved_models/NAME/VERSION/          VERSION = 1, 2, ... (next free number by default)
        saved_model.pb, variables/
        assets/vocab.txt                the tokenizer's files (WordPiece vocab.txt; ALBERT
                                        spiece.model; RoBERTa vocab.json + merges.txt)
        assets/bert_keras_metadata.json task, labels, seq_length, lower_case, text_fields,
                                        signatures (names, dtypes, shapes, meaning)
        assets.extra/tf_serving_warmup_requests   PredictionLog records of real requests

Signatures: `serving_default` (raw text in, tokenization and packing in the graph), `encode`
(TF Hub BERT interface) and `preprocess`; see `bert_keras.serving.signatures` for the inputs
and outputs of each task. Batch size and sequence length are dynamic: a batch is padded to
its longest row, at most seq_length tokens (longer texts are truncated, never an error).

The SavedModel loads with nothing from this project installed (TensorFlow and, for the
tokenizer ops, tensorflow-text or a TF Serving binary). Every export is audited
(`bert_keras.serving.op_audit`): an op that stock TF Serving does not register fails the export and
names the op. A version directory is written under a temporary name and renamed when
complete, so a model server watching NAME/ never loads a half-written version.

Example:
>>> import bert_keras as bk  # doctest: +SKIP
>>> path = export_task("runs/paraphrase/best", "saved_models", "paraphrase")  # doctest: +SKIP
>>> path  # doctest: +SKIP
'saved_models/paraphrase/1'
>>> import tensorflow as tf, tensorflow_text  # doctest: +SKIP
>>> serve = tf.saved_model.load(path).signatures["serving_default"]  # doctest: +SKIP
>>> serve(text_a=tf.constant(["He left."]),
...       text_b=tf.constant(["He went away."]))["labels"]  # doctest: +SKIP
"""

import json
import os
import re
import shutil
import tempfile

import keras
import tensorflow as tf
from absl import logging

from bert_keras.errors import InputError
from bert_keras.files import exists, is_local, move_directory, writing
from bert_keras.models.encoder import BertEncoder
from bert_keras.models.encoder.inference import cast_for_inference, uses_transposed_kernels
from bert_keras.serving import int8_check, op_audit
from bert_keras.serving import signatures as sigs
from bert_keras.serving.export_config import DTYPES
from bert_keras.serving.warmup import warmup_requests, write_warmup
from bert_keras.tasks import registry
from bert_keras.tasks.embedding.model import BertEmbedder
from bert_keras.tasks.registry import get_task, task_of_model
from bert_keras.text.tokenizers import load_tokenizer

METADATA_FILE = "bert_keras_metadata.json"

OUTPUT_DOCS = {
    "probabilities": "class probabilities (softmax; sigmoid for multi_label; over the choices "
                     "for multiple_choice)",
    "label_ids": "index of the predicted class (multi_label: 1 where probability >= 0.5)",
    "labels": "name of the predicted class (multi_label: chosen names joined with ',')",
    "scores": "regression outputs",
    "choice": "index of the best choice (multiple_choice)",
    "tokens": "words of the text (the tokenizer's words, or the given words), '' padding",
    "tags": "predicted tag of each word, '' padding",
    "tag_ids": "index of each word's tag, -1 padding",
    "tag_scores": "probability of each word's tag, 0 padding",
    "token_starts": "character offset of each word in the text, -1 padding",
    "token_ends": "character offset after each word (exclusive), -1 padding",
    "entity_types": "type of each entity of the tags (seqeval's chunks: B-PER I-PER -> PER), "
                    "'' padding",
    "entity_texts": "text of each entity (from its first word to its last), '' padding",
    "entity_starts": "character offset of each entity in the text, -1 padding",
    "entity_ends": "character offset after each entity (exclusive), -1 padding",
    "entity_scores": "mean tag probability of each entity's words, 0 padding",
    "answer": "answer text from the context ('' when the context is empty)",
    "answer_start": "character offset of the answer in the context, -1 if none",
    "answer_end": "character offset after the answer (exclusive), -1 if none",
    "score": "start logit + end logit of the answer",
    "no_answer_score": "start + end logit of [CLS] (SQuAD 2.0 no-answer score)",
    "mask_positions": "token index of each [MASK], -1 padding",
    "top_k_ids": "vocab ids of the top-k fillers of each [MASK], -1 padding",
    "top_k_tokens": "WordPiece tokens of the top-k fillers, '' padding",
    "top_k_scores": "probabilities of the top-k fillers, 0 padding",
    "pooled_output": "pooled [CLS] representation",
    "sequence_output": "per-token representations (0-padded rows beyond input_mask)",
    "input_word_ids": "WordPiece ids: [CLS] A [SEP] (B [SEP]), padded with [PAD]",
    "input_mask": "1 for real tokens, 0 for padding",
    "input_type_ids": "0 for segment A, 1 for segment B",
    "embeddings": "sentence embedding: the pooled sequence output (mean, cls or max over the "
                  "real tokens; its first truncate_dim values if the metadata sets it; "
                  "L2-normalized if the metadata says normalize)",
}

def next_version(model_dir):
    """1 + the largest integer directory name in `model_dir` (1 if none)."""
    if not tf.io.gfile.isdir(model_dir):
        return 1
    versions = [int(n.rstrip("/")) for n in tf.io.gfile.listdir(model_dir)
                if n.rstrip("/").isdigit()]
    return max(versions, default=0) + 1


def check_export_base(base_dir, model_name, name="base_dir"):
    """InputError unless BASE_DIR/MODEL_NAME can be made a directory: no part of it that
    exists is a file. Checked before any work, so that a base path naming a file fails in one
    line naming `name` (the flag) and the path, not in TensorFlow's makedirs after the export.
    Local paths only (a gs:// path is left to the file system)."""
    base_dir = os.fspath(base_dir)
    if not is_local(base_dir):
        return
    path = os.path.abspath(os.path.join(base_dir, model_name))
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)  # the deepest part that exists
    if not os.path.isdir(path):
        raise InputError(f"{name}={base_dir}: {path} is a file, not a directory; the export "
                         f"goes to {os.path.join(base_dir, model_name, 'VERSION')}")


# -- export -----------------------------------------------------------------------------------

def _signature_functions(functions):
    """tf.functions with named arguments (the signature input names)."""
    fields = functions.text_fields
    specs = functions.text_signature()
    if fields == ("text",):
        def serve(text):
            return functions.serve(text)

        def pre(text):
            return functions.preprocess(text)
    elif fields == ("text_a", "text_b"):
        def serve(text_a, text_b):
            return functions.serve(text_a, text_b)

        def pre(text_a, text_b):
            return functions.preprocess(text_a, text_b)
    elif fields == ("question", "context"):
        def serve(question, context):
            return functions.serve(question, context)

        def pre(question, context):
            return functions.preprocess(question, context)
    else:  # the specs' names are the signature's input names
        def serve(*texts):
            return functions.serve(*texts)

        def pre(*texts):
            return functions.preprocess(*texts)
    ids = [tf.TensorSpec([None, None], tf.int32, name=n)
           for n in ("input_word_ids", "input_mask", "input_type_ids")]
    fns = {
        "serving_default": tf.function(serve, input_signature=specs, autograph=False),
        "preprocess": tf.function(pre, input_signature=specs, autograph=False),
        "encode": tf.function(functions.encode, input_signature=ids, autograph=False),
    }
    for name, inputs in functions.task.extra_signatures.items():
        # The specs' names are the signature's input names.
        specs = [tf.TensorSpec([None] * rank, tf.string, name=input_name)
                 for input_name, rank in inputs]
        fns[name] = tf.function(_extra_signature(functions, name, [n for n, _ in inputs]),
                                input_signature=specs, autograph=False)
    return fns


def _extra_signature(functions, name, input_names):
    """The Python function of the task's extra signature `name`: tensors in, in the order
    of `input_names`."""
    def extra(*tensors):
        return functions.serve_extra(name, dict(zip(input_names, tensors)))
    return extra


def describe_signatures(signatures):
    """{name: {"inputs": {key: dtype/shape}, "outputs": {key: dtype/shape/doc}}}."""
    out = {}
    for name, fn in signatures.items():
        inputs = {spec.name: {"dtype": spec.dtype.name, "shape": spec.shape.as_list()}
                  for spec in tf.nest.flatten(fn.structured_input_signature)}
        outputs = {key: {"dtype": spec.dtype.name, "shape": spec.shape.as_list(),
                         "doc": OUTPUT_DOCS.get(key, "")}
                   for key, spec in fn.structured_outputs.items()}
        out[name] = {"inputs": inputs, "outputs": outputs}
    return out


def _remove_abandoned_exports(model_dir):
    """Deletes `.tmp-VERSION-PID` directories of exports whose process is gone (killed
    mid-export: TF Serving ignores them, but they hold a whole model each). Local paths only:
    a process id means nothing on another machine's file system."""
    if not is_local(model_dir):
        return
    for name in os.listdir(model_dir):
        match = re.fullmatch(r"\.tmp-\d+-(\d+)", name)
        if not match:
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue  # still exporting
        except ProcessLookupError:
            pass
        except PermissionError:  # alive, another user's
            continue
        logging.info("Removing %s, left by an export that did not finish.", name)
        shutil.rmtree(os.path.join(model_dir, name), ignore_errors=True)


def export_model(model, export_dir_base, model_name, labels=None, seq_length=None, **kwargs):
    """Exports a task model built in user code (`BertClassifier.from_pretrained(...)`, then
    `fit`) as `tools/export.py` does: BASE/MODEL_NAME/VERSION/, warmed up and audited.

    The tokenizer is the model's preprocessor's, the task type its class's
    (`registry.task_of_model`), the label names `labels` or the model's, the inputs those it
    was fit on (`text`, or `text_a` + `text_b`); `seq_length` defaults to the
    preprocessor's. `kwargs`: version, dtype, top_k, ... of `export_saved_model`. Returns the
    version directory.

    >>> path = bk.export_model(classifier, "saved_models", "topics",  # doctest: +SKIP
    ...                        labels=["law", "poetry", "prophecy"])
    """
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is None:
        raise InputError(f"{type(model).__name__} carries no tokenizer: build it with "
                         "from_pretrained(...), or pass preprocessor=TextPreprocessor(tokenizer).")
    task = task_of_model(model)
    labels = labels if labels is not None else getattr(model, "labels", None)
    info = dict(task=task.name, labels=None if labels is None else [str(x) for x in labels],
                seq_length=seq_length or preprocessor.seq_length,
                lower_case=preprocessor.tokenizer.lower_case,
                text_fields=list(preprocessor.text_fields))
    return export_saved_model(model, preprocessor.tokenizer, info, export_dir_base, model_name,
                              **kwargs)


def serving_functions(model, tokenizer, info, dtype="float32", top_k=5, kernel_layout="auto",
                      **options):
    """The ServingFunctions an export of `model` traces: over its inference copy
    (`cast_for_inference`: `dtype`, `kernel_layout`), so what runs them runs the export's
    computation. `options`: the task type's (`ServingFunctions`)."""
    return sigs.ServingFunctions(cast_for_inference(model, dtype, kernel_layout), tokenizer,
                                 info, top_k=top_k, **options)


def export_saved_model(model, tokenizer, info, base_dir, model_name, version=None,
                       dtype="float32", top_k=5, extra_allowed_ops=(), examples=None,
                       kernel_layout="auto", calibration_examples=None, **options):
    """Exports a Keras task model (or bare encoder) to BASE_DIR/MODEL_NAME/VERSION/.

    Args:
      model: BertClassifier, BertTokenClassifier, BertSpanQA, BertPretrainer or BertEncoder.
      tokenizer: its BertTokenizer.
      info: task.json dict: task, labels, seq_length, lower_case, text_fields.
      base_dir: e.g. "saved_models".
      model_name: the served model's name (the directory under base_dir).
      version: positive int; None: the next free version.
      dtype: "float32" (default), "bfloat16" (encoder weights and compute in bfloat16, heads
        and outputs float32) or "int8" (the encoder's dense kernels and token embeddings stored
        in int8, compute float32: `inference.quantize_for_inference`); never chosen from the
        exporting machine.
      top_k: fill-mask predictions per [MASK].
      extra_allowed_ops: op names the audit should accept besides core TF and TF Serving's
        tf-text ops (only if your model server links them).
      examples: {input name: list of texts} for the warmup requests (defaults: short English).
      kernel_layout: the encoder blocks' dense kernel layout, for the serving CPU's speed
        only (`inference.uses_transposed_kernels`): "auto" (by dtype), "keras" or
        "transposed" (float32 on AVX2-only CPUs).
      calibration_examples: dtype "int8" only: {input name: list of texts}, the task's own
        examples (`int8_check.read_calibration_file`) on which the int8 copy is checked
        against float32; the result goes into the metadata ("int8_check") and the log.
      options: the task type's, None for its default (span QA: max_answer_tokens, the
        longest answer; doc_stride and max_windows, how a long context is cut; default:
        task.json's "decoding", as the run that trained it answered).

    Returns the version directory. Raises `op_audit.OpAuditError` (nothing is left behind)
    if the graph has ops that stock TF Serving lacks; FileExistsError for a taken version.
    """
    check_export_base(base_dir, model_name)
    model_dir = os.path.join(os.fspath(base_dir), model_name)
    version = next_version(model_dir) if version is None else int(version)
    if version < 1:
        raise ValueError(f"version must be a positive integer, got {version}.")
    final = os.path.join(model_dir, str(version))
    if tf.io.gfile.exists(final):
        raise FileExistsError(f"Version directory {final} already exists; choose another version.")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}.")
    transposed = uses_transposed_kernels(dtype, kernel_layout)  # a bad name fails here
    if calibration_examples is not None and dtype != "int8":
        raise InputError(f"{int8_check.FLAG} checks an int8 export; this one is {dtype}.")
    functions = serving_functions(model, tokenizer, info, dtype, top_k, kernel_layout,
                                  **options)
    fns = _signature_functions(functions)
    signatures = {name: fn.get_concrete_function() for name, fn in fns.items()}
    metadata = dict(
        task=info["task"], labels=functions.labels, seq_length=functions.seq_length,
        lower_case=bool(tokenizer.lower_case), text_fields=list(functions.text_fields),
        vocab_size=len(tokenizer.vocab), dtype=dtype,
        kernel_layout="transposed" if transposed else "keras", model_name=model_name,
        version=version,
        top_k=None, max_answer_tokens=None, signatures=describe_signatures(signatures),
    )
    metadata.update(functions.task.export_metadata(functions))
    if calibration_examples is not None:
        reference = serving_functions(model, tokenizer, info, "float32", top_k, "keras",
                                      **options)
        check = int8_check.compare_outputs(reference, functions, calibration_examples)
        logging.info("int8 against float32 on %d calibration examples: agreement %s, largest "
                     "difference %s", check["examples"], check["agreement"],
                     check["max_abs_difference"])
        metadata["int8_check"] = check
    tf.io.gfile.makedirs(model_dir)
    _remove_abandoned_exports(model_dir)
    tmp = os.path.join(model_dir, f".tmp-{version}-{os.getpid()}")
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
            tf.saved_model.save(root, tmp, signatures=signatures)
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


def export_task(task_dir, base_dir, model_name=None, **kwargs):
    """Exports a trained task directory (`bert_keras.tasks.task_io.save_task`); see
    `export_saved_model`. model_name defaults to the directory's name (its parent's for
    .../best, .../final)."""
    model, tokenizer, info = registry.load_task(task_dir)
    if model_name is None:
        model_name = default_model_name(task_dir)
    return export_saved_model(model, tokenizer, info, base_dir, model_name, **kwargs)


def run_export(config):
    """The export of an ExportConfig (tools/export.py): a task directory or a bare encoder."""
    source = config.task_dir or config.encoder_dir
    if not exists(source):  # a mistyped path: said as such, not as an unfinished run
        flag = "--task_dir" if config.task_dir else "--encoder_dir"
        raise InputError(f"{flag}={source} does not exist.")
    # Before loading the model: a bad --export_dir_base or --calibration_file fails at once.
    check_export_base(config.export_dir_base, config.model_name or default_model_name(source),
                      "--export_dir_base")
    if config.calibration_file:
        int8_check.read_calibration_file(config.calibration_file, None)
    if config.task_dir:
        model, tokenizer, info = registry.load_task(config.task_dir)
    else:
        model = BertEncoder.from_pretrained(config.encoder_dir)
        tokenizer = load_tokenizer(config.encoder_dir)
        model.check_tokenizer(tokenizer, config.encoder_dir)
        info = dict(task="encoder", labels=None, seq_length=min(128, model.max_sequence_length),
                    lower_case=tokenizer.lower_case, text_fields=["text"])
        if config.pooling:  # sentence embeddings over the encoder
            if config.truncate_dim and config.truncate_dim > model.encoder_config.hidden_size:
                raise InputError(f"--truncate_dim={config.truncate_dim} is more than the "
                                 f"hidden size {model.encoder_config.hidden_size} of "
                                 f"{config.encoder_dir}.")
            model = BertEmbedder(model, pooling=config.pooling, normalize=config.normalize,
                                 truncate_dim=config.truncate_dim)
            info = dict(info, task=task_of_model(model).name)
    if config.seq_length:
        info = dict(info, seq_length=config.seq_length)
    if config.pairs:
        if not get_task(info["task"]).serves_pairs:
            raise InputError(f"--pairs: {source} is a {info['task']} model, whose export does "
                             "not take text pairs.")
        info = dict(info, text_fields=["text_a", "text_b"])
    calibration = None
    if config.calibration_file:
        calibration = int8_check.read_calibration_file(config.calibration_file,
                                                       info["text_fields"])
    return export_saved_model(model, tokenizer, info, config.export_dir_base,
                              config.model_name or default_model_name(source),
                              version=config.version, dtype=config.dtype, top_k=config.top_k,
                              extra_allowed_ops=config.allow_ops,
                              kernel_layout=config.kernel_layout,
                              calibration_examples=calibration,
                              max_answer_tokens=config.max_answer_tokens,
                              doc_stride=config.doc_stride, max_windows=config.max_windows,
                              max_pairs=config.max_pairs)


def default_model_name(path):
    path = os.fspath(path)
    parts = (os.path.normpath(os.path.abspath(path)).split(os.sep) if is_local(path)
             else path.rstrip("/").split("/"))
    name = parts[-1]
    if name in ("best", "final", "encoder", "export") and len(parts) > 1:
        name = parts[-2]
    return name


def read_metadata(export_dir):
    """The metadata asset of an export (task, labels, seq_length, signatures, ...)."""
    with tf.io.gfile.GFile(os.path.join(export_dir, "assets", METADATA_FILE)) as f:
        return json.load(f)
