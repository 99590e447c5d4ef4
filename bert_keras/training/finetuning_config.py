"""FinetuneConfig: a fine-tuning run (the flags of tools/finetune.py), made of its components'
configs: the data (`data.finetuning.config.FinetuneData`), the optimizer
(`optimization.config.OptimizerConfig`), the runtime (`runtime_config.RuntimeConfig`), task
distillation (`TaskDistillationConfig`) and the options of the --task type
(`Task.options_class`, e.g. `tasks.span_qa.options.SpanQAOptions`).

>>> config = FinetuneConfig.from_options(task="classification", init_checkpoint=".",
...                                      output_dir="/tmp/x", learning_rate=2e-5)
>>> config.optimizer.learning_rate, config.main_metric_for(glue_task=None)
(2e-05, 'accuracy')
>>> FinetuneConfig.from_options(task="classification", init_checkpoint=".",
...                             output_dir="/tmp/x", max_seq_length=0)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --max_seq_length must be >= 1, got 0.
>>> FinetuneConfig.from_options(task="tagging", init_checkpoint=".", output_dir="/tmp/x",
...                             doc_stride=64)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --doc_stride is an option of --task=span_qa, not of --task=tagging.
"""

import dataclasses

import tensorflow as tf

from bert_keras.configs import Config, ConfigError, check, chosen_section, option, section
from bert_keras.data.finetuning.config import FILE_OPTIONS, FinetuneData
from bert_keras.data.finetuning.tfds import tfds_task_type
from bert_keras.optimization.config import OptimizerConfig
from bert_keras.tasks.registry import FINETUNING_TASKS, TASK_TYPES, get_task
from bert_keras.training.runtime_config import RuntimeConfig
from bert_keras.training.task_distillation_config import TaskDistillationConfig

GLUE_MAIN_METRICS = {"cola": "mcc", "mrpc": "f1", "qqp": "f1", "stsb": "pearson"}
# --checkpoint_every=0: seconds of training between the checkpoints inside an epoch.
TIMED_CHECKPOINT_SECONDS = 600


def _task_options():
    """{task name: its options class or None} of the fine-tuning task types."""
    return {name: TASK_TYPES[name].options_class for name in FINETUNING_TASKS}


@dataclasses.dataclass(frozen=True)
class FinetuneConfig(Config):
    """A fine-tuning run; see tools/finetune.py for how the options combine."""

    task: str = option(None, "The kind of task (picks head, loss and metrics).",
                       choices=FINETUNING_TASKS)
    init_checkpoint: str = option(None, "Encoder checkpoint dir: ours, Hugging Face or Google TF1.")
    output_dir: str = option(None, "Where metrics, predictions and best/ go.")
    max_seq_length: int = option(128, "Maximum tokens per sequence (batches pad to their longest).")
    train_batch_size: int = option(32, "Training batch size.")
    eval_batch_size: int = option(64, "Evaluation / prediction batch size.")
    num_train_epochs: int = option(3, "Training epochs.")
    warmup_proportion: float = option(0.1, "Fraction of the steps with linear warmup.")
    dropout: float = option(0.1, "Dropout of the task head.")
    main_metric: str = option(None, "Eval metric that picks the best epoch (higher is better); "
                              "default: accuracy / micro_f1 / pearson / entity f1 / squad f1 by "
                              "task, GLUE's for glue/*.")
    seed: int = option(42, "Random seed (weights of the head, dropout, shuffling).")
    checkpoint_every: int = option(
        0, "Steps between the checkpoints written inside an epoch, from which a rerun after a "
        "crash or kill resumes mid-epoch (each epoch also ends with one); 0: one every "
        f"{TIMED_CHECKPOINT_SECONDS // 60} minutes of training. Changes no result, so a resumed "
        "run may pass another value.")
    early_stopping_patience: int = option(
        0, "Stop after this many epochs in a row without a better --main_metric on the eval "
        "data (best/ keeps the best epoch); 0: train all --num_train_epochs.")
    verbose: int = option(2, "Progress: 0 silent, 1 a progress bar, 2 a line per logging "
                          "window and per epoch.")
    data: FinetuneData = section(FinetuneData)
    optimizer: OptimizerConfig = section(OptimizerConfig, learning_rate=5e-5)
    runtime: RuntimeConfig = section(RuntimeConfig)
    distillation: TaskDistillationConfig = section(TaskDistillationConfig)
    task_options: Config = chosen_section("task", _task_options)

    @property
    def task_type(self):
        """The Task object of --task: what the run hands down, rather than the name."""
        return get_task(self.task)

    def validate(self):
        check(self.task is not None, f"--task is required: one of {FINETUNING_TASKS}.")
        check(self.task in FINETUNING_TASKS,
              f"--task={self.task!r} is not one of {FINETUNING_TASKS}.")
        check(bool(self.init_checkpoint), "--init_checkpoint is required (a checkpoint directory).")
        check(tf.io.gfile.isdir(self.init_checkpoint),
              f"--init_checkpoint={self.init_checkpoint!r} is not a directory.")
        check(bool(self.output_dir), "--output_dir is required.")
        for name in ("max_seq_length", "train_batch_size", "eval_batch_size", "num_train_epochs"):
            value = getattr(self, name)
            check(value >= 1, f"--{name} must be >= 1, got {value}.")
        # [CLS] text [SEP] (+ text_b [SEP]) with at least one token of each text; the export
        # refuses shorter models too.
        shortest = 5 if self.data.has_pairs else 3
        check(self.max_seq_length >= shortest,
              f"--max_seq_length={self.max_seq_length} leaves no room for the text: at least "
              f"{shortest} ([CLS], [SEP]{', text b and its [SEP]' if shortest == 5 else ''}).")
        check(self.checkpoint_every >= 0,
              f"--checkpoint_every must be >= 0 (0: every {TIMED_CHECKPOINT_SECONDS // 60} "
              f"minutes), got {self.checkpoint_every}.")
        check(0.0 <= self.warmup_proportion <= 1.0,
              f"--warmup_proportion must be in [0, 1], got {self.warmup_proportion}.")
        check(self.early_stopping_patience >= 0, "--early_stopping_patience must be >= 0, got "
              f"{self.early_stopping_patience}.")
        task = self.task_type
        if self.distillation.teacher_dir:
            check(task.soft_targets is not None,
                  f"--task={self.task} cannot be distilled (--teacher_dir): only "
                  f"{[t for t in FINETUNING_TASKS if get_task(t).soft_targets]} can.")
        if self.data.tfds.tfds_name:
            try:
                expected = tfds_task_type(self.data.tfds.tfds_name)
            except ValueError as e:
                raise ConfigError(str(e)) from None
            check(expected is None or self.task == expected,
                  f"--tfds_name={self.data.tfds.tfds_name} is a {expected} task, not "
                  f"--task={self.task}.")
        for name in FILE_OPTIONS:
            for path in self.data.files(name):
                fmt = self.file_format(path)
                check(fmt in task.file_formats,
                      f"--task={self.task} reads {task.file_formats}, but {path} is {fmt!r}.")
        task.check_config(self)

    def validate_data_source(self, has_examples=False):
        """Exactly one data source: Python examples, --train_file or --tfds_name."""
        sources = {"train_examples=": has_examples, "--train_file": bool(self.data.train_file),
                   "--tfds_name": bool(self.data.tfds.tfds_name)}
        if not any(sources.values()):
            raise ConfigError("--train_file (or --tfds_name) is required.")
        given = " and ".join(name for name, value in sources.items() if value)
        check(sum(sources.values()) == 1, "give exactly one of --train_file, --tfds_name and "
              f"(in Python) train_examples=, got {given}.")

    def file_format(self, path):
        """--format, or the --task's format of the file's extension."""
        return (self.data.format if self.data.format != "auto"
                else self.task_type.file_format_of(path))

    def main_metric_for(self, glue_task):
        if self.main_metric:
            return self.main_metric
        return GLUE_MAIN_METRICS.get((glue_task or "")[5:], self.task_type.main_metric)
