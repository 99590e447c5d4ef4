r"""The BERT variants compared at small scale, one command (the figures of docs/variants.md).

On the bundled corpus and vocab: BERT (masked LM + NSP), the RoBERTa recipe (masked LM over
full sentences packed across documents, no pair task), ALBERT (one shared layer, factorized
embeddings, SOP, n-gram masking), ELECTRA (replaced-token detection) and a DistilBERT student
of half the layers distilled from the BERT run. Each pretraining run gets the same wall-clock
budget on this machine; then every encoder, and a randomly initialised one of the same size,
is fine-tuned with one recipe on the bundled tasks (paraphrase pairs, WordNet topics, NER).

Stages (each tool runs as its own process, as a user would run it; a finished output is
reused, so rerunning continues where a run stopped; --fresh starts over):

  1. calibrate   a short run of each pretraining objective -> steps/s on this machine;
                 steps = --budget_seconds x steps/s (a fixed step count keeps the runs
                 reproducible and unaffected by other load after calibration)
  2. pretrain    tools/pretrain.py per variant                 -> RUN_DIR/pretrain/NAME
  3. finetune    tools/finetune.py per encoder and task        -> RUN_DIR/finetune/NAME/TASK
  4. inference   encoder forward passes of 32 x 64 tokens      -> sequences/s
  5. report      RUN_DIR/results.json and RUN_DIR/variants.md (the table)

Calibration and inference time the machine: run them with nothing else busy.

Example (about 70 minutes on 2 CPU cores):
  python -m benchmarks.compare_variants
Example (a reduced run for tests, about 2 minutes):
  python -m benchmarks.compare_variants --reduced --variants=bert,distilbert \
    --tasks=paraphrase --run_dir=/tmp/variants
"""

import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import time

from absl import app, flags

REPO = pathlib.Path(__file__).resolve().parents[1]  # benchmarks/ -> the repository root
# The command, as results.json records it.
COMMAND = "python -m benchmarks.compare_variants"
ASSETS = "bert_keras/assets"

flags.DEFINE_string("run_dir", "runs/variants", "Where every stage writes its outputs.")
flags.DEFINE_integer("budget_seconds", 300, "Pretraining wall-clock budget of each variant.")
flags.DEFINE_list("variants", None, "Variants to run (default: all); distilbert needs bert.")
flags.DEFINE_list("tasks", None, "Fine-tuning tasks (default: all).")
flags.DEFINE_bool("reduced", False, "Tiny budgets and data, for tests.")
flags.DEFINE_bool("fresh", False, "Delete RUN_DIR first instead of reusing finished stages.")
FLAGS = flags.FLAGS

# One backbone size for every variant: L-4/H-128/A-2, feed-forward 512 (DistilBERT: 2 of the
# teacher's 4 layers); one optimizer (AdamW; LAMB is for batches in the thousands) and one
# learning-rate schedule (10% warmup, linear decay) so that only the objective and the
# architecture differ.
SIZE = ["--num_layers=4", "--hidden_size=128", "--num_heads=2", "--intermediate_size=512"]
PRETRAIN = [f"--train_text={ASSETS}/web_bible_corpus.txt.gz", "--preset=bert_L-4_H-128", *SIZE,
            "--max_seq_length=64", "--max_predictions_per_seq=10", "--global_batch_size=32",
            "--learning_rate=1e-3", "--optimizer=adamw", "--dtype=float32", "--seed=0",
            "--keep_checkpoints=1"]
VARIANTS = {  # name: (what it is, tools/pretrain.py flags on top of PRETRAIN)
    "bert": ("masked LM + next sentence", ["--pair_mode=nsp"]),
    "roberta": ("masked LM, full sentences, no pair task", ["--pair_mode=none"]),
    "albert": ("1 shared layer, E=64, SOP, n-gram masking",
               ["--preset=albert_base_v2", "--embedding_size=64", "--num_layer_groups=1",
                "--pair_mode=sop", "--whole_word_mask", "--ngram=3"]),
    "electra": ("replaced-token detection + discriminator MLM, generator 1/2",
                ["--objective=electra", "--pair_mode=none"]),
    "distilbert": ("student of 2 layers distilled from bert", [
        "--objective=distill", "--pair_mode=none", "--teacher_checkpoint={bert}/final"]),
}
FINETUNE = ["--learning_rate=5e-4", "--num_train_epochs=3", "--max_seq_length=64",
            "--max_train_examples=8000", "--seed=0", "--verbose=0"]
TASKS = {  # name: (flagfile, metric name in the table)
    "paraphrase": ("flags/finetune_bible_paraphrase.flags", "accuracy"),
    "topics": ("flags/finetune_wordnet_topics.flags", "accuracy"),
    "ner": ("flags/finetune_bible_ner.flags", "entity F1"),
}
REDUCED_FINETUNE = ["--max_train_examples=64", "--max_eval_examples=64", "--num_train_epochs=1"]
CALIBRATION_STEPS = 45  # three windows of 15; the first (graph building) is not counted
INFERENCE_SHAPE = (32, 64)


def run_tool(tool, args, log):
    """tools/TOOL.py ARGS as its own process, output to `log`; exits with the log's tail if it
    fails. Returns the seconds it took."""
    command = [sys.executable, str(REPO / "tools" / f"{tool}.py"), *args]
    print("$ " + " ".join(command[1:]).replace(str(REPO) + "/", ""), flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    started = time.time()
    with open(log, "w", encoding="utf-8") as out:
        code = subprocess.call(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.time() - started
    if code:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        sys.exit("compare_variants: {} failed (exit code {}); the end of {}:\n{}".format(
            tool, code, log, "\n".join(tail)))
    return seconds


def read_json(path):
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))


def write_json(path, value):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=1), encoding="utf-8")
    temporary.replace(path)


def pretrain_args(name, stage_dir, steps, log_every, checkpoint_every):
    """tools/pretrain.py's flags for variant `name` in STAGE_DIR/NAME (a DistilBERT student's
    teacher is STAGE_DIR/bert)."""
    args = PRETRAIN + VARIANTS[name][1] + [
        f"--train_steps={steps}", f"--warmup_steps={max(steps // 10, 1)}",
        f"--log_every={log_every}", f"--checkpoint_every={checkpoint_every}",
        f"--model_dir={stage_dir / name}"]
    return [a.format(bert=stage_dir / "bert") for a in args]


def calibrate(names, run_dir):
    """{variant: steps per second} of the pretraining runs, from short runs' logged windows."""
    path = run_dir / "calibration.json"
    rates = read_json(path) if path.exists() else {}
    for name in names:
        if name in rates:
            continue
        model_dir = run_dir / "calibrate" / name
        shutil.rmtree(model_dir, ignore_errors=True)
        steps = 6 if FLAGS.reduced else CALIBRATION_STEPS
        run_tool("pretrain", pretrain_args(name, run_dir / "calibrate", steps,
                                           log_every=steps // 3, checkpoint_every=steps),
                 run_dir / "logs" / f"calibrate_{name}.log")
        windows = [values["examples_per_second"] for _, values in
                   read_json(model_dir / "history.json")][1:]
        rates[name] = sorted(windows)[len(windows) // 2] / 32  # median window, steps/s
        write_json(path, rates)
        print(f"{name}: {rates[name]:.2f} steps/s", flush=True)
    return rates


def pretrain(name, run_dir, steps):
    model_dir = run_dir / "pretrain" / name
    done = run_dir / "pretrain" / f"{name}.json"
    if done.exists():
        return read_json(done)
    log_every = 2 if FLAGS.reduced else max(steps // 20, 1)
    seconds = run_tool("pretrain", pretrain_args(
        name, run_dir / "pretrain", steps, log_every, checkpoint_every=max(steps // 4, 1)),
        run_dir / "logs" / f"pretrain_{name}.log")
    history = read_json(model_dir / "history.json")
    record = dict(steps=steps, seconds=round(seconds, 1), first=history[0][1],
                  last=history[-1][1])
    write_json(done, record)
    return record


def random_encoder(run_dir):
    """A randomly initialised L-4/H-128 BERT with the bundled vocab (the baseline)."""
    directory = run_dir / "random_encoder"
    if not (directory / "bert_keras.json").exists():
        import bert_keras as bk
        vocab = str(REPO / ASSETS / "vocab.txt")
        tokenizer = bk.BertTokenizer(vocab)
        encoder = bk.BertEncoder.from_preset("bert_L-4_H-128", vocab_size=len(tokenizer.vocab))
        encoder.save_pretrained(str(directory), tokenizer=tokenizer)
    return directory


def finetune(encoder_dir, name, task, run_dir):
    output_dir = run_dir / "finetune" / name / task
    finished = output_dir / "metrics.json"
    if not (finished.exists() and read_json(finished).get("complete")):
        args = [f"--flagfile={TASKS[task][0]}", *FINETUNE,
                *(REDUCED_FINETUNE if FLAGS.reduced else []),
                f"--init_checkpoint={encoder_dir}", f"--output_dir={output_dir}"]
        run_tool("finetune", args, run_dir / "logs" / f"finetune_{name}_{task}.log")
    metrics = read_json(output_dir / "metrics.json")
    main = metrics["main_metric"]
    return dict(dev=metrics["eval"][main], test=metrics["test"][main])


def inference_rate(encoder_dir, repeats=5, calls=10):
    """Sequences/s of the encoder's forward pass (tf.function, float32), best of `repeats`."""
    import numpy as np
    import tensorflow as tf

    import bert_keras as bk
    encoder = bk.BertEncoder.from_pretrained(str(encoder_dir))
    batch, length = INFERENCE_SHAPE
    ids = np.random.default_rng(0).integers(5, encoder.vocab_size, (batch, length), np.int32)
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
              "input_type_ids": np.zeros_like(ids)}
    forward = tf.function(lambda x: encoder(x, training=False)["sequence_output"])
    forward(inputs).numpy()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(calls):
            forward(inputs).numpy()
        best = min(best, time.perf_counter() - started)
    return dict(seq_per_s=batch * calls / best, parameters=encoder.count_params(),
                layers=encoder.num_layers)


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs"


def table(results):
    """The markdown table of docs/variants.md."""
    tasks = [t for t in TASKS if any(t in r.get("finetune", {}) for r in results.values())]
    head = ["variant", "objective", "encoder params", "pretraining steps (s)", "end of pretraining"]
    head += [f"{t} dev / test {TASKS[t][1]}" for t in tasks] + ["inference seq/s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in results.items():
        pre = r.get("pretrain")
        cells = [name, r["what"], f"{r['inference']['parameters']:,}",
                 f"{pre['steps']:,} ({pre['seconds']:.0f})" if pre else "-",
                 pretraining_summary(pre["last"]) if pre else "-"]
        cells += [f"{r['finetune'][t]['dev']:.3f} / {r['finetune'][t]['test']:.3f}"
                  for t in tasks]
        cells.append(f"{r['inference']['seq_per_s']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pretraining_summary(last):
    """The last logged window's accuracy figures (what each objective can be judged by)."""
    names = {"masked_lm_accuracy": "MLM acc", "generator_accuracy": "generator acc",
             "discriminator_accuracy": "RTD acc", "all_original_accuracy": "all-original",
             "replaced_recall": "replaced recall", "agreement": "agreement with teacher",
             "next_sentence_accuracy": "pair acc"}
    return ", ".join(f"{label} {last[key]:.3f}" for key, label in names.items() if key in last)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    names = FLAGS.variants or list(VARIANTS)
    tasks = FLAGS.tasks or list(TASKS)
    unknown = sorted(set(names) - set(VARIANTS)) + sorted(set(tasks) - set(TASKS))
    if unknown:
        raise app.UsageError(f"Unknown variants or tasks {unknown}; variants are "
                             f"{list(VARIANTS)}, tasks {list(TASKS)}.")
    if "distilbert" in names and "bert" not in names:
        raise app.UsageError("--variants=distilbert distills the bert run: add bert.")
    run_dir = pathlib.Path(FLAGS.run_dir)
    run_dir = run_dir if run_dir.is_absolute() else REPO / run_dir
    if FLAGS.fresh:
        shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    budget = 4 if FLAGS.reduced else FLAGS.budget_seconds
    print(f"machine: {machine()}; budget {budget} s of pretraining per variant", flush=True)

    rates = calibrate(names, run_dir)
    results = {}
    for name in names:
        steps = max(int(budget * rates[name]), 2)
        results[name] = dict(what=VARIANTS[name][0], steps_per_s=rates[name],
                             pretrain=pretrain(name, run_dir, steps))
        print(f"{name}: {steps} steps, {pretraining_summary(results[name]['pretrain']['last'])}",
              flush=True)
    results["random init"] = dict(what="no pretraining (same size as bert)")
    encoders = {name: run_dir / "pretrain" / name / "encoder" for name in names}
    encoders["random init"] = random_encoder(run_dir)
    for name, encoder_dir in encoders.items():
        results[name]["finetune"] = {task: finetune(encoder_dir, name, task, run_dir)
                                     for task in tasks}
        print(f"{name}: {results[name]['finetune']}", flush=True)
    for name, encoder_dir in encoders.items():
        results[name]["inference"] = inference_rate(encoder_dir)
    results_file = dict(machine=machine(), budget_seconds=budget,
                        command=" ".join([COMMAND] + sys.argv[1:]), variants=results)
    write_json(run_dir / "results.json", results_file)
    markdown = table(results)
    (run_dir / "variants.md").write_text(markdown, encoding="utf-8")
    print("\n" + markdown)


def run():
    app.run(main)


if __name__ == "__main__":
    run()
