"""The deberta section of benchmarks/run.py: bert_keras' DeBERTa-v3 encoder against
transformers' PyTorch DebertaV2Model (eager: transformers has no sdpa path for its
disentangled attention), random weights, at DeBERTa-v3-base's shape (12 layers, hidden 768,
12 heads, 256 position buckets; --deberta_layers fewer for a shorter run, same per layer):

- fixed 32 x 128 and 8 x 512 random ids (sequences/s);
- batch-1 x 128 latency of the export: a bert_keras SavedModel served in a fresh process
  (as the export section serves it) against PyTorch eager (p50, p99);
- a classifier train step on 32 x 128 (sequences/s).

Both systems are built from one config.json dict (benchmarks/versus_torch.py): bert_keras'
through the deberta_v3 family module, as an import of a checkpoint of that shape would be.
"""

import tempfile

from absl import flags

from benchmarks import export, runner, versus_torch
from benchmarks.inputs import REPO, fixed_inputs
from benchmarks.runner import best_round, measure_interleaved, measure_rounds, section_hook

FLAGS = flags.FLAGS
flags.DEFINE_integer("deberta_layers", 12, "Layers of the deberta section's encoders (12: "
                     "DeBERTa-v3-base; fewer keeps the per-layer work, for a quicker run).")
flags.DEFINE_list("deberta_shapes", ["32x128", "8x512", "export", "train"], "Which of the "
                  "deberta section's measurements to run.")

TRAIN = (32, 128)  # the train step's batch
LATENCY_LENGTH = 128  # tokens of the batch-1 latency
# The tokenizer the export carries (the served ids skip it; any DeBERTa-v3 spm.model will do).
TOKENIZER = REPO / "tests" / "fixtures" / "families" / "deberta_v3" / "spm.model"

# DeBERTa-v3-base's config.json (microsoft/deberta-v3-base) but its layers.
BASE = dict(model_type="deberta-v2", vocab_size=128100, hidden_size=768, num_hidden_layers=12,
            num_attention_heads=12, intermediate_size=3072, hidden_act="gelu",
            hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
            max_position_embeddings=512, type_vocab_size=0, initializer_range=0.02,
            layer_norm_eps=1e-7, relative_attention=True, max_relative_positions=-1,
            position_buckets=256, norm_rel_ebd="layer_norm", share_att_key=True,
            pos_att_type="p2c|c2p", position_biased_input=False, pad_token_id=0)


def config_dict(spec):
    """DeBERTa-v3-base's config.json dict with the spec's layers."""
    return dict(BASE, num_hidden_layers=spec["layers"])


def _batches(spec):
    batch = fixed_inputs(spec["batch"], spec["seq"])
    batch["input_type_ids"][:] = 0  # one segment: DeBERTa-v3 has no token types
    return [batch]


# ---------------------------------------------------------------------------------------------
# Systems: each worker function takes the spec and returns a dict of measurements.

def _encoder_arguments(spec):
    from bert_keras.families import deberta_v3

    return deberta_v3.encoder_config(config_dict(spec), "benchmark")


def run_bert_keras_deberta(spec):
    return versus_torch.run_bert_keras(spec, _encoder_arguments(spec), _batches(spec))


def _torch_model(spec):
    import transformers

    config = transformers.DebertaV2Config(**config_dict(spec))

    def model(classifier):
        kind = (transformers.DebertaV2ForSequenceClassification if classifier
                else transformers.DebertaV2Model)
        return kind._from_config(config, attn_implementation="eager")

    return model


def run_huggingface_deberta(spec):
    return versus_torch.run_torch(spec, _torch_model(spec), _batches(spec))


def run_bert_keras_deberta_export(spec):
    """Exports the encoder, then measures the SavedModel in a fresh process, as a model server
    loads it (export.run_saved_model_serving)."""
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.serving.export import export_saved_model
    from bert_keras.text.deberta_tokenizer import DebertaV3Tokenizer

    encoder = BertEncoder(**_encoder_arguments(spec))
    info = dict(task="encoder", labels=None, seq_length=spec["seq"], lower_case=False,
                text_fields=["text"])
    with tempfile.TemporaryDirectory() as base:
        path = export_saved_model(encoder, DebertaV3Tokenizer(str(TOKENIZER)), info, base,
                                  "bench", dtype=spec["dtype"])
        return runner.run_worker_subprocess(dict(spec, worker="saved_model_serving", path=path),
                                            FLAGS.timeout)


def run_huggingface_deberta_serving(spec):
    import torch

    model = _torch_model(spec)(classifier=False).eval()
    if spec["dtype"] == "bfloat16-weights":
        model = model.to(torch.bfloat16)

    def call(**batch):
        with torch.inference_mode():
            return model(**batch)

    return export.measure_serving(spec, call, lambda b: versus_torch.torch_inputs(b),
                                  lambda out: out.last_hidden_state.float().numpy())


# ---------------------------------------------------------------------------------------------
# Parent side.

TORCH_SYSTEMS = (("f32 eager", dict(dtype="float32")),
                 ("bf16 autocast eager", dict(dtype="bfloat16")),
                 ("bf16 weights eager", dict(dtype="bfloat16-weights")))
EXPORT_SYSTEMS = (
    ("bert_keras SavedModel bf16", dict(worker="bert_keras_deberta_export", dtype="bfloat16")),
    ("bert_keras SavedModel f32", dict(worker="bert_keras_deberta_export", dtype="float32")),
    ("HF torch f32 eager", dict(worker="huggingface_deberta_serving", dtype="float32")),
    ("HF torch bf16 weights eager", dict(worker="huggingface_deberta_serving",
                                         dtype="bfloat16-weights")))


def _export_rows(section, shape, base):
    """p50 and p99 rows, each system's from its round of the lowest p50 (as the export
    section); the per CPU-s column: calls per CPU-second of the p50 round."""
    found = [(label, dict(base, **extra)) for label, extra in EXPORT_SYSTEMS
             if runner.wanted(label)]
    rounds = measure_rounds(found, FLAGS.rounds, FLAGS.timeout)
    rows = []
    for metric, key in (("latency p50 ms", "p50_ms"), ("latency p99 ms", "p99_ms")):
        for label, _ in found:
            result = best_round(rounds[label], "p50_ms", lowest=True)
            rows.append(dict(section=section, shape=shape, system=label, metric=metric,
                             value=result.get(key), error=result.get("error"),
                             cpu=result.get("calls_per_cpu_s") if key == "p50_ms" else None))
    return rows


@section_hook("deberta")
def deberta_rows(presets, seconds, workdir):
    layers = FLAGS.deberta_layers
    name = "deberta_v3_base" if layers == 12 else f"deberta_v3_base_L-{layers}"
    base = dict(layers=layers, seconds=seconds)
    rows = []
    for shape in FLAGS.deberta_shapes:
        if shape == "export":
            rows += _export_rows("deberta (export latency)",
                                 f"{name} batch 1 x {LATENCY_LENGTH} ids",
                                 dict(base, seq=LATENCY_LENGTH, latency_only=True))
            continue
        if shape == "train":
            section, (batch, seq) = "deberta (train step)", TRAIN
            described = f"{name} {batch}x{seq} classifier"
        else:
            try:
                batch, seq = (int(n) for n in shape.split("x"))
            except ValueError:
                raise SystemExit(f"--deberta_shapes: {shape!r} is not BATCHxLENGTH, export "
                                 "or train.") from None
            section, described = "deberta", f"{name} {shape}"
        spec = dict(base, shape="train" if shape == "train" else "fixed", batch=batch, seq=seq)
        found = versus_torch.specs(spec, spec["shape"], "bert_keras_deberta",
                                   "huggingface_deberta", TORCH_SYSTEMS)
        if shape == "train":  # bf16 weights do not train: autocast only
            found = [(label, s) for label, s in found if "weights" not in label]
        results = measure_interleaved(found, FLAGS.rounds, FLAGS.timeout, "seq_per_s")
        rows += versus_torch.rows(section, described, found, results)
    return rows
