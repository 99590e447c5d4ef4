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

This module is the user's entry (`export_model`, `export_task`, `export_saved_model`);
`export_run.run_export` is the tool's (an ExportConfig), `saved_model` the writer both use,
`versions` the naming of BASE/NAME/VERSION, each task type its outputs' docs
(`Task.output_docs`).

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

from bert_keras.errors import InputError
from bert_keras.serving import export_options, saved_model
from bert_keras.serving.export_run import run_export
from bert_keras.serving.saved_model import (  # noqa: F401  the writer's public names, here too
    METADATA_FILE,
    describe_signatures,
    read_metadata,
    serving_functions,
)
from bert_keras.serving.versions import (  # noqa: F401  the naming's public names, here too
    check_export_base,
    default_model_name,
    next_version,
)
from bert_keras.tasks import registry, sources
from bert_keras.tasks.registry import task_of_model

__all__ = ["export_model", "export_task", "export_saved_model", "run_export", "read_metadata",
           "next_version", "default_model_name", "check_export_base", "serving_functions",
           "describe_signatures", "METADATA_FILE"]


def export_model(model, export_dir_base, model_name, labels=None, seq_length=None, **kwargs):
    """Exports a task model built in user code (`BertClassifier.from_pretrained(...)`, then
    `fit`) as `tools/export.py` does: BASE/MODEL_NAME/VERSION/, warmed up and audited.

    The tokenizer is the model's preprocessor's, the task type its class's
    (`registry.task_of_model`), the label names `labels` or the model's, the inputs those it
    was fit on (`text`, or `text_a` + `text_b`); `seq_length` defaults to the
    preprocessor's. `kwargs`: version, dtype, ... and the task type's export options (top_k,
    ...) of `export_saved_model`. Returns the version directory.

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
                              task=task, **kwargs)


def export_saved_model(model, tokenizer, info, base_dir, model_name, version=None,
                       dtype="float32", extra_allowed_ops=(), examples=None,
                       kernel_layout="auto", calibration_examples=None, task=None, **options):
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
      extra_allowed_ops: op names the audit should accept besides core TF and TF Serving's
        tf-text ops (only if your model server links them).
      examples: {input name: list of texts} for the warmup requests (defaults: short English).
      kernel_layout: the encoder blocks' dense kernel layout, for the serving CPU's speed
        only (`inference.uses_transposed_kernels`): "auto" (by dtype), "keras" or
        "transposed" (float32 on AVX2-only CPUs).
      calibration_examples: dtype "int8" only: {input name: list of texts}, the task's own
        examples (`int8_check.read_calibration_file`) on which the int8 copy is checked
        against float32; the result goes into the metadata ("int8_check") and the log.
      task: its Task object (default: info's task, by name).
      options: the task type's export options (the fields of its `export_options_class`,
        flags of tools/export.py), None for their default: span QA's max_answer_length (the
        longest answer), doc_stride and max_windows (how a long context is cut; default:
        task.json's "decoding", as the run that trained it answered), tagging's
        max_windows, reranking's max_pairs, fill-mask's top_k; another type's refused
        (`export_options.options_of`).

    Returns the version directory. Raises `op_audit.OpAuditError` (nothing is left behind)
    if the graph has ops that stock TF Serving lacks; FileExistsError for a taken version.
    """
    task = task if task is not None else registry.get_task(info["task"])
    options = export_options.options_of(task, options)
    check_export_base(base_dir, model_name)
    model, info, task, options = export_options.served(task, model, info, options)
    return saved_model.write_saved_model(
        model, tokenizer, info, base_dir, model_name, version=version, dtype=dtype,
        extra_allowed_ops=extra_allowed_ops, examples=examples, kernel_layout=kernel_layout,
        calibration_examples=calibration_examples, task=task, options=options)


def export_task(task_dir, base_dir, model_name=None, **kwargs):
    """Exports a trained task directory (`bert_keras.tasks.task_io.save_task`); see
    `export_saved_model`. model_name defaults to the directory's name (its parent's for
    .../best, .../final)."""
    source = registry.describe(task_dir)
    model, info = sources.load(source)
    if model_name is None:
        model_name = default_model_name(task_dir)
    return export_saved_model(model, source.tokenizer, info, base_dir, model_name,
                              task=source.task, **kwargs)
