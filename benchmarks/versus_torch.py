"""What the sections that set one bert_keras family's encoder against transformers' PyTorch
model of that family share (modernbert.py, deberta.py): both systems built from one
config.json dict with random weights, the bert_keras side through the family module's
`encoder_config`, as an import of a checkpoint of that shape would build it.

Worker side: `run_bert_keras` and `run_torch` time inference over a section's batches
(sequences/s, or one long document's latency and peak memory) or a classifier train step
(labels all 1) and return a dict of measurements. Parent side: `specs` (the systems of one
measurement) and `rows` (its rows of the Results table).
"""

import os
import resource
import time

from benchmarks.runner import wanted
from benchmarks.timing import configure_tf, time_calls
from benchmarks.training import torch_train_step


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _rates(timing, per_call):
    rates = timing.rates(per_call)
    return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                seq_per_cpu_s=rates["per_cpu_s"])


def measure(spec, fn, batches):
    """sequences/s over `batches`, or (spec shape "long") the one document's latency and
    memory."""
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
    return _rates(timing, sum(len(b["input_mask"]) for b in batches) / len(batches))


def run_bert_keras(spec, arguments, batches):
    """A BertEncoder of `arguments` (dtype from spec "dtype", weights cast by spec "cast"):
    inference over `batches`, or (spec shape "train") a BertClassifier's train step on the
    first."""
    import tensorflow as tf

    from bert_keras.models.encoder import BertEncoder
    from bert_keras.models.encoder.inference import cast_for_inference

    configure_tf(spec)
    dtype = "mixed_bfloat16" if spec["dtype"] == "bfloat16" else "float32"
    encoder = BertEncoder(dtype=dtype, **arguments)
    if spec["shape"] == "train":
        from bert_keras.tasks.classification import BertClassifier

        model = BertClassifier(encoder, num_classes=2)
        batch = dict(x=batches[0], y=batches[0]["input_mask"][:, 0])
        timing = time_calls(lambda b: model.train_on_batch(**b), [batch], spec["seconds"],
                            warmup=1, min_passes=2)
        return _rates(timing, len(batch["y"]))
    if spec.get("cast"):
        encoder = cast_for_inference(encoder, spec["cast"])
    signature = {name: tf.TensorSpec([None, None], tf.int32)
                 for name in ("input_word_ids", "input_mask", "input_type_ids")}

    @tf.function(input_signature=[signature])
    def infer(inputs):
        return encoder(inputs, training=False)["sequence_output"]

    return measure(spec, lambda batch: infer(batch).numpy(), batches)


def torch_inputs(batch):
    """transformers' inputs of a batch of benchmarks/inputs.py (ids and mask; no types)."""
    import torch

    return dict(input_ids=torch.from_numpy(batch["input_word_ids"]).long(),
                attention_mask=torch.from_numpy(batch["input_mask"]).long())


def run_torch(spec, model, batches):
    """`model(classifier)` (a transformers model of the config, with spec "attention"): its
    inference over `batches` (spec dtype "bfloat16": under autocast; "bfloat16-weights":
    weights cast), or (spec shape "train") the classifier's train step on the first."""
    import contextlib

    import torch

    torch.manual_seed(0)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if spec["dtype"] == "bfloat16"
                else contextlib.nullcontext())
    threads = dict(torch_threads=torch.get_num_threads())
    if spec["shape"] == "train":
        batch = dict(torch_inputs(batches[0]),
                     labels=torch.ones(len(batches[0]["input_mask"]), dtype=torch.long))
        step = torch_train_step(model(classifier=True).train(), autocast)
        timing = time_calls(step, [batch], spec["seconds"], warmup=1, min_passes=2)
        return dict(_rates(timing, len(batch["labels"])), **threads)
    encoder = model(classifier=False).eval()
    if spec["dtype"] == "bfloat16-weights":
        encoder = encoder.to(torch.bfloat16)

    def fn(batch):
        with torch.inference_mode(), autocast:
            return encoder(**torch_inputs(batch)).last_hidden_state.float().numpy()

    return dict(measure(spec, fn, batches), **threads)


# ---------------------------------------------------------------------------------------------
# Parent side.

def specs(base, shape, ours, theirs, torch_systems):
    """(label, spec) of one measurement: bert_keras bf16 (weights cast for inference) and f32
    (worker `ours`), then `torch_systems`, (label after "HF torch ", spec additions) of worker
    `theirs`; those the --systems filter keeps."""
    found = [("bert_keras bf16", dict(base, worker=ours, dtype="bfloat16")) if shape == "train"
             else ("bert_keras bf16 weights", dict(base, worker=ours, dtype="bfloat16",
                                                   cast="bfloat16")),
             ("bert_keras f32", dict(base, worker=ours, dtype="float32"))]
    found += [(f"HF torch {label}", dict(base, worker=theirs, **extra))
              for label, extra in torch_systems]
    return [(label, spec) for label, spec in found if wanted(label)]


def rows(section, shape, found, results):
    """The rows of one measurement: `found` its (label, spec), `results` {label: result}."""
    rows = []
    for label, _ in found:
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
