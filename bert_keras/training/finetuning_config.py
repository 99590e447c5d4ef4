"""FinetuneConfig: every option of a fine-tuning run (the flags of tools/finetune.py).

>>> config = FinetuneConfig(task="classification", init_checkpoint=".", output_dir="/tmp/x")
>>> config.main_metric_for(glue_task=None)
'accuracy'
>>> FinetuneConfig(task="classification", init_checkpoint=".", output_dir="/tmp/x",
...                max_seq_length=0)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --max_seq_length must be >= 1, got 0.
"""

import dataclasses
import os

from bert_keras.configs import Config, ConfigError, check, option
from bert_keras.data.finetuning.tfds import tfds_task_type
from bert_keras.files import expand_patterns
from bert_keras.tasks.registry import FINETUNING_TASKS, get_task
from bert_keras.training.precision import AUTO, DTYPES

FORMATS = ("auto", "tsv", "csv", "jsonl", "squad_json", "squad_jsonl", "conll")
GLUE_MAIN_METRICS = {"cola": "mcc", "mrpc": "f1", "qqp": "f1", "stsb": "pearson"}
# --checkpoint_every=0: seconds of training between the checkpoints inside an epoch.
TIMED_CHECKPOINT_SECONDS = 600


def infer_format(path, task):
    """File format from the extension (".gz" stripped) and the task; ConfigError if unknown."""
    name = path.lower().removesuffix(".gz")
    ext = os.path.splitext(name)[1]
    formats = {".tsv": "tsv", ".csv": "csv", ".json": "squad_json",
               ".jsonl": "squad_jsonl" if task == "span_qa" else "jsonl"}
    if ext in formats:
        return formats[ext]
    if ext in (".conll", ".iob", ".bio", ".txt") and task == "tagging":
        return "conll"
    raise ConfigError(f"cannot infer the format of {path!r} (extension {ext!r}); pass --format.")


def _column(value):
    """A TSV/CSV column flag: an index ("1", "-1") or a header name."""
    if value is None:
        return None
    return int(value) if str(value).lstrip("+-").isdigit() else value


@dataclasses.dataclass(frozen=True)
class FinetuneConfig(Config):
    """A fine-tuning run; see tools/finetune.py for how the options combine."""

    task: str = option(None, "The kind of task (picks head, loss and metrics).",
                       choices=FINETUNING_TASKS)
    train_file: str = option(None, "Training data: a file or glob (comma-separated list ok).")
    eval_file: str = option(None, "Evaluation data, scored after every epoch.")
    test_file: str = option(None, "Data to predict with the best model (scored if labeled).")
    format: str = option("auto", "File format; auto: from the extension (.gz stripped).",
                         choices=FORMATS)
    header: bool = option(False, "TSV/CSV: the first row of each file names the columns.")
    text_a_column: str = option("1", "TSV/CSV column (index or header name) of the text.")
    text_b_column: str = option(None, "TSV/CSV column of the second text of a pair.")
    label_column: str = option("0", "TSV/CSV column of the label.")
    text_a_field: str = option("text", "JSONL field (or TFDS feature) of the text.")
    text_b_field: str = option(None, "JSONL field (or TFDS feature) of the second text of a "
                               "pair.")
    label_field: str = option("label", "JSONL field (or TFDS feature) of the label.")
    label_delimiter: str = option(",", "multi_label: separator of the labels of a row.")
    test_unlabeled: bool = option(False, "--test_file has no labels (classification, tagging).")
    tfds_name: str = option(None, "A TFDS dataset instead of files: glue/mrpc, squad/v1.1, "
                            "conll2003, or your own (texts and label found from its features, "
                            "or named by --text_a_field, --text_b_field, --label_field).")
    tfds_data_dir: str = option(None, "TFDS data dir holding the prepared --tfds_name (default: "
                                "$TFDS_DATA_DIR, else ~/tensorflow_datasets).")
    tfds_download: bool = option(False, "Download and prepare --tfds_name into --tfds_data_dir "
                                 "if it is not there (needs the network); without it an "
                                 "unprepared dataset is refused at once.")
    tfds_train_split: str = option("train", "TFDS training split.")
    tfds_eval_split: str = option(None, "TFDS eval split (default: validation, "
                                  "validation_matched for mnli).")
    tfds_test_split: str = option(None, "TFDS split to predict with the best model.")
    init_checkpoint: str = option(None, "Encoder checkpoint dir: ours, Hugging Face or Google TF1.")
    teacher_dir: str = option(
        None, "Task distillation: a fine-tuned teacher of this --task (a tools/finetune.py "
        "output dir or its best/) whose outputs on the training data the model learns too; "
        "same vocabulary, labels among the teacher's.")
    distill_temperature: float = option(
        2.0, "--teacher_dir: softmax temperature T of the soft targets (the KL is scaled by "
        "T^2; regression uses the squared error to the teacher's value, no T).")
    distill_alpha: float = option(
        0.5, "--teacher_dir: weight of the soft-target loss; 1 - alpha weighs the task's own "
        "loss on the labels (0.5 and T=2: Hugging Face's DistilBERT task distillation).")
    output_dir: str = option(None, "Where metrics, predictions and best/ go.")
    max_seq_length: int = option(128, "Maximum tokens per sequence (batches pad to their longest).")
    doc_stride: int = option(128, "span_qa: tokens between the starts of two context windows.")
    max_query_length: int = option(64, "span_qa: question tokens kept.")
    max_answer_length: int = option(30, "span_qa: longest answer in tokens.")
    n_best_size: int = option(20, "span_qa: candidate answers kept per question.")
    version_2_with_negative: bool = option(
        None, "span_qa: questions may be unanswerable (SQuAD 2.0); default: whether the "
        "training data has such questions.")
    null_score_diff_threshold: float = option(0.0, "span_qa v2: predict '' when null score - "
                                              "best span score exceeds this.")
    multi_label_threshold: float = option(0.5, "multi_label: probability to predict a label.")
    train_batch_size: int = option(32, "Training batch size.")
    eval_batch_size: int = option(64, "Evaluation / prediction batch size.")
    learning_rate: float = option(5e-5, "Peak learning rate (after warmup).")
    num_train_epochs: int = option(3, "Training epochs.")
    warmup_proportion: float = option(0.1, "Fraction of the steps with linear warmup.")
    weight_decay: float = option(0.01, "AdamW weight decay (not on LayerNorm and biases).")
    layerwise_lr_decay: float = option(None, "Layer-wise learning-rate decay (e.g. 0.9).")
    dropout: float = option(0.1, "Dropout of the task head.")
    max_train_examples: int = option(None, "Use only the first N training examples.")
    max_eval_examples: int = option(None, "Use only the first N eval (and test) examples.")
    main_metric: str = option(None, "Eval metric that picks the best epoch (higher is better); "
                              "default: accuracy / micro_f1 / pearson / entity f1 / squad f1 by "
                              "task, GLUE's for glue/*.")
    dtype: str = option(AUTO, "Compute dtype policy; auto: mixed_bfloat16 where the CPU has AMX "
                        "or AVX512-BF16 (or the GPU bfloat16), float32 elsewhere.",
                        choices=(AUTO,) + DTYPES)
    distribution_strategy: str = option("one_device", "tf.distribute strategy "
                                        "(bert_keras.training.strategy).",
                                        choices=("one_device", "mirrored"))
    jit_compile: bool = option(False, "XLA-compile the train step (slower in bf16 on CPU).")
    seed: int = option(42, "Random seed (weights of the head, dropout, shuffling).")
    checkpoint_every: int = option(
        0, "Steps between the checkpoints written inside an epoch, from which a rerun after a "
        "crash or kill resumes mid-epoch (each epoch also ends with one); 0: one every "
        f"{TIMED_CHECKPOINT_SECONDS // 60} minutes of training. Changes no result, so a resumed "
        "run may pass another value.")
    verbose: int = option(2, "Keras fit verbosity: 0 silent, 1 progress bar, 2 one line per epoch.")

    def validate(self):
        check(self.task is not None, f"--task is required: one of {FINETUNING_TASKS}.")
        check(self.task in FINETUNING_TASKS,
              f"--task={self.task!r} is not one of {FINETUNING_TASKS}.")
        check(bool(self.init_checkpoint), "--init_checkpoint is required (a checkpoint directory).")
        check(os.path.isdir(self.init_checkpoint),
              f"--init_checkpoint={self.init_checkpoint!r} is not a directory.")
        check(bool(self.output_dir), "--output_dir is required.")
        check(self.format in FORMATS, f"--format={self.format!r} is not one of {FORMATS}.")
        check(self.dtype in (AUTO,) + DTYPES,
              f"--dtype={self.dtype!r} is not one of {(AUTO,) + DTYPES}.")
        for name in ("max_seq_length", "train_batch_size", "eval_batch_size", "num_train_epochs",
                     "doc_stride", "max_query_length"):
            value = getattr(self, name)
            check(value >= 1, f"--{name} must be >= 1, got {value}.")
        # [CLS] text [SEP] (+ text_b [SEP]) with at least one token of each text; the export
        # refuses shorter models too.
        shortest = 5 if (self.text_b_column or self.text_b_field) else 3
        check(self.max_seq_length >= shortest,
              f"--max_seq_length={self.max_seq_length} leaves no room for the text: at least "
              f"{shortest} ([CLS], [SEP]{', text b and its [SEP]' if shortest == 5 else ''}).")
        check(self.checkpoint_every >= 0,
              f"--checkpoint_every must be >= 0 (0: every {TIMED_CHECKPOINT_SECONDS // 60} "
              f"minutes), got {self.checkpoint_every}.")
        for name in ("max_train_examples", "max_eval_examples"):  # 0 would silently mean all
            value = getattr(self, name)
            check(value is None or value >= 1, f"--{name} must be >= 1 when given, got {value}.")
        check(self.task != "span_qa" or self.max_seq_length > self.max_query_length + 3,
              f"--max_seq_length={self.max_seq_length} leaves no room for the context after "
              f"--max_query_length={self.max_query_length}.")
        check(0.0 <= self.warmup_proportion <= 1.0,
              f"--warmup_proportion must be in [0, 1], got {self.warmup_proportion}.")
        if self.teacher_dir:
            check(get_task(self.task).soft_targets is not None,
                  f"--task={self.task} cannot be distilled (--teacher_dir): only "
                  f"{[t for t in FINETUNING_TASKS if get_task(t).soft_targets]} can.")
        check(self.distill_temperature > 0,
              f"--distill_temperature must be > 0, got {self.distill_temperature}.")
        check(0.0 <= self.distill_alpha <= 1.0,
              f"--distill_alpha must be in [0, 1], got {self.distill_alpha}.")
        files = [self.train_file, self.eval_file, self.test_file]
        given = " and ".join(f"--{name}" for name in ("train_file", "eval_file", "test_file")
                             if getattr(self, name))
        check(not (self.tfds_name and any(files)),
              "give either --tfds_name or --train_file/--eval_file/--test_file, not both: got "
              f"--tfds_name and {given} (an empty value unsets a flagfile's, e.g. --eval_file=).")
        if self.tfds_name:
            try:
                expected = tfds_task_type(self.tfds_name)
            except ValueError as e:
                raise ConfigError(str(e)) from None
            check(expected is None or self.task == expected,
                  f"--tfds_name={self.tfds_name} is a {expected} task, not --task={self.task}.")
        for name in ("train_file", "eval_file", "test_file"):
            for path in self.files(name):
                fmt = self.file_format(path)
                allowed = get_task(self.task).file_formats
                check(fmt in allowed, f"--task={self.task} reads {allowed}, but {path} is {fmt!r}.")

    def validate_data_source(self, has_examples=False):
        """Exactly one data source: Python examples, --train_file or --tfds_name."""
        sources = {"train_examples=": has_examples, "--train_file": bool(self.train_file),
                   "--tfds_name": bool(self.tfds_name)}
        if not any(sources.values()):
            raise ConfigError("--train_file (or --tfds_name) is required.")
        given = " and ".join(name for name, value in sources.items() if value)
        check(sum(sources.values()) == 1, "give exactly one of --train_file, --tfds_name and "
              f"(in Python) train_examples=, got {given}.")

    def files(self, name):
        """The files of --train_file / --eval_file / --test_file ([] when unset)."""
        pattern = getattr(self, name)
        if not pattern:
            return []
        try:
            return expand_patterns(pattern)
        except FileNotFoundError as e:
            raise ConfigError(f"--{name}={pattern!r}: {e}") from None

    def file_format(self, path):
        return self.format if self.format != "auto" else infer_format(path, self.task)

    def reader_options(self):
        """The column / field options of the TSV, CSV and JSONL readers."""
        return dict(header=self.header, text_a_column=_column(self.text_a_column),
                    text_b_column=_column(self.text_b_column),
                    label_column=_column(self.label_column), text_a_field=self.text_a_field,
                    text_b_field=self.text_b_field, label_field=self.label_field,
                    label_delimiter=self.label_delimiter)

    def glue_task(self):
        """"glue/mrpc" for --tfds_name=glue/mrpc(:version), else None."""
        if self.tfds_name and self.tfds_name.startswith("glue/"):
            return self.tfds_name.split(":")[0]
        return None

    def main_metric_for(self, glue_task):
        if self.main_metric:
            return self.main_metric
        return GLUE_MAIN_METRICS.get((glue_task or "")[5:], get_task(self.task).main_metric)
