"""The matmul candidates of an int8 export at BERT's shapes, timed and checked side by side:

    python -m benchmarks.int8_matmul [--seconds=1.5] [--rounds=3]

[128, 512] x [512, 2048] (one sequence of 128 tokens: batch-1 serving) and [4096, 512] x
[512, 2048] (32 x 128), each candidate's median call and its error against the float64
product of the same inputs, rounds interleaved (A, B, A, B); prints Markdown rows. Only ops of
`tf.raw_ops` (what the export's op audit accepts). Run it in the server's environment
(TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1) to see that setting's effect.
"""

import sys
import time

import numpy as np
import tensorflow as tf
from absl import app, flags

flags.DEFINE_float("seconds", 1.5, "Timed seconds per candidate and round.")
flags.DEFINE_integer("rounds", 3, "Interleaved rounds; the median of the rounds' medians.")
FLAGS = flags.FLAGS

K, N = 512, 2048
ACTIVATION_RANGE = 6.0  # |x| of the benchmark's standard normal activations stays below it


def median_call_s(fn, x, seconds):
    for _ in range(3):
        fn(x)
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def candidates(w):
    """{name: (function of the float32 activations, input)}: each returns x @ w in float."""
    scale = np.abs(w).max(axis=0) / 127.0
    w8 = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    w32, wbf = tf.Variable(w), tf.Variable(tf.cast(w, tf.bfloat16))
    w8_var, scale_t = tf.Variable(w8), tf.constant(scale)
    zeros = tf.zeros([N])

    def int8_matmul(x):  # symmetric per-row activations, int32 accumulation
        x_scale = tf.reduce_max(tf.abs(x), axis=1, keepdims=True) / 127.0
        x8 = tf.cast(tf.round(x / x_scale), tf.int8)
        product = tf.linalg.matmul(x8, w8_var, output_type=tf.int32)
        return tf.cast(product, tf.float32) * x_scale * scale_t

    def onednn_quantized(weights):
        def fn(x):  # asymmetric uint8 activations (MIN_FIRST), as the op documents them
            q = tf.quantization.quantize(x, -ACTIVATION_RANGE, ACTIVATION_RANGE, tf.quint8,
                                         mode="MIN_FIRST")
            product = tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
                a=q.output, b=tf.bitcast(weights(), tf.qint8), bias=zeros,
                min_a=q.output_min, max_a=q.output_max, min_b=-127.0, max_b=127.0,
                min_freezed_output=0.0, max_freezed_output=0.0, Toutput=tf.float32)
            return product * scale_t
        return fn

    # SCALED mode, the one that computes right products (on AMX, 2026-12-05): unsigned
    # activations over [0, max], per-tensor weights (per-channel ranges fail a CHECK).
    w_max = float(np.abs(w).max())
    w8_tensor = tf.constant(np.clip(np.round(w / w_max * 127), -127, 127).astype(np.int8))
    # The shift's product, subtracted after: (x + R) W - R * column sums of W.
    shift = tf.constant(ACTIVATION_RANGE * w8_tensor.numpy().astype(np.float64).sum(axis=0)
                        * w_max / 127, tf.float32)

    def scaled_quantized(x, top):  # x >= 0, at most `top`
        q = tf.quantization.quantize(x, 0.0, top, tf.quint8, mode="SCALED")
        return tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
            a=q.output, b=tf.bitcast(w8_tensor, tf.qint8), bias=zeros, min_a=q.output_min,
            max_a=q.output_max, min_b=-w_max, max_b=w_max, min_freezed_output=0.0,
            max_freezed_output=0.0, Toutput=tf.float32, input_quant_mode="SCALED")

    return {
        "float32 MatMul": lambda x: tf.linalg.matmul(x, w32),
        "bfloat16 MatMul": lambda x: tf.cast(tf.linalg.matmul(tf.cast(x, tf.bfloat16), wbf),
                                             tf.float32),
        "int8 MatMul, int32 output (output_type=tf.int32)": int8_matmul,
        "int8 weights -> float32, MatMul (Int8Dense)": lambda x: tf.linalg.matmul(
            x, tf.cast(w8_var, tf.float32) * scale_t),
        "int8 weights -> bfloat16, MatMul": lambda x: tf.cast(tf.linalg.matmul(
            tf.cast(x, tf.bfloat16), tf.cast(w8_var, tf.bfloat16) * tf.cast(scale_t,
                                                                             tf.bfloat16)),
            tf.float32),
        "QuantizedMatMulWithBiasAndDequantize, variable weights":
            onednn_quantized(lambda: w8_var),
        "QuantizedMatMulWithBiasAndDequantize, constant weights":
            onednn_quantized(lambda: tf.constant(w8)),
        "same, SCALED: x + R unsigned, shift's product subtracted, constant weights":
            lambda x: scaled_quantized(x + ACTIVATION_RANGE, 2 * ACTIVATION_RANGE) - shift,
        "same, SCALED: relu(x) and relu(-x), two products, constant weights":
            lambda x: (scaled_quantized(tf.nn.relu(x), ACTIVATION_RANGE)
                       - scaled_quantized(tf.nn.relu(-x), ACTIVATION_RANGE)),
    }


def main(argv):
    del argv
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((K, N)) * 0.05).astype(np.float32)
    print(f"tensorflow {tf.__version__}; rounds {FLAGS.rounds} interleaved, median call",
          file=sys.stderr)
    print("| shape | candidate | ms | GFLOP/s | relative error |")
    print("|---|---|---|---|---|")
    for m in (128, 4096):
        x = np.clip(rng.standard_normal((m, K)), -ACTIVATION_RANGE, ACTIVATION_RANGE)
        x = x.astype(np.float32)
        exact = x.astype(np.float64) @ w.astype(np.float64)
        fns = {name: tf.function(fn) for name, fn in candidates(w).items()}
        errors = {}
        for name, fn in fns.items():
            got = fn(tf.constant(x)).numpy().astype(np.float64)
            errors[name] = np.linalg.norm(got - exact) / np.linalg.norm(exact)
        times = {name: [] for name in fns}
        for _ in range(FLAGS.rounds):
            for name, fn in fns.items():
                times[name].append(median_call_s(fn, tf.constant(x), FLAGS.seconds))
        for name in fns:
            seconds = float(np.median(times[name]))
            print(f"| [{m},{K}]x[{K},{N}] | {name} | {1e3 * seconds:.2f} | "
                  f"{2 * m * K * N / seconds / 1e9:.0f} | {errors[name]:.1e} |", flush=True)


if __name__ == "__main__":
    app.run(main)
