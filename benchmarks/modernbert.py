"""The modernbert section of benchmarks/run.py: bert_keras' ModernBERT encoder against
transformers' PyTorch ModernBertModel (eager and sdpa attention), random weights, at
ModernBERT-base's shape (22 layers, hidden 768, 12 heads, intermediate 1152, a 128-token
window, a global layer every 3; --modernbert_layers fewer for a shorter run, same per layer):

- fixed 8 x 512 random ids (sequences/s);
- real sentences of mixed length, length-bucketed batches (sequences/s);
- one 8,192-token document (--modernbert_long_length): latency and the process' peak memory;
- a classifier train step on 8 x 512 (sequences/s).

Both systems are built from one transformers config dict: bert_keras' through the modernbert
family module (`encoder_config`), as an import of a checkpoint of that shape would be.
"""

import os
import resource
import time

from absl import flags

from benchmarks.inputs import fixed_inputs, worker_inputs, write_real_inputs
from benchmarks.runner import (
    best_round,
    measure_interleaved,
    measure_rounds,
    section_hook,
    wanted,
)
from benchmarks.timing import configure_tf, time_calls
from benchmarks.training import torch_train_step

FLAGS = flags.FLAGS
flags.DEFINE_integer("modernbert_layers", 22, "Layers of the modernbert section's encoders "
                     "(22: ModernBERT-base; fewer keeps the per-layer work, for a quicker run).")
flags.DEFINE_list("modernbert_shapes", ["fixed", "mixed", "long", "train"], "Which of the "
                  "modernbert section's measurements to run.")
flags.DEFINE_integer("modernbert_long_length", 8192, "Tokens of the modernbert section's "
                     "one long document.")

FIXED = (8, 512)  # the fixed batch, and the train step's
MIXED_BATCH = 32


def config_dict(layers):
    """ModernBERT-base's config.json keys, with `layers` layers."""
    every = 3
    return dict(vocab_size=50368, hidden_size=768, intermediate_size=1152,
                num_hidden_layers=layers, num_attention_heads=12, hidden_activation="gelu",
                max_position_embeddings=8192, global_attn_every_n_layers=every,
                local_attention=128, global_rope_theta=160000.0, local_rope_theta=10000.0,
                norm_eps=1e-5, pad_token_id=50283, cls_token_id=50281, sep_token_id=50282,
                layer_types=["sliding_attention" if i % every else "full_attention"
                             for i in range(layers)])


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _long_input(length):
    batch = fixed_inputs(1, length)
    batch["input_type_ids"][:] = 0  # one segment: ModernBERT has no token types
    return batch


def _measure(spec, fn, batches):
    """sequences/s over `batches` (fixed, mixed) or the long document's latency and memory."""
    if spec["shape"] == "long":
        loaded = _rss_mb()
        fn(batches[0])  # warm-up: traces, allocates
        times, cpu = [], []
        start = time.perf_counter()
        while len(times) < 2 or time.perf_counter() - start < spec["seconds"]:
            t, c = time.perf_counter(), time.process_time()
            fn(batches[0])
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        peak = _peak_mb()
        # On a shared machine the CPU seconds of a call say more than its wall clock.
        return dict(latency_ms=1000 * min(times), seq_per_cpu_s=1 / min(cpu), peak_mb=peak,
                    above_model_mb=peak - loaded)
    timing = time_calls(fn, batches, spec["seconds"], warmup=1, min_passes=1)
    rates = timing.rates(sum(len(b["input_mask"]) for b in batches) / len(batches))
    return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                seq_per_cpu_s=rates["per_cpu_s"])


def _batches(spec):
    if spec["shape"] == "long":
        return [_long_input(spec["long_length"])]
    if spec["shape"] == "mixed":
        return worker_inputs(dict(spec, batch=MIXED_BATCH, bucketed=True))
    return [fixed_inputs(*FIXED)]


# ---------------------------------------------------------------------------------------------
# Systems: each worker function takes the spec and returns a dict of measurements.

def run_bert_keras_modernbert(spec):
    import tensorflow as tf

    from bert_keras.families import modernbert
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.models.encoder.inference import cast_for_inference

    configure_tf(spec)
    arguments = modernbert.encoder_config(config_dict(spec["layers"]), "benchmark")
    dtype = "mixed_bfloat16" if spec["dtype"] == "bfloat16" else "float32"
    encoder = BertEncoder(dtype=dtype, **arguments)
    if spec["shape"] == "train":
        from bert_keras.tasks.classification import BertClassifier

        model = BertClassifier(encoder, num_classes=2)
        batch = dict(x=fixed_inputs(*FIXED), y=fixed_inputs(*FIXED)["input_mask"][:, 0])
        timing = time_calls(lambda b: model.train_on_batch(**b), [batch], spec["seconds"],
                            warmup=1, min_passes=2)
        rates = timing.rates(FIXED[0])
        return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                    seq_per_cpu_s=rates["per_cpu_s"])
    if spec.get("cast"):
        encoder = cast_for_inference(encoder, spec["cast"])
    signature = {name: tf.TensorSpec([None, None], tf.int32)
                 for name in ("input_word_ids", "input_mask", "input_type_ids")}

    @tf.function(input_signature=[signature])
    def infer(inputs):
        return encoder(inputs, training=False)["sequence_output"]

    return _measure(spec, lambda batch: infer(batch).numpy(), _batches(spec))


def run_huggingface_modernbert(spec):
    import contextlib

    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.ModernBertConfig(**config_dict(spec["layers"]))
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if spec["dtype"] == "bfloat16"
                else contextlib.nullcontext())

    def inputs(batch):
        return dict(input_ids=torch.from_numpy(batch["input_word_ids"]).long(),
                    attention_mask=torch.from_numpy(batch["input_mask"]).long())

    if spec["shape"] == "train":
        model = transformers.ModernBertForSequenceClassification._from_config(
            config, attn_implementation=spec["attention"]).train()
        batch = dict(inputs(fixed_inputs(*FIXED)), labels=torch.ones(FIXED[0], dtype=torch.long))
        step = torch_train_step(model, autocast)
        timing = time_calls(step, [batch], spec["seconds"], warmup=1, min_passes=2)
        rates = timing.rates(FIXED[0])
        return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                    seq_per_cpu_s=rates["per_cpu_s"], torch_threads=torch.get_num_threads())
    model = transformers.ModernBertModel._from_config(
        config, attn_implementation=spec["attention"]).eval()

    def fn(batch):
        with torch.inference_mode(), autocast:
            return model(**inputs(batch)).last_hidden_state.float().numpy()

    return dict(_measure(spec, fn, _batches(spec)), torch_threads=torch.get_num_threads())


# ---------------------------------------------------------------------------------------------
# Parent side.

def _specs(base, shape):
    ours, theirs = "bert_keras_modernbert", "huggingface_modernbert"
    specs = [("bert_keras f32", dict(base, worker=ours, dtype="float32")),
             ("HF torch f32 eager", dict(base, worker=theirs, dtype="float32",
                                         attention="eager")),
             ("HF torch f32 sdpa", dict(base, worker=theirs, dtype="float32",
                                        attention="sdpa")),
             ("HF torch bf16 autocast sdpa", dict(base, worker=theirs, dtype="bfloat16",
                                                  attention="sdpa"))]
    if shape == "train":
        specs.insert(0, ("bert_keras bf16", dict(base, worker=ours, dtype="bfloat16")))
    else:
        specs.insert(0, ("bert_keras bf16 weights", dict(base, worker=ours, dtype="bfloat16",
                                                         cast="bfloat16")))
    return [(label, spec) for label, spec in specs if wanted(label)]


def _rows(section, shape, specs, results):
    rows = []
    for label, _ in specs:
        result = results[label]
        metrics = ((("latency ms", "latency_ms"), ("MB peak RSS", "peak_mb"),
                    ("MB peak RSS above the loaded model", "above_model_mb"))
                   if "latency" in section else
                   (("sequences/s" + (" (train step)" if "train" in section else ""),
                     "seq_per_s"),))
        for metric, key in metrics:
            timed = key in ("seq_per_s", "latency_ms")  # MB rows: no rates
            rows.append(dict(section=section, shape=shape, system=label, metric=metric,
                             value=result.get(key),
                             cpu=result.get("seq_per_cpu_s") if timed else None,
                             mean=result.get("seq_per_s_mean"), error=result.get("error")))
    return rows


@section_hook("modernbert")
def modernbert_rows(presets, seconds, workdir):
    layers = FLAGS.modernbert_layers
    name = "modernbert_base" if layers == 22 else f"modernbert_base_L-{layers}"
    real_inputs = os.path.join(workdir, "modernbert_sentences.npz")
    lengths = write_real_inputs(real_inputs, FLAGS.num_sentences, 512)
    long_length = FLAGS.modernbert_long_length
    cases = (
        ("modernbert", "fixed", f"{name} {FIXED[0]}x{FIXED[1]}"),
        ("modernbert (mixed lengths)", "mixed",
         f"{name} {len(lengths)} sentences, mean {lengths.mean():.0f} tokens, "
         f"batch {MIXED_BATCH}"),
        ("modernbert (long document latency)", "long", f"{name} 1x{long_length}"),
        ("modernbert (train step)", "train", f"{name} {FIXED[0]}x{FIXED[1]} classifier"),
    )
    rows = []
    for section, shape, described in cases:
        if shape not in FLAGS.modernbert_shapes:
            continue
        base = dict(layers=layers, shape=shape, seconds=seconds, long_length=long_length,
                    real_inputs=real_inputs, seq=512)
        specs = _specs(base, shape)
        if shape == "long":  # the best round: the lowest latency
            results = {label: best_round(found, "latency_ms", lowest=True) for label, found
                       in measure_rounds(specs, FLAGS.rounds, FLAGS.timeout).items()}
        else:
            results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "seq_per_s")
        rows += _rows(section, described, specs, results)
    return rows
