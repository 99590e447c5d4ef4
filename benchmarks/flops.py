"""Model FLOPs of benchmarks/run.py and the peak section (the matmul GFLOP/s they are
compared with, for the model TFLOP/s and % of peak of the report)."""

import dataclasses

from absl import app, flags

from benchmarks.inputs import VOCAB_SIZE
from benchmarks.runner import capped_out, measure_interleaved
from benchmarks.timing import configure_tf, time_calls

FLAGS = flags.FLAGS


# ---------------------------------------------------------------------------------------------
# Model FLOPs.

def preset_shape(preset):
    from bert_keras.models.encoder import PRESETS

    if preset not in PRESETS:
        raise app.UsageError(
            f"--presets: unknown preset {preset!r}; choose from {sorted(PRESETS)}.")
    return dataclasses.asdict(PRESETS[preset])


def encoder_flops(preset, seq_length, last_rows=None):
    """Forward FLOPs of one sequence through the encoder (matmuls only, 2 per multiply-add).
    `last_rows`: the rows whose output the task needs from the last block (None: all); its
    keys and values still need every row."""
    shape = preset_shape(preset)
    hidden, inter, layers = shape["hidden_size"], shape["intermediate_size"], shape["num_layers"]

    def block(rows):  # keys and values of every row; query, output and FFN of `rows`
        dense = 2 * (seq_length * 2 * hidden * hidden
                     + rows * (2 * hidden * hidden + 2 * hidden * inter))
        attention = 2 * 2 * rows * seq_length * hidden  # scores and context
        return dense + attention

    last = seq_length if last_rows is None else last_rows
    return (layers - 1) * block(seq_length) + block(last) + 2 * hidden * hidden  # + pooler


def train_flops(preset, seq_length, task, max_predictions):
    """Training FLOPs per sequence that the task needs: 3x the forward (forward + two
    backward matmuls), the last block on [CLS] only (classifier) or [CLS] and the masked
    rows (pretraining), whose outputs are all the heads read."""
    pretrain = task == "pretrain"
    flops = encoder_flops(preset, seq_length, last_rows=1 + (max_predictions if pretrain else 0))
    if pretrain:
        shape = preset_shape(preset)
        flops += 2 * max_predictions * shape["hidden_size"] * (shape["hidden_size"] + VOCAB_SIZE)
    return 3 * flops


# ---------------------------------------------------------------------------------------------
# Peak: the worker and its rows.

def run_peak(spec):
    import tensorflow as tf

    configure_tf(spec)
    n = spec["n"]
    a = tf.cast(tf.random.normal((n, n)), spec["dtype"])
    b = tf.cast(tf.random.normal((n, n), stddev=n ** -0.5), spec["dtype"])  # Keeps |a @ b| ~ |a|.
    repeat = 10

    @tf.function(jit_compile=spec.get("jit", False))
    def many(x, y):
        for _ in range(repeat):  # A chain: nothing to merge, no other op in the loop.
            x = tf.matmul(x, y)
        return x[0, 0]

    timing = time_calls(lambda _: many(a, b).numpy(), [None], spec["seconds"])
    rates = timing.rates(2 * n ** 3 * repeat / 1e9)
    return dict(gflops=rates["best_per_s"], gflops_mean=rates["per_s"],
                gflops_per_cpu_s=rates["per_cpu_s"])


# A row: dict(section, shape, system, metric, value, unit, flops (per item), peers...)

def peak_rows(seconds):
    specs = [(f"TF matmul 2048x2048 {dtype}{' XLA' if jit else ''}",
              dict(worker="peak", n=2048, dtype=dtype, jit=jit, seconds=seconds))
             for dtype, jit in (("float32", False), ("bfloat16", False), ("bfloat16", True))]
    specs = [(label, spec) for label, spec in specs if not capped_out(label, FLAGS.max_isa)]
    results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "gflops")
    return [dict(section="peak", shape="2048x2048", system=label, metric="GFLOP/s",
                 value=results[label].get("gflops"), cpu=results[label].get("gflops_per_cpu_s"),
                 mean=results[label].get("gflops_mean"),
                 error=results[label].get("error"))
            for label, _ in specs]
