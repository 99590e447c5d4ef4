r"""The default run: raw text to a served prediction, on the bundled data, in one command.

Chains the tools, each run as its own process exactly as a user would run it alone:

  1. vocab       the bundled WordPiece vocab (bert_keras/assets/vocab.txt), or tools/build_vocab.py
  2. data        tools/create_pretraining_data.py  -> RUN_DIR/pretrain_data/*.tfrecord
  3. pretrain    tools/pretrain.py                 -> RUN_DIR/pretrain/encoder
  4. finetune    tools/finetune.py (paraphrase)    -> RUN_DIR/paraphrase/best, metrics.json
  5. export      tools/export.py                   -> saved_models/paraphrase/VERSION
  6. predict     tools/predict.py on example pairs from the held-out test split

A stage whose output is complete is reused, so rerunning continues where a run stopped
(pretraining itself also resumes from its last checkpoint). --fresh starts over.

Example (about 9 minutes on 2 CPU cores):
  python tools/quickstart.py
Example (a reduced run for CI, about 2 minutes):
  python tools/quickstart.py --reduced --run_dir=/tmp/quick --export_dir_base=/tmp/quick/saved
"""

import gzip
import json
import pathlib
import shutil
import subprocess
import sys
import time

from absl import app, flags

from bert_keras_tools import absl_main

REPO = pathlib.Path(__file__).resolve().parents[1]
DATA = REPO / "bert_keras" / "assets"

flags.DEFINE_string("run_dir", "runs/default", "Where every stage writes its outputs.")
flags.DEFINE_string("export_dir_base", "saved_models", "Where the exported model is written.")
flags.DEFINE_bool("reduced", False,
                  "A much smaller run (tiny sizes, few steps) for CI and smoke tests.")
flags.DEFINE_bool("learn_vocab", False,
                  "Learn the vocab from the corpus instead of using the bundled one.")
flags.DEFINE_bool("fresh", False, "Delete RUN_DIR first instead of reusing finished stages.")
flags.DEFINE_integer("num_examples", 6, "Test pairs to predict with the exported model.")
FLAGS = flags.FLAGS

# Stage settings on top of the tools' flagfiles (the two mini flagfiles agree on sequence
# length 64 and 10 predictions); --reduced shrinks them for CI.
FULL = dict(
    data=["--flagfile=flags/create_pretraining_data_mini.flags"],
    pretrain=["--flagfile=flags/pretrain_mini.flags"],
    # All 9,600 training pairs, at the pretraining length (positions past 64 are untrained).
    # A 2-layer model pretrained for minutes needs a larger learning rate than the paper's
    # 5e-5 for BERT-base: measured dev accuracy after 4 epochs was 0.63 at 2e-4, 0.60-0.81 at
    # 5e-4 (it varies with the pretraining run), 0.50 at 1e-3; 0.56 from a random encoder.
    finetune=["--flagfile=flags/finetune_bible_paraphrase.flags", "--num_train_epochs=4",
              "--learning_rate=5e-4", "--max_seq_length=64"],
)
REDUCED = dict(
    data=FULL["data"] + ["--dupe_factor=1"],
    pretrain=["--flagfile=flags/pretrain_tiny.flags", "--train_steps=20", "--checkpoint_every=10",
              "--log_every=5", "--max_seq_length=64", "--max_predictions_per_seq=10"],
    finetune=FULL["finetune"] + ["--max_train_examples=256", "--num_train_epochs=1",
                                 "--max_eval_examples=128"],
)


def banner(number, title):
    print(f"\n=== {number}/6 {title} " + "=" * max(0, 60 - len(title)), flush=True)


def run_tool(tool, args, capture=False):
    """Runs tools/TOOL.py as its own process from the repo root; fails loudly."""
    command = [sys.executable, str(REPO / "tools" / f"{tool}.py")] + args
    print("$ " + " ".join(command[1:]).replace(str(REPO) + "/", ""), flush=True)
    started = time.time()
    # No TF_CPP_MIN_LOG_LEVEL here: each tool quiets TensorFlow's start-up chatter itself
    # (tools/startup.py), and setting the variable would turn that off.
    result = subprocess.run(command, cwd=REPO, text=True,
                            stdout=subprocess.PIPE if capture else None)
    if result.returncode:
        sys.exit(f"quickstart: stage {tool} failed (exit code {result.returncode}); "
                 f"rerun the command above to see why.")
    print(f"[{tool}: {time.time() - started:.0f} s]", flush=True)
    return result.stdout


def example_pairs(count):
    """The first `count` labeled pairs of the held-out paraphrase test split."""
    pairs = []
    with gzip.open(DATA / "bible_paraphrase.test.tsv.gz", "rt", encoding="utf-8") as f:
        for line in f:
            label, text_a, text_b = line.rstrip("\n").split("\t")
            pairs.append((label, text_a, text_b))
            if len(pairs) == count:
                break
    return pairs


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    settings = REDUCED if FLAGS.reduced else FULL
    run_dir = pathlib.Path(FLAGS.run_dir)
    if not run_dir.is_absolute():
        run_dir = REPO / run_dir
    if FLAGS.fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()

    banner(1, "vocab")
    vocab = DATA / "vocab.txt"
    if FLAGS.learn_vocab:
        vocab = run_dir / "vocab.txt"
        if not vocab.exists():
            run_tool("build_vocab", [f"--input={DATA / 'web_bible_corpus.txt.gz'}",
                                     "--vocab_size=8000", "--lower_case", f"--output={vocab}"])
    with open(vocab, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    print(f"{vocab}: {vocab_size:,} WordPieces learned from the bundled corpus")

    banner(2, "pretraining data (masked LM + next sentence)")
    data_dir = run_dir / "pretrain_data"
    done = data_dir / "summary.json"
    if done.exists():
        print(f"reusing {data_dir}")
    else:
        shutil.rmtree(data_dir, ignore_errors=True)
        data_dir.mkdir(parents=True)
        output = run_tool("create_pretraining_data", settings["data"] + [
            f"--output_file={data_dir / 'train.tfrecord'}", f"--vocab_file={vocab}"],
            capture=True)
        done.write_text(output)  # The tool prints its summary as JSON; it marks completion.
    summary = json.loads(done.read_text())
    print(f"{summary.get('instances', '?'):,} examples in {len(summary.get('output_files', []))} "
          f"TFRecord files")

    banner(3, "pretraining a small BERT")
    pretrain_dir = run_dir / "pretrain"
    encoder_dir = pretrain_dir / "encoder"
    history_file = pretrain_dir / "history.json"
    if (encoder_dir / "bert_keras.json").exists() and history_file.exists():
        print(f"reusing {encoder_dir}")
    else:
        run_tool("pretrain", settings["pretrain"] + [
            "--train_text=", f"--train_data={data_dir / 'train.tfrecord'}*",
            f"--vocab_file={vocab}", f"--model_dir={pretrain_dir}"])
    history = json.loads(history_file.read_text())
    (first_step, first), (last_step, last) = history[0], history[-1]
    print(f"masked-LM accuracy {first['masked_lm_accuracy']:.3f} (steps to {first_step}) -> "
          f"{last['masked_lm_accuracy']:.3f} (steps to {last_step}); chance is "
          f"{1 / vocab_size:.4f}")

    banner(4, "fine-tuning on paraphrase pairs (KJV vs WEB wording)")
    finetune_dir = run_dir / "paraphrase"
    if (finetune_dir / "best" / "task.json").exists() and (finetune_dir / "metrics.json").exists():
        print(f"reusing {finetune_dir}")
    else:
        run_tool("finetune", settings["finetune"] + [
            f"--init_checkpoint={encoder_dir}", f"--output_dir={finetune_dir}"])
    metrics = json.loads((finetune_dir / "metrics.json").read_text())
    accuracy = metrics["eval"]["accuracy"]
    baseline = metrics["baselines"]["majority_accuracy"]
    print(f"dev accuracy {accuracy:.3f} vs majority-class baseline {baseline:.3f}"
          + (f"; test accuracy {metrics['test']['accuracy']:.3f}" if "test" in metrics else ""))

    banner(5, "export for TF Serving")
    export_base = pathlib.Path(FLAGS.export_dir_base)
    if not export_base.is_absolute():
        export_base = REPO / export_base
    model_base = export_base / "paraphrase"
    versions = sorted(int(v.name) for v in model_base.glob("*") if v.name.isdigit())
    best_time = (finetune_dir / "best" / "task.json").stat().st_mtime
    if versions and (model_base / str(versions[-1])).stat().st_mtime > best_time:
        print(f"reusing {model_base / str(versions[-1])}")
    else:
        run_tool("export", [f"--task_dir={finetune_dir / 'best'}", "--model_name=paraphrase",
                            f"--export_dir_base={export_base}"])
        versions = sorted(int(v.name) for v in model_base.glob("*") if v.name.isdigit())
    version_dir = model_base / str(versions[-1])
    metadata = json.loads((version_dir / "assets" / "bert_keras_metadata.json").read_text())
    print(f"{version_dir}: signatures {sorted(metadata.get('signatures', {}))}")

    banner(6, "predictions of the exported model (fresh process, TF + tf-text only)")
    pairs = example_pairs(FLAGS.num_examples)
    inputs = run_dir / "example_pairs.tsv"
    inputs.write_text("".join(f"{a}\t{b}\n" for _, a, b in pairs), encoding="utf-8")
    output = run_tool("predict", [f"--model_dir={version_dir}", f"--input={inputs}"], capture=True)
    labels = metadata.get("labels") or []
    for (gold, text_a, text_b), line in zip(pairs, output.strip().splitlines()):
        out = json.loads(line)["outputs"]
        probability = dict(zip(labels, out["probabilities"]))
        print(f"gold {gold} predicted {out['labels']} p(same verse)={probability.get('1', 0):.3f}"
              f"\n  A: {text_a[:100]}\n  B: {text_b[:100]}")
    print(f"\nDone in {time.time() - started:.0f} s. Serve it: see docs/serving.md.")


def run():
    absl_main.run(main, __doc__)


if __name__ == "__main__":
    run()
