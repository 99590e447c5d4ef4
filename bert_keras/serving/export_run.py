"""The export of an `ExportConfig` (what tools/export.py runs): its source described once
(`registry.describe`: a task directory or a fine-tuned transformers checkpoint;
`registry.describe_encoder`: a pretrained checkpoint, served bare or as an embedder), the
flags that change what is served applied, then the SavedModel written.

Every check that needs no model comes first (the source exists, the export base can hold
NAME/VERSION, the calibration file is text), so a mistyped flag fails in one line at once;
each file is read once.

>>> path = run_export(ExportConfig(task_dir="runs/qa/best"))  # doctest: +SKIP
"""

from bert_keras.errors import InputError
from bert_keras.files import exists
from bert_keras.serving import int8_check, saved_model, versions
from bert_keras.tasks import registry, sources
from bert_keras.tasks.embedding.model import BertEmbedder
from bert_keras.tasks.registry import task_of_model


def run_export(config):
    """Exports what `config` (an ExportConfig) names; returns the version directory."""
    path = config.task_dir or config.encoder_dir
    if not exists(path):  # a mistyped path: said as such, not as an unfinished run
        flag = "--task_dir" if config.task_dir else "--encoder_dir"
        raise InputError(f"{flag}={path} does not exist.")
    model_name = config.model_name or versions.default_model_name(path)
    versions.check_export_base(config.export_dir_base, model_name, "--export_dir_base")
    calibration = (int8_check.read_calibration_rows(config.calibration_file)
                   if config.calibration_file else None)
    source = (registry.describe(path) if config.task_dir else registry.describe_encoder(path))
    model, info = sources.load(source)
    task = source.task
    if config.pooling:  # sentence embeddings over the encoder
        hidden_size = model.encoder_config.hidden_size
        if config.truncate_dim and config.truncate_dim > hidden_size:
            raise InputError(f"--truncate_dim={config.truncate_dim} is more than the hidden "
                             f"size {hidden_size} of {config.encoder_dir}.")
        model = BertEmbedder(model, pooling=config.pooling, normalize=config.normalize,
                             truncate_dim=config.truncate_dim)
        task = task_of_model(model)
        info = dict(info, task=task.name)
    if config.seq_length:
        info = dict(info, seq_length=config.seq_length)
    if config.pairs:
        if not task.serves_pairs:
            raise InputError(f"--pairs: {path} is a {task.name} model, whose export does not "
                             "take text pairs.")
        info = dict(info, text_fields=["text_a", "text_b"])
    examples = None
    if calibration is not None:
        examples = int8_check.calibration_examples(config.calibration_file, calibration,
                                                   info["text_fields"])
    return saved_model.write_saved_model(
        model, source.tokenizer, info, config.export_dir_base, model_name,
        version=config.version, dtype=config.dtype, top_k=config.top_k,
        extra_allowed_ops=config.allow_ops, kernel_layout=config.kernel_layout,
        calibration_examples=examples, task=task, max_answer_length=config.max_answer_length,
        doc_stride=config.doc_stride, max_windows=config.max_windows,
        max_pairs=config.max_pairs)
