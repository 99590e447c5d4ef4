"""The pretrain and finetune sections of benchmarks/run.py: train steps of bert_keras, keras-hub
and Hugging Face PyTorch on one fixed batch.

Worker functions take the spec and return a dict of measurements; the section rows (parent
side) run them and read the flags that benchmarks/run.py defines.
"""

from absl import flags

from benchmarks.encoder import huggingface_config, huggingface_inputs, keras_hub_backbone
from benchmarks.flops import train_flops
from benchmarks.inputs import VOCAB_SIZE, fixed_inputs
from benchmarks.runner import measure_interleaved, section_hook, wanted
from benchmarks.timing import configure_tf, time_calls

FLAGS = flags.FLAGS


# ---------------------------------------------------------------------------------------------
# Systems: each worker function takes the spec and returns a dict of measurements.

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
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.tasks.classification import BertClassifier
    from bert_keras.tasks.pretraining import BertPretrainer

    configure_tf(spec)
    dtype = "mixed_bfloat16" if spec["dtype"] == "bfloat16" else "float32"
    encoder = BertEncoder.from_preset(spec["preset"], vocab_size=VOCAB_SIZE, dtype=dtype)
    data = training_inputs(spec)
    if spec["task"] == "pretrain":
        model = BertPretrainer(encoder)
        x = dict(data["x"], masked_lm_positions=data["positions"])
        batch = dict(x=x, y={"masked_lm": data["ids"], "next_sentence": data["labels"]},
                     sample_weight={"masked_lm": data["weights"]})
    else:
        model = BertClassifier(encoder, num_classes=2)
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


def run_huggingface_train(spec):
    """A PyTorch train step (forward, backward, AdamW) of Hugging Face's BertForPreTraining or
    BertForSequenceClassification; "bfloat16" is torch.autocast (float32 master weights, as
    Keras' mixed_bfloat16). Its MLM head scores every position (labels -100 where not masked):
    that is how the model computes it."""
    import contextlib

    import torch
    import transformers

    torch.manual_seed(0)
    config = huggingface_config(spec["preset"])
    data = training_inputs(spec)
    x = huggingface_inputs(data["x"])
    labels = torch.from_numpy(data["labels"]).long()
    if spec["task"] == "pretrain":
        model = transformers.BertForPreTraining(config)
        mlm_labels = torch.full(x["input_ids"].shape, -100, dtype=torch.long)
        rows = torch.arange(spec["batch"])[:, None]
        mlm_labels[rows, torch.from_numpy(data["positions"]).long()] = torch.from_numpy(
            data["ids"]).long()
        batch = dict(x, labels=mlm_labels, next_sentence_label=labels)
    else:
        model = transformers.BertForSequenceClassification(config)  # num_labels 2 by default.
        batch = dict(x, labels=labels)
    model.train()
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if spec["dtype"] == "bfloat16"
                else contextlib.nullcontext())
    step = torch_train_step(model, autocast)
    timing = time_calls(step, [batch], spec["seconds"])
    rates = timing.rates(spec["batch"])
    return dict(seq_per_s=rates["best_per_s"], seq_per_s_mean=rates["per_s"],
                seq_per_cpu_s=rates["per_cpu_s"], torch_threads=torch.get_num_threads())


# ---------------------------------------------------------------------------------------------
# Parent side.

def torch_train_step(model, autocast):
    """`step(batch) -> loss`: one AdamW step (lr 1e-4, weight decay 0.01) of a transformers
    model on a batch dict with labels, its forward under `autocast`: the PyTorch train step
    every benchmark section times."""
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

    def step(batch):
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


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
            ("HF torch f32 train", dict(base, worker="huggingface_train", dtype="float32")),
            ("HF torch bf16 autocast train", dict(base, worker="huggingface_train",
                                                  dtype="bfloat16")),
        ]
        specs = [(label, spec) for label, spec in specs if wanted(label)]
        results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "seq_per_s")
        what = "MLM+NSP, 20 masked" if task == "pretrain" else "classifier"
        shape = f"{preset} {FLAGS.batch_size}x{FLAGS.seq_length} {what}"
        flops = train_flops(preset, FLAGS.seq_length, task, FLAGS.max_predictions)
        rows += [dict(section=task, shape=shape, system=label, metric="sequences/s (train step)",
                      value=results[label].get("seq_per_s"),
                      cpu=results[label].get("seq_per_cpu_s"),
                      mean=results[label].get("seq_per_s_mean"),
                      flops=flops, error=results[label].get("error")) for label, _ in specs]
    return rows


@section_hook("pretrain")
def pretrain_rows(presets, seconds, workdir):
    return training_rows("pretrain", FLAGS.train_presets, seconds)


@section_hook("finetune")
def finetune_rows(presets, seconds, workdir):
    return training_rows("finetune", FLAGS.train_presets, seconds)
