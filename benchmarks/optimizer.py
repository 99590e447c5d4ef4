r"""Benchmarks one optimizer update over a BERT's weights: our AdamW against Keras' and PyTorch's.

Every system updates the weights of the same encoder shape (the preset's, vocab 30,522) from
fixed random gradients, with BERT's settings: weight decay 0.01, epsilon 1e-6, the gradient
clipped to global norm 1.0. Each runs in its own process, interleaved over --rounds; the
figure is the best round's median update time. Systems:

- bert_keras AdamW: `bert_keras.optimization.AdamW` (TensorFlow's fused Adam kernel);
- bert_keras AdamW elementwise: the same rule as ~15 elementwise ops per weight
  (`AdamW(fused=False)`: what AdamW ran before the fused kernel and Lamb still runs);
- keras AdamW: `keras.optimizers.AdamW` (Keras 3, TensorFlow backend);
- torch AdamW / torch AdamW fused: `torch.optim.AdamW` with `clip_grad_norm_`, by default
  and with fused=True (bench extras).

Command (from the repository root):
  python -m benchmarks.optimizer --presets=bert_L-4_H-512,bert_base --rounds=3
"""

from absl import app, flags

from benchmarks.inputs import VOCAB_SIZE
from benchmarks.runner import print_interleaved
from benchmarks.timing import latencies

FLAGS = flags.FLAGS

LEARNING_RATE, WEIGHT_DECAY, EPSILON, CLIP_NORM = 1e-4, 0.01, 1e-6, 1.0


def _result(times, num_weights):
    times = sorted(times)
    return dict(updates_per_s=1.0 / times[len(times) // 2], median_ms=1e3 * times[len(times) // 2],
                min_ms=1e3 * times[0], weights=num_weights)


def run_tf_optimizer(spec):
    import keras
    import numpy as np
    import tensorflow as tf

    from bert_keras.models.encoder import BertEncoder
    from bert_keras.names import INPUT_NAMES
    from bert_keras.optimization import AdamW

    encoder = BertEncoder.from_preset(spec["preset"], vocab_size=VOCAB_SIZE)
    encoder({name: tf.ones([1, 8], tf.int32) for name in INPUT_NAMES})
    weights = encoder.trainable_variables
    rng = np.random.default_rng(0)
    grads = [tf.constant(rng.normal(size=w.shape).astype("float32") * 1e-2) for w in weights]
    settings = dict(learning_rate=LEARNING_RATE, weight_decay=WEIGHT_DECAY, epsilon=EPSILON,
                    global_clipnorm=CLIP_NORM)
    if spec["system"] == "keras":
        optimizer = keras.optimizers.AdamW(**settings)
    elif spec["system"] == "elementwise":
        optimizer = AdamW(fused=False, **settings)
    else:
        optimizer = AdamW(**settings)
    update = tf.function(lambda: optimizer.apply(grads, weights))
    times = latencies(lambda _: update(), None, spec["seconds"])
    return _result(times, sum(int(np.prod(w.shape)) for w in weights))


def run_torch_optimizer(spec):
    import torch

    from benchmarks.encoder import huggingface_model

    params = [p for p in huggingface_model(spec["preset"], "float32").parameters()]
    generator = torch.Generator().manual_seed(0)
    for p in params:
        p.grad = torch.randn(p.shape, generator=generator) * 1e-2
    optimizer = torch.optim.AdamW(params, lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY,
                                  eps=EPSILON, fused=spec["system"] == "torch fused" or None)

    def update(_):
        torch.nn.utils.clip_grad_norm_(params, CLIP_NORM)
        optimizer.step()

    return _result(latencies(update, None, spec["seconds"]), sum(p.numel() for p in params))


SYSTEMS = {
    "bert_keras AdamW": ("tf_optimizer", "bert_keras"),
    "bert_keras AdamW elementwise": ("tf_optimizer", "elementwise"),
    "keras AdamW": ("tf_optimizer", "keras"),
    "torch AdamW": ("torch_optimizer", "torch"),
    "torch AdamW fused": ("torch_optimizer", "torch fused"),
}


def _cells(preset):
    def cells(label, r, results):
        ours = results["bert_keras AdamW"].get("median_ms")
        ratio = f"{r['median_ms'] / ours:.2f}" if ours else ""
        return [preset, f"{r['weights'] / 1e6:.1f} M", label, f"{r['median_ms']:.1f}",
                f"{r['min_ms']:.1f}", ratio]
    return cells


def main(argv):
    del argv
    print("| encoder | weights | system | median ms | min ms | x bert_keras AdamW |")
    print("|---|---:|---|---:|---:|---:|")
    for preset in FLAGS.presets:
        specs = [(label, dict(worker=worker, system=system, preset=preset,
                              seconds=FLAGS.seconds))
                 for label, (worker, system) in SYSTEMS.items()]
        print_interleaved(specs, FLAGS.rounds, "updates_per_s", [preset, ""], _cells(preset))


def run():
    # Defined here, not on import: benchmarks/run.py imports this module for its workers and
    # has flags of these names.
    flags.DEFINE_list("presets", ["bert_L-4_H-512", "bert_base"], "Encoder shapes.")
    flags.DEFINE_integer("rounds", 3, "Interleaved rounds per system.")
    flags.DEFINE_float("seconds", 3, "Seconds of updates per round.")
    app.run(main)


if __name__ == "__main__":
    run()
