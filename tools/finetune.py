r"""Fine-tunes a BERT checkpoint on a task of one type (--task): {task_types}.

Data: files (`--train_file`, `--eval_file`, `--test_file`; globs; gzip ok; format from the
extension or `--format`) or a TFDS dataset prepared in `--tfds_data_dir` (`--tfds_name=`
`glue/mrpc`, `squad/v1.1`, `conll2003`, or your own, read by its features; see
docs/data_formats.md). The encoder and tokenizer come from `--init_checkpoint`: our
pretraining output (runs/pretrain/encoder), a Hugging Face directory or a Google TF1 directory.

The flags are the fields of `bert_keras.training.finetuning_config.FinetuneConfig` (names,
defaults, help and checks are written there once); the fine-tuning itself is
`bert_keras.run_finetuning(config)`. Each epoch trains on length-bucketed batches (padded to
the longest row of each batch), then evaluates on the eval data; the best epoch by
`--main_metric` is kept.

OUTPUT_DIR/
  flags.json               the resolved flags
  metrics.json             per-epoch eval metrics, the best epoch's, test metrics, baselines;
                           "complete": true once the run has finished
  eval_predictions.jsonl   the best epoch's predictions on the eval data (JSON lines)
  test_predictions.jsonl   the best model's predictions on --test_file
  best/                    task_io.save_task: model.keras, vocab.txt, task.json (labels) -> export;
                           replaced atomically, so it is always a complete directory
  train/, eval/            TensorBoard scalars: loss, metrics, learning rate, examples/s; the
                           eval metrics of each epoch
  checkpoints/             the latest checkpoint (model, optimizer, data position) until the
                           run ends: one at each epoch's end and, inside an epoch, every
                           --checkpoint_every steps (default 0: every 10 minutes of training)

--early_stopping_patience=N ends the run after N epochs in a row without a better
--main_metric. --distribution_strategy=mirrored|multi_worker_mirrored|tpu runs it on several
devices or workers (docs/scaling.md); --output_dir, like every path, may be gs://.

Crash-safe: after a crash or kill -9, rerun the same command: it resumes from the latest
checkpoint ("Resuming from checkpoint ..."), mid-epoch included (it skips the batches of the
epoch already trained), and ends with the same metrics as an uninterrupted run. Rerunning a
finished run says so and trains nothing; to train again, delete OUTPUT_DIR or pass another
one. An OUTPUT_DIR holding a run with other flags (or other data) is refused with the
differing flags named (--verbose and --checkpoint_every may differ). A new run into an
OUTPUT_DIR with outputs of an earlier, unrecognised run (e.g. of an older version) removes
them first and logs which. A run that fails before anything is saved (bad data, Ctrl-C in
the first epoch) removes the OUTPUT_DIR it created (`bert_keras.training.output_dirs`).

Task distillation: `--teacher_dir` (a fine-tuned run of the same --task: its OUTPUT_DIR or
best/) makes the run a student that also learns the teacher's outputs on the training data:
loss = alpha x KL(softmax(teacher / T) || softmax(student / T)) x T^2 + (1 - alpha) x the
task's own loss (`--distill_alpha`, default 0.5; `--distill_temperature` T, default 2: Hugging
Face's task distillation of DistilBERT). Classification (single texts and pairs), multi_label
(per-label KL), regression (squared error to the teacher's value) and tagging (per scored
token); not span_qa. The student is the --init_checkpoint encoder (a smaller pretrained one,
or a DistilBERT student from `tools/pretrain.py --objective=distill`); it needs the teacher's
vocabulary, and its labels must be among the teacher's (it takes the teacher's label list).
The teacher's logits are computed once, before training; each epoch logs train_soft_loss,
train_hard_loss and train_teacher_agreement, the eval metrics add teacher_agreement
(regression: teacher_pearson, teacher_mse), metrics.json the teacher's own eval scores
("teacher"). best/ is the student alone and exports like any fine-tuned model.

Examples (2 minutes each on 2 CPU cores):
  python tools/finetune.py --flagfile=flags/finetune_bible_paraphrase.flags \
      --init_checkpoint=runs/pretrain/encoder --output_dir=runs/paraphrase \
      --max_train_examples=2000 --num_train_epochs=1 --dtype=mixed_bfloat16
  # a DistilBERT student (tools/pretrain.py --objective=distill) learns from that teacher:
  python tools/finetune.py --flagfile=flags/finetune_bible_paraphrase.flags \
      --init_checkpoint=runs/distil/encoder --teacher_dir=runs/paraphrase \
      --output_dir=runs/paraphrase_student --max_train_examples=2000 --num_train_epochs=1
  python tools/export.py --task_dir=runs/paraphrase_student/best --model_name=paraphrase_student
"""

from bert_keras_tools import startup  # first: quiets TensorFlow's start-up

# isort: split
import json
import sys

from absl import app, flags

from bert_keras import configs
from bert_keras.tasks.registry import FINETUNING_TASKS
from bert_keras.training import precision
from bert_keras.training import strategy as strategy_lib
from bert_keras.training.finetuning import run_finetuning
from bert_keras.training.finetuning_config import FinetuneConfig
from bert_keras.training.finetuning_state import ResumeError

__doc__ = __doc__.replace("{task_types}", ", ".join(FINETUNING_TASKS))  # from the registry
FLAGS = flags.FLAGS
configs.define_flags(FinetuneConfig)


def check_flags():
    """The FinetuneConfig of the flags and its strategy (made first: a multi-worker strategy
    must exist before TensorFlow starts); app.UsageError for bad values or combinations."""
    try:
        config = configs.from_flags(FinetuneConfig)
        config.validate_data_source()
        runtime = config.runtime
        strategy = strategy_lib.create_strategy(runtime.distribution_strategy, tpu=runtime.tpu)
        replicas = strategy.num_replicas_in_sync
        if config.train_batch_size % replicas:
            raise configs.ConfigError(
                f"--train_batch_size={config.train_batch_size} is not divisible by the {replicas} "
                f"replicas of --distribution_strategy={runtime.distribution_strategy}.")
    except ValueError as e:  # ConfigError included
        raise app.UsageError(str(e)) from None
    return config, strategy


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    config, strategy = check_flags()
    startup.say(precision.describe(config.runtime.dtype))
    try:  # a run that fails before it trained leaves no --output_dir behind (run_finetuning)
        record = run_finetuning(config, strategy=strategy)
    except (ResumeError, OSError) as e:  # another run in --output_dir, a full disk
        sys.exit(f"finetune: {e}")
    summary = {k: record[k] for k in ("best_epoch", "stopped_early_after_epoch", "eval", "test",
                                      "baselines") if k in record}
    print(json.dumps(summary, indent=1, default=float), flush=True)


def run():
    startup.run(main)


if __name__ == "__main__":
    run()
