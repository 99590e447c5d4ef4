"""ExportConfig: every option of an export (the flags of tools/export.py).

>>> ExportConfig(task_dir="runs/paraphrase/best").seq_length is None
True
>>> ExportConfig(task_dir="a", encoder_dir="b")
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: Give exactly one of --task_dir or --encoder_dir.
"""

import dataclasses

from bert_keras.configs import Config, check, option
from bert_keras.models.inference import KERNEL_LAYOUTS

# No "auto": an export answers the same whatever machine made it (bfloat16 is an opt-in).
DTYPES = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class ExportConfig(Config):
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
                        "float32).", choices=DTYPES)
    seq_length: int = option(None, "Maximum tokens per request row; default: task.json's "
                             "seq_length (128 for --encoder_dir and transformers checkpoints, "
                             "or the position table where shorter); refused beyond the "
                             "position table.")
    pairs: bool = option(False, "Serve a classifier of text pairs (inputs text_a, text_b): for "
                         "a fine-tuned transformers *ForSequenceClassification checkpoint, "
                         "which does not say; a task directory says it in task.json.")
    top_k: int = option(5, "Fill-mask predictions per [MASK] (pretraining models).")
    max_answer_tokens: int = option(None, "span_qa: longest answer span in tokens; default: "
                                    "the run's --max_answer_length (task.json), else 30.")
    doc_stride: int = option(None, "span_qa: tokens between the starts of two windows of a "
                             "long context; default: the run's --doc_stride (task.json), "
                             "else 128.")
    max_windows: int = option(64, "span_qa: most windows of seq_length tokens one context may "
                              "take; a request with a longer context is refused "
                              "(InvalidArgument).")
    allow_ops: tuple = option((), "Extra op names the audit accepts (only if your model server "
                              "links them).")
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
        for name in ("top_k", "max_answer_tokens", "doc_stride", "max_windows"):
            value = getattr(self, name)
            check(value is None or value >= 1, f"--{name} must be positive, got {value}.")
        check(self.dtype in DTYPES, f"--dtype={self.dtype!r} is not one of {DTYPES}.")
        check(self.kernel_layout in KERNEL_LAYOUTS,
              f"--kernel_layout={self.kernel_layout!r} is not one of {KERNEL_LAYOUTS}.")
