"""ExportConfig: every option of an export (the flags of tools/export.py): its own, and
every task type's export options (`export_options.TaskExportOptions`: the fields of each
type's `export_options_class`), of which the exported source's type takes its own
(`export_options.options_of`) once the source is described.

>>> ExportConfig(task_dir="runs/paraphrase/best").seq_length is None
True
>>> ExportConfig(task_dir="a", encoder_dir="b")
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: Give exactly one of --task_dir or --encoder_dir.
>>> ExportConfig(encoder_dir="b", pooling="sum")
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --pooling='sum' is not one of ('mean', 'cls', 'max').
"""

import dataclasses

from bert_keras.configs import check, option
from bert_keras.models.encoder.inference import KERNEL_LAYOUTS
from bert_keras.serving.export_options import TaskExportOptions

# No "auto": an export answers the same whatever machine made it (bfloat16 is an opt-in).
EXPORT_DTYPES = ("float32", "bfloat16", "int8")


@dataclasses.dataclass(frozen=True)
class ExportConfig(TaskExportOptions):
    """An export of a task directory or a bare encoder to EXPORT_DIR_BASE/NAME/VERSION."""

    task_dir: str = option(None, "Trained task directory (task.json, model.keras, vocab.txt).")
    encoder_dir: str = option(None, "Or: an encoder checkpoint directory (bare encoder export).")
    model_name: str = option(None, "Served model name; default: the task directory's name (its "
                             "parent's for .../best, .../final, .../encoder).")
    export_dir_base: str = option("saved_models", "Where NAME/VERSION/ is written.")
    version: int = option(None, "Version number; default: the next free integer.")
    dtype: str = option("float32", "Dtype of the export: float32 (answers as the checkpoint, "
                        "on any machine), or bfloat16 (opt-in: encoder weights and compute in "
                        "bfloat16, heads and outputs float32; faster where the serving CPU "
                        "has AMX or AVX512-BF16; emulated elsewhere, 2-3.5x slower than "
                        "float32), or int8 (the encoder's dense kernels and token embeddings "
                        "stored in int8, per channel: ~27% of float32's size, compute float32; "
                        "for memory, not speed: docs/serving.md).", choices=EXPORT_DTYPES)
    seq_length: int = option(None, "Maximum tokens per request row; default: task.json's "
                             "seq_length (128 for --encoder_dir and transformers checkpoints, "
                             "or the position table where shorter); refused beyond the "
                             "position table.")
    allow_ops: tuple = option((), "Extra op names the audit accepts (only if your model server "
                              "links them).")
    calibration_file: str = option(None, "With --dtype=int8: a few hundred examples of the "
                                   "task's own data, one per line, fields tab-separated in the "
                                   "order of the export's inputs; the int8 model's answers on "
                                   "them are compared with float32's (the metadata's "
                                   "int8_check).")
    kernel_layout: str = option("auto", "Layout of the encoder's dense kernels, for serving "
                                "speed only (same answers): auto (transposed for bfloat16, "
                                "Keras' for float32: the faster on AVX-512 servers), keras, or "
                                "transposed (faster for float32 on AVX2-only CPUs whose "
                                "server cannot set TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1).",
                                choices=KERNEL_LAYOUTS, advanced=True)

    def validate(self):
        check(bool(self.task_dir) != bool(self.encoder_dir),
              "Give exactly one of --task_dir or --encoder_dir.")
        check(self.version is None or self.version >= 1,
              f"--version must be a positive integer, got {self.version}.")
        check(self.seq_length is None or self.seq_length >= 3,
              f"--seq_length must be at least 3, got {self.seq_length}.")
        check(self.dtype in EXPORT_DTYPES, f"--dtype={self.dtype!r} is not one of {EXPORT_DTYPES}.")
        check(not self.calibration_file or self.dtype == "int8",
              f"--calibration_file checks an int8 export: give it with --dtype=int8, not "
              f"--dtype={self.dtype}.")
        check(self.kernel_layout in KERNEL_LAYOUTS,
              f"--kernel_layout={self.kernel_layout!r} is not one of {KERNEL_LAYOUTS}.")
        super().validate()  # each task type's options, checked by its class
