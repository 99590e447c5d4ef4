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

from absl import flags

from benchmarks import versus_torch
from benchmarks.inputs import fixed_inputs, worker_inputs, write_real_inputs
from benchmarks.runner import best_round, measure_interleaved, measure_rounds, section_hook

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


def _long_input(length):
    batch = fixed_inputs(1, length)
    batch["input_type_ids"][:] = 0  # one segment: ModernBERT has no token types
    return batch


def _batches(spec):
    if spec["shape"] == "long":
        return [_long_input(spec["long_length"])]
    if spec["shape"] == "mixed":
        return worker_inputs(dict(spec, batch=MIXED_BATCH, bucketed=True))
    return [fixed_inputs(*FIXED)]


# ---------------------------------------------------------------------------------------------
# Systems: each worker function takes the spec and returns a dict of measurements.

def run_bert_keras_modernbert(spec):
    from bert_keras.families import modernbert

    arguments = modernbert.encoder_config(config_dict(spec["layers"]), "benchmark")
    return versus_torch.run_bert_keras(spec, arguments, _batches(spec))


def run_huggingface_modernbert(spec):
    import transformers

    config = transformers.ModernBertConfig(**config_dict(spec["layers"]))

    def model(classifier):
        kind = (transformers.ModernBertForSequenceClassification if classifier
                else transformers.ModernBertModel)
        return kind._from_config(config, attn_implementation=spec["attention"])

    return versus_torch.run_torch(spec, model, _batches(spec))


# ---------------------------------------------------------------------------------------------
# Parent side.

TORCH_SYSTEMS = (("f32 eager", dict(dtype="float32", attention="eager")),
                 ("f32 sdpa", dict(dtype="float32", attention="sdpa")),
                 ("bf16 autocast sdpa", dict(dtype="bfloat16", attention="sdpa")))


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
        specs = versus_torch.specs(base, shape, "bert_keras_modernbert",
                                   "huggingface_modernbert", TORCH_SYSTEMS)
        if shape == "long":  # the best round: the lowest latency
            results = {label: best_round(found, "latency_ms", lowest=True) for label, found
                       in measure_rounds(specs, FLAGS.rounds, FLAGS.timeout).items()}
        else:
            results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "seq_per_s")
        rows += versus_torch.rows(section, described, specs, results)
    return rows
