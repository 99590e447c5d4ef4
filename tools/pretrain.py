"""Pretrains a BERT encoder (masked LM + next sentence) from raw text or static TFRecords.

Example (a small BERT on the bundled corpus, a few minutes on 2 CPU cores):

  python tools/pretrain.py --flagfile=flags/pretrain_mini.flags --model_dir=/tmp/bert_mini

Rerun the same command after a crash to resume from the last checkpoint. The encoder lands
in MODEL_DIR/encoder (load it with bk.BertEncoder.from_pretrained); TensorBoard scalars in
MODEL_DIR/train; the resolved flags in MODEL_DIR/run_config.json. Recipes: flags/pretrain_
{tiny,mini,base,large}.flags. --helpfull lists every flag (strategy, precision, optimizer,
two-phase sequence length, checkpoints).
"""

import glob
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags  # noqa: E402
from absl import logging as absl_logging  # noqa: E402

# Flags shown by --help; the rest are listed by --helpfull under "advanced".
_ADVANCED = "tools/pretrain.py (advanced)"
_NAMES = []


def _define(kind, name, default, help_text, advanced=True, **kwargs):
    _NAMES.append(name)
    if advanced:
        kwargs["module_name"] = _ADVANCED
    define = getattr(flags, f"DEFINE_{kind}")
    return define(name=name, default=default, help=help_text, **kwargs)


_define("string", "train_text", None, "Raw text files (comma-separated globs, .gz ok): one "
        "sentence per line, blank line between documents. Pairs and masks are made on the fly.",
        advanced=False)
_define("string", "train_data", None, "Static pretraining TFRecords (comma-separated globs), "
        "e.g. from tools/create_pretraining_data.py or Google's script.", advanced=False)
_define("string", "model_dir", None, "Checkpoints, TensorBoard logs, run_config.json and the "
        "final encoder/ go here; rerunning with the same directory resumes.", advanced=False)
_define("string", "preset", "bert_mini", "Encoder size: a bk.PRESETS name (bert_tiny, "
        "bert_mini, bert_small, bert_base, bert_large, bert_L-4_H-512, ...).", advanced=False)
_define("integer", "train_steps", 1000, "Optimizer updates to train for.", advanced=False)
_define("integer", "global_batch_size", 32, "Examples per update, over all replicas "
        "(and accumulated micro-batches).", advanced=False)
_define("float", "learning_rate", 1e-4, "Peak learning rate.", advanced=False)
_define("integer", "warmup_steps", 100, "Linear warmup steps, then linear decay to 0.",
        advanced=False)

_define("string", "vocab_file", None, "WordPiece vocab; default: the bundled "
        "bert_keras/assets/vocab.txt, or the vocab of --init_checkpoint.")
_define("boolean", "lower_case", True, "Uncased vocab (lower-case and strip accents).")
_define("string", "init_checkpoint", None, "Continue pretraining from this encoder: a Hugging "
        "Face, Google TF1 or bert_keras directory (its size overrides --preset).")
_define("integer", "num_layers", None, "Override the preset's number of layers.")
_define("integer", "hidden_size", None, "Override the preset's hidden size.")
_define("integer", "num_heads", None, "Override the preset's number of attention heads.")
_define("integer", "intermediate_size", None, "Override the preset's feed-forward size.")
_define("float", "dropout", None, "Override hidden and attention dropout (preset: 0.1).")
_define("integer", "max_seq_length", 128, "Sequence length (of the data, for --train_data).")
_define("integer", "max_predictions_per_seq", 20, "Masked positions per sequence.")
_define("float", "masked_lm_prob", 0.15, "Fraction of tokens masked (--train_text).")
_define("boolean", "whole_word_mask", False, "Mask whole words (--train_text).")
_define("enum", "pair_mode", "nsp", "Sentence-pair task: next sentence, sentence order, or "
        "none (MLM only).", enum_values=["nsp", "sop", "none"])
_define("integer", "phase2_seq_length", None, "Two-phase recipe: the last --phase2_fraction of "
        "the steps use this sequence length (BERT: 128, then 512).")
_define("float", "phase2_fraction", 0.1, "Fraction of --train_steps in phase 2.")
_define("integer", "phase2_max_predictions_per_seq", None, "Masked positions in phase 2 "
        "(default: --max_predictions_per_seq; BERT used 80 at 512).")
_define("string", "phase2_train_data", None, "Static TFRecords of phase 2 (with --train_data).")
_define("enum", "optimizer", "adamw", "Optimizer.", enum_values=["adamw", "lamb"])
_define("float", "end_learning_rate", 0.0, "Learning rate at the last step.")
_define("float", "weight_decay", 0.01, "Decoupled weight decay (not LayerNorm, not biases).")
_define("integer", "gradient_accumulation_steps", 1, "Micro-batches per update: each is "
        "global_batch_size / this examples.")
_define("enum", "distribution_strategy", "one_device",
        "one_device; mirrored (all local GPUs); multi_worker_mirrored (cluster from the "
        "TF_CONFIG environment variable); tpu (needs --tpu).",
        enum_values=["one_device", "mirrored", "multi_worker_mirrored", "tpu"])
_define("string", "tpu", None, "TPU address for --distribution_strategy=tpu ('local' on a TPU VM).")
_define("enum", "dtype", "float32", "Compute dtype policy; variables, layer norm, softmax "
        "and logits stay float32.", enum_values=["float32", "mixed_float16", "mixed_bfloat16"])
_define("boolean", "jit_compile", False, "XLA-compile the train step (good on GPU/TPU; on CPU "
        "it loses bfloat16's speed).")
_define("integer", "steps_per_execution", 1, "Batches per compiled call (TPU: e.g. 100).")
_define("integer", "checkpoint_every", 1000, "Steps between checkpoints (a Keras epoch).")
_define("integer", "keep_checkpoints", 5, "Recent checkpoints to keep.")
_define("integer", "log_every", 100, "Steps between TensorBoard points and progress lines.")
_define("integer", "seed", 0, "Data seed (shuffling, pairs, masks).")

FLAGS = flags.FLAGS


def _expand(patterns):
    """Comma-separated globs -> sorted files; UsageError naming the pattern that matches none."""
    files = []
    for pattern in str(patterns).split(","):
        pattern = pattern.strip()
        if "://" in pattern:  # gs://... (TPU hosts read their data from GCS)
            import tensorflow as tf

            matches = tf.io.gfile.glob(pattern)
        else:
            matches = sorted(glob.glob(pattern)) if pattern else []
        if not matches:
            raise app.UsageError(f"No file matches {pattern!r} (from {patterns!r}).")
        files.extend(matches)
    return files


def _check_flags():
    """Every check that needs no TensorFlow: raises app.UsageError before any work."""
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    if bool(FLAGS.train_data) == bool(FLAGS.train_text):
        raise app.UsageError("Give exactly one of --train_data (TFRecords) and --train_text "
                             f"(raw text); got --train_data={FLAGS.train_data!r}, "
                             f"--train_text={FLAGS.train_text!r}.")
    _expand(FLAGS.train_data or FLAGS.train_text)
    if FLAGS.phase2_train_data:
        if not FLAGS.train_data:
            raise app.UsageError("--phase2_train_data goes with --train_data.")
        _expand(FLAGS.phase2_train_data)
    if FLAGS.phase2_seq_length:
        if FLAGS.train_data and not FLAGS.phase2_train_data:
            raise app.UsageError("--phase2_seq_length with --train_data needs --phase2_train_data "
                                 f"(TFRecords of length {FLAGS.phase2_seq_length}).")
        if not 0.0 < FLAGS.phase2_fraction < 1.0:
            raise app.UsageError(f"--phase2_fraction must be in (0, 1), got {FLAGS.phase2_fraction}.")
    if FLAGS.distribution_strategy == "tpu" and not FLAGS.tpu:
        raise app.UsageError("--distribution_strategy=tpu needs --tpu (an address, or 'local').")
    if FLAGS.tpu and FLAGS.distribution_strategy != "tpu":
        raise app.UsageError(f"--tpu={FLAGS.tpu!r} needs --distribution_strategy=tpu, got "
                             f"{FLAGS.distribution_strategy!r}.")
    if FLAGS.distribution_strategy == "multi_worker_mirrored" and not os.environ.get("TF_CONFIG"):
        raise app.UsageError("--distribution_strategy=multi_worker_mirrored reads the cluster from "
                             "the TF_CONFIG environment variable, which is not set.")
    if FLAGS.vocab_file and not os.path.isfile(FLAGS.vocab_file):
        raise app.UsageError(f"--vocab_file={FLAGS.vocab_file!r} does not exist.")
    if FLAGS.init_checkpoint and not os.path.isdir(FLAGS.init_checkpoint):
        raise app.UsageError(f"--init_checkpoint={FLAGS.init_checkpoint!r} is not a directory.")
    for name in ("train_steps", "global_batch_size", "checkpoint_every", "keep_checkpoints",
                 "log_every", "gradient_accumulation_steps", "steps_per_execution"):
        if FLAGS[name].value < 1:
            raise app.UsageError(f"--{name} must be >= 1, got {FLAGS[name].value}.")
    if not 0 <= FLAGS.warmup_steps <= FLAGS.train_steps:
        raise app.UsageError(f"--warmup_steps={FLAGS.warmup_steps} must be in [0, --train_steps="
                             f"{FLAGS.train_steps}].")
    if FLAGS.global_batch_size % FLAGS.gradient_accumulation_steps:
        raise app.UsageError(f"--global_batch_size={FLAGS.global_batch_size} is not divisible by "
                             f"--gradient_accumulation_steps={FLAGS.gradient_accumulation_steps}.")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    _check_flags()
    from bert_keras.training import strategy as strategy_lib
    from bert_keras.training import loop as training

    # TF logs "Sharding callback duration" at INFO on every checkpoint: drop that chatter.
    absl_logging.get_absl_handler().addFilter(
        lambda record: "Sharding callback duration" not in record.getMessage())

    try:
        strategy = strategy_lib.create_strategy(FLAGS.distribution_strategy, tpu=FLAGS.tpu)
        strategy_lib.per_replica_batch_size(FLAGS.global_batch_size, strategy,
                                            FLAGS.gradient_accumulation_steps)
    except ValueError as e:
        raise app.UsageError(str(e)) from None
    overrides = {name: FLAGS[name].value for name in
                 ("num_layers", "hidden_size", "num_heads", "intermediate_size")
                 if FLAGS[name].value is not None}
    if FLAGS.dropout is not None:
        overrides.update(dropout=FLAGS.dropout, attention_dropout=FLAGS.dropout)
    try:
        result = training.run_pretraining(
            model_dir=FLAGS.model_dir, train_data=FLAGS.train_data or None,
            train_text=FLAGS.train_text or None,
            vocab_file=FLAGS.vocab_file, lower_case=FLAGS.lower_case, preset=FLAGS.preset,
            encoder_overrides=overrides, init_checkpoint=FLAGS.init_checkpoint,
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            masked_lm_prob=FLAGS.masked_lm_prob, whole_word_mask=FLAGS.whole_word_mask,
            pair_mode=FLAGS.pair_mode, train_steps=FLAGS.train_steps,
            global_batch_size=FLAGS.global_batch_size, learning_rate=FLAGS.learning_rate,
            warmup_steps=FLAGS.warmup_steps, end_learning_rate=FLAGS.end_learning_rate,
            weight_decay=FLAGS.weight_decay, optimizer=FLAGS.optimizer,
            gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
            phase2_seq_length=FLAGS.phase2_seq_length, phase2_fraction=FLAGS.phase2_fraction,
            phase2_max_predictions_per_seq=FLAGS.phase2_max_predictions_per_seq,
            phase2_train_data=FLAGS.phase2_train_data, strategy=strategy, dtype=FLAGS.dtype,
            jit_compile=FLAGS.jit_compile, checkpoint_every=FLAGS.checkpoint_every,
            keep_checkpoints=FLAGS.keep_checkpoints,
            steps_per_execution=FLAGS.steps_per_execution, log_every=FLAGS.log_every,
            seed=FLAGS.seed, config={name: FLAGS[name].value for name in _NAMES})
    except training.TrainingDivergedError as e:
        sys.exit(f"pretrain: {e}")
    history = result["history"]
    if history:
        (first_step, first), (last_step, last) = history[0], history[-1]
        for name in ("masked_lm_accuracy", "loss"):
            if name in first:
                print(f"{name}: {first[name]:.4f} at step {first_step} -> {last[name]:.4f} at "
                      f"step {last_step}")
    print(f"Finished at step {result['step']} (started at {result['initial_step']}); encoder: "
          f"{result['encoder_dir']}")


if __name__ == "__main__":
    app.run(main)
