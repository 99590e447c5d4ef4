"""Pretrains an encoder from raw text or static TFRecords: BERT's masked LM (+ next sentence /
sentence order), ELECTRA's replaced-token detection, or DistilBERT's distillation.

Example (a small BERT on the bundled corpus, a few minutes on 2 CPU cores):

  python tools/pretrain.py --flagfile=flags/pretrain_mini.flags --model_dir=/tmp/bert_mini

ELECTRA on the same data, and a student distilled from that BERT:

  python tools/pretrain.py --flagfile=flags/pretrain_mini.flags --objective=electra \
    --model_dir=/tmp/electra_mini
  python tools/pretrain.py --flagfile=flags/pretrain_mini.flags --objective=distill \
    --teacher_checkpoint=/tmp/bert_mini --model_dir=/tmp/distil_mini

Rerun the same command after a crash to resume from the last checkpoint. The encoder lands
in MODEL_DIR/encoder (load it with bk.BertEncoder.from_pretrained); TensorBoard scalars in
MODEL_DIR/train; the resolved flags in MODEL_DIR/run_config.json; held-out figures
(--eval_data or --eval_text) in MODEL_DIR/eval and MODEL_DIR/eval_metrics.json. A run that
fails before it saved anything (bad text, Ctrl-C before the first checkpoint) removes the
MODEL_DIR it created. Recipes: flags/pretrain_{tiny,mini,base,large}.flags (BERT),
pretrain_{electra_small,electra_base,roberta_base,albert_base,distilbert}.flags,
pretrain_{deberta_v3,modernbert}_{mini,base}.flags. --helpfull lists every flag (strategy,
precision, optimizer, two-phase sequence length, checkpoints): the fields of
`bert_keras.training.pretraining_config.PretrainConfig`, where each is documented and checked.
"""

from bert_keras_tools import startup  # first: quiets TensorFlow's start-up

# isort: split
import sys

from absl import app, flags

from bert_keras import configs
from bert_keras.training import precision
from bert_keras.training import strategy as strategy_lib
from bert_keras.training.loop import TrainingDivergedError
from bert_keras.training.pretraining import run_pretraining
from bert_keras.training.pretraining_config import PretrainConfig

FLAGS = flags.FLAGS
configs.define_flags(PretrainConfig)


def check_flags():
    """The PretrainConfig of the flags and its strategy; app.UsageError before any work."""
    try:
        config = configs.from_flags(PretrainConfig)
        runtime = config.runtime
        strategy = strategy_lib.create_strategy(runtime.distribution_strategy, tpu=runtime.tpu)
        strategy_lib.per_replica_batch_size(config.global_batch_size, strategy,
                                            config.optimizer.gradient_accumulation_steps)
    except ValueError as e:  # ConfigError included
        raise app.UsageError(str(e)) from None
    return config, strategy


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    config, strategy = check_flags()
    startup.say(precision.describe(config.runtime.dtype))
    try:  # a run that fails before it saved anything leaves no --model_dir (run_pretraining)
        result = run_pretraining(config, strategy=strategy)
    except TrainingDivergedError as e:
        sys.exit(f"pretrain: {e}")
    history = result["history"]
    if history:
        (first_step, first), (last_step, last) = history[0], history[-1]
        for name in ("masked_lm_accuracy", "loss"):
            if name in first:
                print(f"{name}: {first[name]:.4f} at step {first_step} -> {last[name]:.4f} at "
                      f"step {last_step}")
    if result["evaluations"]:
        step, values = result["evaluations"][-1]
        names = ("masked_lm_accuracy", "next_sentence_accuracy", "discriminator_accuracy", "loss")
        print(f"Held-out at step {step}: " + " ".join(
            f"{name} {values[name]:.4f}" for name in names if name in values))
    print(f"Finished at step {result['step']} (started at {result['initial_step']}); encoder: "
          f"{result['encoder_dir']}")


def run():
    startup.run(main)


if __name__ == "__main__":
    run()
