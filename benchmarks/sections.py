"""The sections of benchmarks/run.py: the worker functions by name, and running the sections.

The parent runs the chosen sections (`run_sections`); each measurement is a subprocess of
benchmarks/run.py with --worker and a spec that names its function in `WORKERS`. Importing
the section modules registers their hooks (runner.SECTION_HOOKS).
"""

import tempfile

from benchmarks import (
    deberta,
    encoder,
    export,
    flops,
    int8,
    modernbert,
    optimizer,
    pipeline,
    tokenizing,
    training,
)
from benchmarks.runner import SECTION_HOOKS

SECTIONS = ("peak", "encoder", "pretrain", "finetune", "data", "export", "int8", "modernbert",
            "deberta")

# The worker functions, by the name a spec gives (--worker runs one in this process).
WORKERS = {
    "peak": flops.run_peak,
    "bert_keras_train": training.run_bert_keras_train,
    "keras_hub_train": training.run_keras_hub_train,
    "huggingface_train": training.run_huggingface_train,
    "data": pipeline.run_data_pipeline,
    "keras_hub_data": pipeline.run_keras_hub_data,
    "bert_keras_export": export.run_bert_keras_export,
    "saved_model_serving": export.run_saved_model_serving,
    "huggingface_serving": export.run_huggingface_serving,
    "bert_keras_sized_export": int8.run_bert_keras_sized_export,
    "huggingface_int8_serving": int8.run_huggingface_int8_serving,
    "bert_keras_encoder": encoder.run_bert_keras_encoder,
    "keras_hub_encoder": encoder.run_keras_hub_encoder,
    "huggingface_encoder": encoder.run_huggingface_encoder,
    "tf_optimizer": optimizer.run_tf_optimizer,  # python -m benchmarks.optimizer
    "torch_optimizer": optimizer.run_torch_optimizer,
    "bert_keras_modernbert": modernbert.run_bert_keras_modernbert,
    "huggingface_modernbert": modernbert.run_huggingface_modernbert,
    "bert_keras_deberta": deberta.run_bert_keras_deberta,
    "huggingface_deberta": deberta.run_huggingface_deberta,
    "bert_keras_deberta_export": deberta.run_bert_keras_deberta_export,
    "huggingface_deberta_serving": deberta.run_huggingface_deberta_serving,
    "tokenizer": tokenizing.run_tokenizer,  # python -m benchmarks.tokenizing
}


def missing(section):
    """Why `section` cannot run, or None if it can."""
    if section not in SECTIONS:
        return f"unknown section {section!r}; choose from {SECTIONS}."
    if section not in ("peak", "encoder") and section not in SECTION_HOOKS:
        return f"{section!r} has no benchmark yet."
    return None


def run_sections(sections, presets, seconds):
    """The measured rows of `sections` (each system in its own subprocesses)."""
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for section in sections:
            if section == "peak":
                rows += flops.peak_rows(seconds)
            elif section == "encoder":
                rows += encoder.encoder_rows(presets, seconds, workdir)
            else:
                rows += SECTION_HOOKS[section](presets, seconds, workdir)
    return rows
