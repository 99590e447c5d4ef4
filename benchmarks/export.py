"""The export section of benchmarks/run.py: a bert_keras SavedModel (ids and raw text) against
Hugging Face PyTorch eager, at batch 1 (latency) and batch 32 (throughput).

Worker functions take the spec and return a dict of measurements; `export_rows` (parent side)
runs them and reads the flags that benchmarks/run.py defines.
"""

import tempfile

from absl import flags

from benchmarks.encoder import huggingface_inputs, huggingface_model
from benchmarks.flops import encoder_flops
from benchmarks.inputs import VOCAB_SIZE, fixed_inputs, real_sentences
from benchmarks.runner import (
    best_round,
    measure_rounds,
    run_worker_subprocess,
    section_hook,
    wanted,
)
from benchmarks.timing import configure_tf, latencies, time_calls
from bert_keras.serving.server_environment import SERVER_ENVIRONMENT

FLAGS = flags.FLAGS
FROZEN = "frozen-weights server"  # the rows served with SERVER_ENVIRONMENT
# Batch-1 calls per latency measurement, at least: a p99 then rests on its 5 slowest calls
# (with 4 s of BERT-base calls it was the slowest of some 55).
LATENCY_CALLS = 500


# ---------------------------------------------------------------------------------------------
# Systems: each worker function takes the spec and returns a dict of measurements.

def run_bert_keras_export(spec):
    """Exports the preset's encoder, then measures the SavedModel in a fresh process, as a model
    server loads it."""
    from bert_keras.data.pretraining.pipeline import default_vocab_file
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.serving import export
    from bert_keras.text.tokenizer import BertTokenizer

    encoder = BertEncoder.from_preset(spec["preset"], vocab_size=VOCAB_SIZE)
    tokenizer = BertTokenizer(default_vocab_file())
    info = dict(task="encoder", labels=None, seq_length=spec["seq"], lower_case=True,
                text_fields=["text"])
    with tempfile.TemporaryDirectory() as base:
        path = export.export_saved_model(encoder, tokenizer, info, base, "bench",
                                         dtype=spec["dtype"],
                                         kernel_layout=spec.get("kernel_layout", "auto"))
        return run_worker_subprocess(dict(spec, worker="saved_model_serving", path=path),
                                     FLAGS.timeout)


def run_saved_model_serving(spec):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer ops of the SavedModel)

    configure_tf(spec)
    loaded = tf.saved_model.load(spec["path"])
    return measure_serving(spec, loaded.signatures["encode"],
                           lambda b: {k: tf.constant(v) for k, v in b.items()},
                           lambda out: out["sequence_output"].numpy(),
                           text_fn=loaded.signatures["serving_default"])


def run_huggingface_serving(spec):
    import torch

    model = huggingface_model(spec["preset"], spec["dtype"])

    def call(**batch):
        with torch.inference_mode():
            return model(**batch)

    return measure_serving(spec, call, huggingface_inputs,
                           lambda out: out.last_hidden_state.float().numpy())


def measure_serving(spec, fn, convert, fetch, text_fn=None):
    """p50/p99 latency at batch 1 (ids of 128 tokens; raw text if `text_fn`), batch-32 rate;
    spec "latency_only": the ids' latency alone, and its calls per CPU-second."""
    import time

    import numpy as np

    counted = []  # (calls, CPU seconds) of each latency measurement

    def p50_p99_ms(call, batch):
        cpu = time.process_time()
        times = latencies(call, batch, spec["seconds"], min_calls=LATENCY_CALLS)
        # The CPU seconds of its 3 warm-up calls too: a slight underestimate of the rate.
        counted.append((len(times), time.process_time() - cpu))
        return [1e3 * float(np.percentile(times, q)) for q in (50, 99)]

    one = convert(fixed_inputs(1, spec["seq"]))
    result = dict(zip(("p50_ms", "p99_ms"), p50_p99_ms(lambda b: fetch(fn(**b)), one)))
    if spec.get("latency_only"):
        calls, cpu = counted[0]
        return dict(result, calls_per_cpu_s=calls / cpu)
    if text_fn is not None:
        import tensorflow as tf

        text = {"text": tf.constant(real_sentences(1, seed=3))}
        result.update(zip(("text_p50_ms", "text_p99_ms"),
                          p50_p99_ms(lambda b: text_fn(**b)["pooled_output"].numpy(), text)))
    full = convert(fixed_inputs(spec["batch"], spec["seq"]))
    timing = time_calls(lambda b: fetch(fn(**b)), [full], spec["seconds"])
    rates = timing.rates(spec["batch"])
    result.update(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                  seq_per_cpu_s=rates["per_cpu_s"])
    return result


# ---------------------------------------------------------------------------------------------
# Parent side.

@section_hook("export")
def export_rows(presets, seconds, workdir):
    rows = []
    for preset in presets:
        base = dict(preset=preset, batch=FLAGS.batch_size, seq=FLAGS.seq_length, seconds=seconds)
        specs = [
            ("bert_keras SavedModel bf16",
             dict(base, worker="bert_keras_export", dtype="bfloat16")),
            ("bert_keras SavedModel f32", dict(base, worker="bert_keras_export", dtype="float32")),
            # The model server's environment that docs/serving.md recommends.
            (f"bert_keras SavedModel bf16 {FROZEN}",
             dict(base, worker="bert_keras_export", dtype="bfloat16", env=SERVER_ENVIRONMENT)),
            (f"bert_keras SavedModel f32 {FROZEN}",
             dict(base, worker="bert_keras_export", dtype="float32", env=SERVER_ENVIRONMENT)),
            # One request at a time, as PyTorch eager runs: one op after another.
            (f"bert_keras SavedModel bf16 {FROZEN}, 1 inter-op thread",
             dict(base, worker="bert_keras_export", dtype="bfloat16", env=SERVER_ENVIRONMENT,
                  inter_threads=1)),
            # The float32 layout of AVX2-only CPUs (tools/export.py --kernel_layout=transposed).
            ("bert_keras SavedModel f32 transposed", dict(base, worker="bert_keras_export",
                                                          dtype="float32",
                                                          kernel_layout="transposed")),
            ("HF torch f32 eager", dict(base, worker="huggingface_serving", dtype="float32")),
            ("HF torch bf16 weights eager", dict(base, worker="huggingface_serving",
                                                 dtype="bfloat16-weights")),
        ]
        specs = [(label, spec) for label, spec in specs if wanted(label)]
        rounds = measure_rounds(specs, FLAGS.rounds, FLAGS.timeout)
        ids = f"{preset} batch 1 x {FLAGS.seq_length} ids"
        text = f"{preset} batch 1 raw sentence (in-graph tokenizer)"
        # Each measurement from its own best round: a latency's p50 and p99 from the round
        # of its lowest p50, the throughput from the round of its highest rate.
        for metric, key, best_key, shape in (
                ("latency p50 ms", "p50_ms", "p50_ms", ids),
                ("latency p99 ms", "p99_ms", "p50_ms", ids),
                ("latency p50 ms", "text_p50_ms", "text_p50_ms", text),
                ("latency p99 ms", "text_p99_ms", "text_p50_ms", text),
                ("sequences/s", "seq_per_s", "seq_per_s",
                 f"{preset} {FLAGS.batch_size}x{FLAGS.seq_length}")):
            for label, _ in specs:
                if key.startswith("text") and "SavedModel" not in label:
                    continue
                result = best_round(rounds[label], best_key, lowest=best_key != "seq_per_s")
                rows.append(dict(section="export", shape=shape, system=label, metric=metric,
                                 value=result.get(key), error=result.get("error"),
                                 cpu=result.get("seq_per_cpu_s") if key == "seq_per_s" else None,
                                 mean=result.get("seq_per_s_mean") if key == "seq_per_s" else None,
                                 flops=encoder_flops(preset, FLAGS.seq_length)
                                 if key == "seq_per_s" else None))
    return rows
