r"""Fine-tunes a BERT checkpoint on a classification, regression, tagging or span-QA task.

Data: files (`--train_file`, `--eval_file`, `--test_file`; globs; gzip ok; format from the
extension or `--format`) or a TFDS task (`--tfds_name=glue/mrpc`, `squad/v1.1`,
`conll2003`). The encoder and tokenizer come from `--init_checkpoint`: our pretraining
output (runs/pretrain/encoder), a Hugging Face directory or a Google TF1 directory.

The fine-tuning itself is `bert_keras.finetuning.run_finetuning`; this tool defines the flags,
checks them and calls it. Each epoch trains on length-bucketed batches (padded to the longest
row of each batch), then evaluates on the eval data; the best epoch by `--main_metric` is kept.

OUTPUT_DIR/
  flags.json               the resolved flags
  metrics.json             per-epoch eval metrics, the best epoch's, test metrics, baselines
  eval_predictions.jsonl   the best epoch's predictions on the eval data (JSON lines)
  test_predictions.jsonl   the best model's predictions on --test_file
  best/                    task_io.save_task: model.keras, vocab.txt, task.json (labels) -> export

Example (2 minutes on 2 CPU cores):
  python tools/finetune.py --flagfile=flags/finetune_bible_paraphrase.flags \
      --init_checkpoint=runs/pretrain/encoder --output_dir=runs/paraphrase \
      --max_train_examples=2000 --num_train_epochs=1 --dtype=mixed_bfloat16
"""

import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags  # noqa: E402

from bert_keras.training import finetuning  # noqa: E402

TASKS = finetuning.TASKS

FLAGS = flags.FLAGS
_FLAGS_BEFORE = set(FLAGS)
flags.DEFINE_enum("task", None, TASKS, "The kind of task (picks head, loss and metrics).")
flags.DEFINE_string("train_file", None, "Training data: a file or glob (comma-separated list ok).")
flags.DEFINE_string("eval_file", None, "Evaluation data, scored after every epoch.")
flags.DEFINE_string("test_file", None, "Data to predict with the best model (scored if labeled).")
flags.DEFINE_enum("format", "auto", finetuning.FORMATS,
                  "File format; auto: from the extension (.gz stripped).")
flags.DEFINE_bool("header", False, "TSV/CSV: the first row of each file names the columns.")
flags.DEFINE_string("text_a_column", "1", "TSV/CSV column (index or header name) of the text.")
flags.DEFINE_string("text_b_column", None, "TSV/CSV column of the second text of a pair.")
flags.DEFINE_string("label_column", "0", "TSV/CSV column of the label.")
flags.DEFINE_string("text_a_field", "text", "JSONL field of the text.")
flags.DEFINE_string("text_b_field", None, "JSONL field of the second text of a pair.")
flags.DEFINE_string("label_field", "label", "JSONL field of the label.")
flags.DEFINE_string("label_delimiter", ",", "multi_label: separator of the labels of a row.")
flags.DEFINE_bool("test_unlabeled", False, "--test_file has no labels (classification, tagging).")
flags.DEFINE_string("tfds_name", None, "A TFDS task instead of files: glue/mrpc, squad/v1.1, conll2003...")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data dir (default: ~/tensorflow_datasets).")
flags.DEFINE_string("tfds_train_split", "train", "TFDS training split.")
flags.DEFINE_string("tfds_eval_split", None, "TFDS eval split (default: validation, "
                    "validation_matched for mnli).")
flags.DEFINE_string("tfds_test_split", None, "TFDS split to predict with the best model.")
flags.DEFINE_string("init_checkpoint", None, "Encoder checkpoint dir: ours, Hugging Face or Google TF1.")
flags.DEFINE_string("output_dir", None, "Where metrics, predictions and best/ go.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum tokens per sequence (batches pad to their longest).")
flags.DEFINE_integer("doc_stride", 128, "span_qa: tokens between the starts of two context windows.")
flags.DEFINE_integer("max_query_length", 64, "span_qa: question tokens kept.")
flags.DEFINE_integer("max_answer_length", 30, "span_qa: longest answer in tokens.")
flags.DEFINE_integer("n_best_size", 20, "span_qa: candidate answers kept per question.")
flags.DEFINE_bool("version_2_with_negative", None, "span_qa: questions may be unanswerable "
                  "(SQuAD 2.0); default: whether the training data has such questions.")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "span_qa v2: predict '' when null score - "
                   "best span score exceeds this.")
flags.DEFINE_float("multi_label_threshold", 0.5, "multi_label: probability to predict a label.")
flags.DEFINE_integer("train_batch_size", 32, "Training batch size.")
flags.DEFINE_integer("eval_batch_size", 64, "Evaluation / prediction batch size.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate (after warmup).")
flags.DEFINE_integer("num_train_epochs", 3, "Training epochs.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warmup.")
flags.DEFINE_float("weight_decay", 0.01, "AdamW weight decay (not on LayerNorm and biases).")
flags.DEFINE_float("layerwise_lr_decay", None, "Layer-wise learning-rate decay (e.g. 0.9).")
flags.DEFINE_float("dropout", 0.1, "Dropout of the task head.")
flags.DEFINE_integer("max_train_examples", None, "Use only the first N training examples.")
flags.DEFINE_integer("max_eval_examples", None, "Use only the first N eval (and test) examples.")
flags.DEFINE_string("main_metric", None, "Eval metric that picks the best epoch (higher is better); "
                    "default: accuracy / micro_f1 / pearson / entity f1 / squad f1 by task, GLUE's for glue/*.")
flags.DEFINE_enum("dtype", "float32", ["float32", "mixed_bfloat16", "mixed_float16"],
                  "Compute dtype policy; mixed_bfloat16 is faster on CPUs with AMX.")
flags.DEFINE_enum("distribution_strategy", "one_device", ["one_device", "mirrored"],
                  "tf.distribute strategy (bert_keras.strategy).")
flags.DEFINE_bool("jit_compile", False, "XLA-compile the train step (slower in bf16 on CPU).")
flags.DEFINE_integer("seed", 42, "Random seed (weights of the head, dropout, shuffling).")
flags.DEFINE_integer("verbose", 2, "Keras fit verbosity: 0 silent, 1 progress bar, 2 one line per epoch.")
_OUR_FLAGS = sorted(set(FLAGS) - _FLAGS_BEFORE)


def _split_files(value):
    return [p for p in value.split(",") if p] if value else None


def _column(value):
    if value is None:
        return None
    return int(value) if value.lstrip("+-").isdigit() else value


def infer_format(path, task):
    """File format from the extension (".gz" stripped) and the task."""
    try:
        return finetuning.infer_format(path, task)
    except ValueError as e:
        raise app.UsageError(f"{e}; pass --format.") from None


def check_flags():
    """app.UsageError for bad flag combinations, before any work."""
    if FLAGS.task is None:
        raise app.UsageError(f"--task is required: one of {TASKS}.")
    if not FLAGS.init_checkpoint:
        raise app.UsageError("--init_checkpoint is required (a checkpoint directory).")
    if not os.path.isdir(FLAGS.init_checkpoint):
        raise app.UsageError(f"--init_checkpoint={FLAGS.init_checkpoint!r} is not a directory.")
    if not FLAGS.output_dir:
        raise app.UsageError("--output_dir is required.")
    files = [FLAGS.train_file, FLAGS.eval_file, FLAGS.test_file]
    if FLAGS.tfds_name and any(files):
        raise app.UsageError("give either --tfds_name or --train_file/--eval_file/--test_file, not both.")
    if not FLAGS.tfds_name:
        if not FLAGS.train_file:
            raise app.UsageError("--train_file (or --tfds_name) is required.")
        from bert_keras.data.finetuning.readers import expand_pattern

        for name, value in (("train_file", FLAGS.train_file), ("eval_file", FLAGS.eval_file),
                            ("test_file", FLAGS.test_file)):
            if not value:
                continue
            try:
                paths = expand_pattern(_split_files(value))
            except FileNotFoundError as e:
                raise app.UsageError(f"--{name}={value!r}: {e}") from None
            for path in paths:
                fmt = FLAGS.format if FLAGS.format != "auto" else infer_format(path, FLAGS.task)
                allowed = finetuning.TASK_FORMATS.get(FLAGS.task, ("tsv", "csv", "jsonl"))
                if fmt not in allowed:
                    raise app.UsageError(f"--task={FLAGS.task} reads {allowed}, but {path} is {fmt!r}.")
    else:
        from bert_keras.data.finetuning.tfds import tfds_task_type

        try:
            expected = tfds_task_type(FLAGS.tfds_name)
        except ValueError as e:
            raise app.UsageError(str(e)) from None
        if FLAGS.task != expected:
            raise app.UsageError(f"--tfds_name={FLAGS.tfds_name} is a {expected} task, not "
                                 f"--task={FLAGS.task}.")
    for name in ("max_seq_length", "train_batch_size", "eval_batch_size", "num_train_epochs",
                 "doc_stride", "max_query_length"):
        if getattr(FLAGS, name) < 1:
            raise app.UsageError(f"--{name} must be >= 1, got {getattr(FLAGS, name)}.")
    if FLAGS.task == "span_qa" and FLAGS.max_seq_length <= FLAGS.max_query_length + 3:
        raise app.UsageError(f"--max_seq_length={FLAGS.max_seq_length} leaves no room for the context "
                             f"after --max_query_length={FLAGS.max_query_length}.")
    if not 0.0 <= FLAGS.warmup_proportion <= 1.0:
        raise app.UsageError(f"--warmup_proportion must be in [0, 1], got {FLAGS.warmup_proportion}.")


def run():
    """finetuning.run_finetuning with the flags; prints the summary; returns the record."""
    file_options = dict(
        file_format=FLAGS.format, header=FLAGS.header, text_a_column=_column(FLAGS.text_a_column),
        text_b_column=_column(FLAGS.text_b_column), label_column=_column(FLAGS.label_column),
        text_a_field=FLAGS.text_a_field, text_b_field=FLAGS.text_b_field,
        label_field=FLAGS.label_field, label_delimiter=FLAGS.label_delimiter)
    record = finetuning.run_finetuning(
        task=FLAGS.task, init_checkpoint=FLAGS.init_checkpoint, output_dir=FLAGS.output_dir,
        train_file=_split_files(FLAGS.train_file), eval_file=_split_files(FLAGS.eval_file),
        test_file=_split_files(FLAGS.test_file), test_unlabeled=FLAGS.test_unlabeled,
        file_options=file_options, tfds_name=FLAGS.tfds_name, tfds_data_dir=FLAGS.tfds_data_dir,
        tfds_train_split=FLAGS.tfds_train_split, tfds_eval_split=FLAGS.tfds_eval_split,
        tfds_test_split=FLAGS.tfds_test_split, max_train_examples=FLAGS.max_train_examples,
        max_eval_examples=FLAGS.max_eval_examples, max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride, max_query_length=FLAGS.max_query_length,
        max_answer_length=FLAGS.max_answer_length, n_best_size=FLAGS.n_best_size,
        version_2_with_negative=FLAGS.version_2_with_negative,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold,
        multi_label_threshold=FLAGS.multi_label_threshold, train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size, learning_rate=FLAGS.learning_rate,
        num_train_epochs=FLAGS.num_train_epochs, warmup_proportion=FLAGS.warmup_proportion,
        weight_decay=FLAGS.weight_decay, layerwise_lr_decay=FLAGS.layerwise_lr_decay,
        dropout=FLAGS.dropout, main_metric=FLAGS.main_metric, dtype=FLAGS.dtype,
        distribution_strategy=FLAGS.distribution_strategy, jit_compile=FLAGS.jit_compile,
        seed=FLAGS.seed, verbose=FLAGS.verbose,
        config={name: FLAGS[name].value for name in _OUR_FLAGS})
    summary = {k: record[k] for k in ("best_epoch", "eval", "test", "baselines") if k in record}
    print(json.dumps(summary, indent=1, default=float), flush=True)
    return record


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    check_flags()
    run()


if __name__ == "__main__":
    app.run(main)
