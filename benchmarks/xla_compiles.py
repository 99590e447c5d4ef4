r"""Benchmarks XLA's compiles of the train steps' fused kernels: XLA:CPU's default emitters
against the ones `import bert_keras` picks (bert_keras/cpu_kernels.py, FAST_XLA_COMPILES).

Each setting runs in its own process (XLA reads XLA_FLAGS once, at its first compile), the two
alternated --rounds times:
- compile: CPU seconds of the first call of the residual norm (with dropout) and GELU, forward
  and backward, at --shapes new row counts (hidden 64): what a fine-tuning run pays for each
  new batch shape;
- kernels: milliseconds per forward + backward at BERT-base shapes (4,096 rows: a [4096, 768]
  residual norm and a [4096, 3072] GELU), float32 and bfloat16, best of 7 passes of 10 calls.

Command (from the repository root; about a minute on 2 CPU cores):
  python -m benchmarks.xla_compiles
"""

import json
import os
import subprocess
import sys
import time

from absl import app, flags

from bert_keras import cpu_kernels
from bert_keras.models.layers.activations import training_activation
from bert_keras.models.layers.residual_norm import residual_dropout_norm

flags.DEFINE_integer("rounds", 3, "Runs of each setting, alternated.")
flags.DEFINE_integer("shapes", 8, "New row counts compiled in each run.")
FLAGS = flags.FLAGS

# XLA_FLAGS of each setting: bert_keras keeps an XLA_FLAGS that names the option.
SETTINGS = {"XLA's default emitters": cpu_kernels.DEFAULT_XLA_COMPILES,
            "bert_keras (LLVM IR emitters)": cpu_kernels.FAST_XLA_COMPILES}


def measure(shapes):
    """{"compile_s": ..., "float32_ms": ..., "bfloat16_ms": ...} in this process."""
    import tensorflow as tf  # after bert_keras (cpu_kernels' defaults come first)

    gelu, seed = training_activation("gelu"), tf.constant([1, 2])

    @tf.function
    def step(x, h, u):
        with tf.GradientTape() as tape:
            tape.watch([x, h, u])
            y = residual_dropout_norm(x, h, seed, 0.1, tf.ones(x.shape[-1]),
                                      tf.zeros(x.shape[-1]), 1e-12)
            total = tf.reduce_sum(tf.cast(y, tf.float32)) + tf.reduce_sum(
                tf.cast(gelu(u), tf.float32))
        return tape.gradient(total, [x, h, u])

    def inputs(rows, hidden, dtype):
        return [tf.cast(tf.random.stateless_normal([rows, width], [i, 0]), dtype)
                for i, width in enumerate((hidden, hidden, 4 * hidden))]

    start = time.process_time()
    for rows in range(8, 8 * (shapes + 1), 8):
        step(*inputs(rows, 64, tf.float32))[0].numpy()
    result = {"compile_s": time.process_time() - start}
    for dtype in (tf.float32, tf.bfloat16):
        args = inputs(4096, 768, dtype)
        step(*args)[0].numpy()
        best = float("inf")
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(10):
                out = step(*args)
            out[0].numpy()
            best = min(best, (time.perf_counter() - start) / 10)
        result[f"{dtype.name}_ms"] = best * 1000
    return result


def run_setting(xla_flags, shapes):
    env = dict(os.environ, XLA_FLAGS=xla_flags, TF_CPP_MIN_LOG_LEVEL="3")
    code = ("import json, bert_keras, benchmarks.xla_compiles as b; "
            f"print(json.dumps(b.measure({shapes})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main(argv):
    del argv
    results = {name: [] for name in SETTINGS}
    for _ in range(FLAGS.rounds):
        for name, xla_flags in SETTINGS.items():
            results[name].append(run_setting(xla_flags, FLAGS.shapes))
    print(f"| XLA_FLAGS | compile, {FLAGS.shapes} new shapes (s of CPU) | "
          "float32 kernels (ms) | bfloat16 kernels (ms) |\n|---|---|---|---|")
    for name, runs in results.items():
        cells = [", ".join(f"{run[key]:.2f}" for run in runs)
                 for key in ("compile_s", "float32_ms", "bfloat16_ms")]
        print(f"| {name}: `{SETTINGS[name]}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    app.run(main)
