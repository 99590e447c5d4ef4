"""The export of an `ExportConfig` (what tools/export.py runs): its source described once
(`registry.describe`: a task directory or a fine-tuned transformers checkpoint;
`registry.describe_encoder`: a pretrained checkpoint, served bare or as an embedder), its task
type's export options taken from the config (`export_options.options_of`: another type's
refused) and applied (`export_options.served`), then the SavedModel written.

Every check that needs no model comes first (the source exists, the export base can hold
NAME/VERSION, the calibration file is text, the options are the source's type's), so a
mistyped flag fails in one line at once; each file is read once.

>>> path = run_export(ExportConfig(task_dir="runs/qa/best"))  # doctest: +SKIP
"""

from bert_keras.errors import InputError
from bert_keras.files import exists
from bert_keras.serving import export_options, int8_check, saved_model, versions
from bert_keras.tasks import registry, sources


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
    options = export_options.options_of(source.task, config.task_options(), path)
    model, info = sources.load(source)
    model, info, task, options = export_options.served(source.task, model, info, options, path)
    if config.seq_length:
        info = dict(info, seq_length=config.seq_length)
    examples = None
    if calibration is not None:
        examples = int8_check.calibration_examples(config.calibration_file, calibration,
                                                   info["text_fields"])
    return saved_model.write_saved_model(
        model, source.tokenizer, info, config.export_dir_base, model_name,
        version=config.version, dtype=config.dtype, extra_allowed_ops=config.allow_ops,
        kernel_layout=config.kernel_layout, calibration_examples=examples, task=task,
        options=options)
