"""The int8 section of benchmarks/run.py: the float32, bfloat16 and int8 exports of a preset's
encoder side by side (size on disk, batch-1 p50, 32 x 128 throughput), against Hugging Face
PyTorch float32 and its dynamic int8 (`torch.ao.quantization.quantize_dynamic` on the
Linear layers: what transformers users are told to do for CPU inference).

    python -m benchmarks.run --sections=int8 --presets=bert_L-4_H-512 --output= --rounds=2

Where torch lives in another environment, REFERENCE_SITE_PACKAGES=/path/to/site-packages puts
it on the PyTorch workers' path (only theirs, after their own packages). The matmul
candidates behind the int8 design: `python -m benchmarks.int8_matmul`.
"""

import os
import tempfile

from absl import flags

from benchmarks import export
from benchmarks.encoder import huggingface_inputs, huggingface_model
from benchmarks.inputs import VOCAB_SIZE
from benchmarks.runner import (
    best_round,
    measure_rounds,
    run_worker_subprocess,
    section_hook,
    wanted,
)
from bert_keras.serving.server_environment import SERVER_ENVIRONMENT

FLAGS = flags.FLAGS


def directory_bytes(path):
    """Bytes of every file under `path`."""
    return sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(path) for name in names)


def run_bert_keras_sized_export(spec):
    """Exports the preset's encoder at spec["dtype"] and measures it served in a fresh process
    (`export.run_saved_model_serving`), with the size of its variables and of the whole
    SavedModel."""
    from bert_keras.data.pretraining.pipeline import default_vocab_file
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.serving import export as exporting
    from bert_keras.text.tokenizer import BertTokenizer

    encoder = BertEncoder.from_preset(spec["preset"], vocab_size=VOCAB_SIZE)
    tokenizer = BertTokenizer(default_vocab_file())
    info = dict(task="encoder", labels=None, seq_length=spec["seq"], lower_case=True,
                text_fields=["text"])
    with tempfile.TemporaryDirectory() as base:
        path = exporting.export_saved_model(encoder, tokenizer, info, base, "bench",
                                            dtype=spec["dtype"])
        sizes = dict(variables_mb=directory_bytes(os.path.join(path, "variables")) / 1e6,
                     saved_model_mb=directory_bytes(path) / 1e6)
        result = run_worker_subprocess(dict(spec, worker="saved_model_serving", path=path),
                                       FLAGS.timeout)
        return dict(result, **sizes)


def run_huggingface_int8_serving(spec):
    """transformers' BertModel (float32, or dynamic int8 if spec["dtype"] == "int8"), as the
    export section measures PyTorch, with the size of its saved state dict."""
    import io
    import sys

    if spec.get("reference_site"):
        sys.path.append(spec["reference_site"])  # after this environment's own packages
    import torch

    model = huggingface_model(spec["preset"], "float32")
    if spec["dtype"] == "int8":
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, torch.qint8)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)

    def call(**batch):
        with torch.inference_mode():
            return model(**batch)

    result = export.measure_serving(spec, call, huggingface_inputs,
                                    lambda out: out.last_hidden_state.float().numpy())
    return dict(result, saved_model_mb=buffer.tell() / 1e6)


@section_hook("int8")
def int8_rows(presets, seconds, workdir):
    rows = []
    for preset in presets:
        base = dict(preset=preset, batch=FLAGS.batch_size, seq=FLAGS.seq_length, seconds=seconds,
                    worker="bert_keras_sized_export", env=SERVER_ENVIRONMENT)
        hf = dict(base, worker="huggingface_int8_serving", env={},
                  reference_site=os.environ.get("REFERENCE_SITE_PACKAGES"))
        specs = [(f"bert_keras SavedModel {name} {export.FROZEN}", dict(base, dtype=dtype))
                 for name, dtype in (("f32", "float32"), ("bf16", "bfloat16"), ("int8", "int8"))]
        specs += [("HF torch f32 eager", dict(hf, dtype="float32")),
                  ("HF torch dynamic int8 eager", dict(hf, dtype="int8"))]
        specs = [(label, spec) for label, spec in specs if wanted(label)]
        rounds = measure_rounds(specs, FLAGS.rounds, FLAGS.timeout)
        for metric, key, best_key, shape in (
                ("latency p50 ms", "p50_ms", "p50_ms", f"{preset} batch 1 x {FLAGS.seq_length}"),
                ("sequences/s", "seq_per_s", "seq_per_s",
                 f"{preset} {FLAGS.batch_size}x{FLAGS.seq_length}"),
                ("MB on disk", "saved_model_mb", "p50_ms", f"{preset} whole model"),
                ("MB on disk", "variables_mb", "p50_ms", f"{preset} variables/")):
            for label, _ in specs:
                result = best_round(rounds[label], best_key, lowest=best_key != "seq_per_s")
                if key not in result and "error" not in result:
                    continue  # PyTorch has no variables/ directory
                rows.append(dict(section="int8", shape=shape, system=label, metric=metric,
                                 value=result.get(key), error=result.get("error"),
                                 mean=result.get("seq_per_s_mean") if key == "seq_per_s"
                                 else None))
    return rows
