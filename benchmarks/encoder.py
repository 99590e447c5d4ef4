"""The encoder section of benchmarks/run.py: inference of bert_keras, keras-hub and Hugging Face
PyTorch, on the fixed 32 x 128 batch and on real sentences.

Worker functions take the spec and return a dict of measurements; `encoder_rows` (parent side)
runs them and reads the flags that benchmarks/run.py defines.
"""

import os

from absl import flags

from benchmarks.flops import encoder_flops, preset_shape
from benchmarks.inputs import VOCAB_SIZE, worker_inputs, write_real_inputs
from benchmarks.runner import measure_interleaved, wanted
from benchmarks.timing import configure_tf, time_calls

FLAGS = flags.FLAGS


# ---------------------------------------------------------------------------------------------
# Systems: each worker function takes the spec and returns a dict of measurements.

def run_bert_keras_encoder(spec):
    import numpy as np
    import tensorflow as tf

    from bert_keras.models.encoder import BertEncoder

    configure_tf(spec)
    dtype = "mixed_bfloat16" if spec["dtype"] == "bfloat16" else "float32"
    encoder = BertEncoder.from_preset(spec["preset"], vocab_size=VOCAB_SIZE, dtype=dtype,
                                      **spec.get("overrides", {}))
    # bfloat16 weights too (bert_keras.models.encoder.inference.cast_for_inference).
    if spec.get("cast"):
        from bert_keras.models.encoder.inference import cast_for_inference

        encoder = cast_for_inference(encoder, spec["cast"])
    batches = worker_inputs(spec)
    mode = spec.get("mode", "function")
    if mode == "predict":
        encoder.jit_compile = spec["jit"]

        def fn(batch):
            return encoder.predict_on_batch(batch)["sequence_output"]
    else:
        signature = {name: tf.TensorSpec([None, None], tf.int32) for name in batches[0]}

        unpadded = spec.get("unpadded", True)  # False: the blocks run on the padding too

        @tf.function(input_signature=[signature], jit_compile=spec["jit"])
        def infer(inputs):
            outputs = encoder(inputs, training=False, unpadded=unpadded)
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


def huggingface_config(preset):
    import transformers

    shape = preset_shape(preset)
    return transformers.BertConfig(
        vocab_size=VOCAB_SIZE, hidden_size=shape["hidden_size"],
        num_hidden_layers=shape["num_layers"], num_attention_heads=shape["num_heads"],
        intermediate_size=shape["intermediate_size"], max_position_embeddings=512)


def huggingface_inputs(batch):
    """A batch of the benchmark's id arrays as Hugging Face's keyword tensors."""
    import torch

    return {"input_ids": torch.from_numpy(batch["input_word_ids"]).long(),
            "attention_mask": torch.from_numpy(batch["input_mask"]).long(),
            "token_type_ids": torch.from_numpy(batch["input_type_ids"]).long()}


def huggingface_model(preset, dtype):
    import torch
    import transformers

    torch.manual_seed(0)
    model = transformers.BertModel(huggingface_config(preset)).eval()
    if dtype == "bfloat16-weights":
        model = model.to(torch.bfloat16)
    return model


def run_huggingface_encoder(spec):
    import contextlib

    import torch

    model = huggingface_model(spec["preset"], spec["dtype"])
    batches = [huggingface_inputs(b) for b in worker_inputs(spec)]
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


# ---------------------------------------------------------------------------------------------
# Parent side.

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
        ("bert_keras f32 bucketed", dict(base, worker="bert_keras_encoder", dtype="float32",
                                         jit=False, bucketed=True)),
        # One inter-op thread (a process-wide setting a user can make): faster on these short
        # batches in 7 of 9 alternated rounds on 2 cores, so a row of its own, not a default.
        ("bert_keras f32 bucketed, 1 inter-op thread", dict(base, worker="bert_keras_encoder",
                                                            dtype="float32", jit=False,
                                                            bucketed=True, inter_threads=1)),
        ("bert_keras bf16 weights pad-128", dict(base, worker="bert_keras_encoder",
                                                 dtype="bfloat16", cast="bfloat16", jit=False,
                                                 bucketed=False)),
        # The same batches with the padding computed too: what unpadded inference saves.
        ("bert_keras bf16 weights pad-128, padded blocks", dict(
            base, worker="bert_keras_encoder", dtype="bfloat16", cast="bfloat16", jit=False,
            bucketed=False, unpadded=False)),
        ("bert_keras f32 pad-128", dict(base, worker="bert_keras_encoder", dtype="float32",
                                        jit=False, bucketed=False)),
        ("bert_keras f32 pad-128, padded blocks", dict(
            base, worker="bert_keras_encoder", dtype="float32", jit=False, bucketed=False,
            unpadded=False)),
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
        specs = [(label, spec) for label, spec
                 in encoder_specs(preset, FLAGS.batch_size, FLAGS.seq_length, seconds)
                 if wanted(label)]
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
