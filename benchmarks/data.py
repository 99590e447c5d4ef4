r"""Benchmarks pretraining data creation: our static tool vs Google's create_pretraining_data.py.

Both tools run as subprocesses on the bundled corpus (decompressed to a plain text file, since
Google's script does not read .gz) with the same settings and vocab; each is timed (process wall
time, TF start-up included) and its peak RSS read by `/usr/bin/time -v`. The outputs' statistics
(examples, masked per example, NSP label balance, tokens per example) are compared. Also: the
dynamic pipeline's examples/s and what a BERT-base train step (batch 8 x 128) consumes.

Google's script (PyPI bert-tensorflow==1.0.4, TF1 APIs) runs in a separate venv through a wrapper
that imports `tensorflow.compat.v1`, disables v2 behavior and injects it as `tensorflow`; the
package code is not modified.

Settings: both tools' defaults (dupe_factor 10, max_seq_length 128, 20 predictions, 15%), on
the bundled corpus and on it concatenated 4 times (where process start-up weighs less).

Command (BENCHMARKS.md, "Other measurements"), from the repository root in the benchmark
environment (`pip install -e ".[bench]"` installs bert-tensorflow==1.0.4 next to TensorFlow;
--google_python defaults to this Python when it can import Google's package):
  python -m benchmarks.data --repeats=2 --markdown=/tmp/benchmark_data.md
"""

import gzip
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

from absl import app, flags

ROOT = pathlib.Path(__file__).resolve().parents[1]  # benchmarks/ -> the repository root
CORPUS = ROOT / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
VOCAB = ROOT / "bert_keras" / "assets" / "vocab.txt"

_GOOGLE_WRAPPER = """
import runpy, sys
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
sys.modules["tensorflow"] = tf
runpy.run_module("bert.create_pretraining_data", run_name="__main__", alter_sys=True)
"""


def _timed(cmd, log_path):
    """Runs cmd under /usr/bin/time -v -> (wall seconds, peak RSS MiB)."""
    start = time.time()
    with open(log_path, "w") as log:
        proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=log, stderr=subprocess.STDOUT,
                              cwd=ROOT)
    seconds = time.time() - start
    text = open(log_path).read()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed (rc {proc.returncode}); log {log_path}:\n"
                           f"{text[-3000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    return seconds, rss / 1024


def _work_seconds(system, log_path):
    """Seconds of work without process start-up: our summary line; Google's log timestamps."""
    text = open(log_path).read()
    if system == "ours":
        wrote = re.search(r"wrote \d+ instances to \d+ file\(s\) in ([\d.]+) s", text)
        return float(wrote.group(1))
    stamp = r"^I\d{4} (\d\d):(\d\d):([\d.]+) .*"
    t0, t1 = (re.search(stamp + pattern, text, re.M).groups()
              for pattern in (r"Reading from input files", r"Wrote \d+ total instances"))
    to_s = lambda t: int(t[0]) * 3600 + int(t[1]) * 60 + float(t[2])  # noqa: E731
    return (to_s(t1) - to_s(t0)) % 86400


def output_statistics(path, max_seq_length=128, max_predictions_per_seq=20):
    """Counts and means of a pretraining TFRecord file (ours or Google's)."""
    from bert_keras.data.pretraining.records import read_pretraining_tfrecords

    ds = read_pretraining_tfrecords(path, 1024, max_seq_length, max_predictions_per_seq,
                                       is_training=False, drop_remainder=False, as_dict=True)
    n = masked = nsp = tokens = 0
    for b in ds.as_numpy_iterator():
        n += len(b["input_word_ids"])
        masked += b["masked_lm_weights"].sum()
        nsp += b["next_sentence_labels"].sum()
        tokens += b["input_mask"].sum()
    return dict(examples=n, masked_per_example=float(masked / n),
                nsp_random_fraction=float(nsp / n), tokens_per_example=float(tokens / n))


def dynamic_rate(batches=500, batch_size=32):
    """Examples/s of dynamic_pretraining_dataset on the bundled corpus: 16k examples after the
    first batch (more than the 10k shuffle buffer and than one epoch, so production is timed)."""
    from bert_keras.data.pretraining import pipeline as pd
    from bert_keras.text.tokenizer import BertTokenizer

    ds = pd.dynamic_pretraining_dataset(str(CORPUS), BertTokenizer(str(VOCAB)), batch_size,
                                        seed=1)
    it = iter(ds)
    next(it)
    start = time.time()
    for _ in range(batches):
        next(it)
    return batches * batch_size / (time.time() - start)


def bert_base_step_rate(steps=3, batch_size=8, seq_length=128):
    """Examples/s one BERT-base BertPretrainer train step consumes (float32, after warm-up)."""
    import numpy as np

    import bert_keras as bk
    from bert_keras.tasks.pretraining import BertPretrainer

    vocab_size = sum(1 for _ in open(VOCAB, encoding="utf-8"))
    model = BertPretrainer(bk.BertEncoder.from_preset("bert_base", vocab_size=vocab_size))
    rng = np.random.default_rng(0)
    x = {"input_word_ids": rng.integers(5, vocab_size, (batch_size, seq_length)).astype("int32"),
         "input_mask": np.ones((batch_size, seq_length), "int32"),
         "input_type_ids": np.zeros((batch_size, seq_length), "int32"),
         "masked_lm_positions": np.tile(np.arange(1, 21, dtype="int32"), (batch_size, 1))}
    y = {"masked_lm": rng.integers(5, vocab_size, (batch_size, 20)).astype("int32"),
         "next_sentence": rng.integers(0, 2, batch_size).astype("int32")}
    w = {"masked_lm": np.ones((batch_size, 20), "float32")}
    model.train_on_batch(x, y, sample_weight=w)  # build + trace
    start = time.time()
    for _ in range(steps):
        model.train_on_batch(x, y, sample_weight=w)
    return steps * batch_size / (time.time() - start)


def run_benchmark(google_python=None, dupe_factor=10, repeats=2, num_workers=1, work_dir=None,
                  dynamic=True, train_step=True, large_copies=4):
    """Runs the comparison; returns a dict of results (see `markdown`)."""
    work = pathlib.Path(work_dir or tempfile.mkdtemp(prefix="benchmark_data_"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.txt"
    with gzip.open(CORPUS, "rb") as src, open(corpus, "wb") as dst:
        shutil.copyfileobj(src, dst)
    inputs = [(1, corpus)]
    if large_copies > 1:  # the corpus concatenated: start-up matters less
        large = work / f"corpus_x{large_copies}.txt"
        with open(large, "wb") as dst:
            for _ in range(large_copies):
                dst.write(corpus.read_bytes().rstrip(b"\n") + b"\n\n")
        inputs.append((large_copies, large))
    wrapper = work / "google_wrapper.py"
    wrapper.write_text(_GOOGLE_WRAPPER)
    runs = []
    for copies, path in inputs:
        common = [f"--input_file={path}", f"--vocab_file={VOCAB}", "--do_lower_case=True",
                  "--max_seq_length=128", "--max_predictions_per_seq=20",
                  "--masked_lm_prob=0.15", f"--dupe_factor={dupe_factor}",
                  "--short_seq_prob=0.1", "--random_seed=12345"]
        for r in range(repeats):  # back to back, so both see the same machine load
            for system in ("ours", "google") if google_python else ("ours",):
                out = work / f"{system}_x{copies}_{r}.tfrecord"
                log = work / f"{system}_x{copies}_{r}.log"
                if system == "ours":
                    cmd = [sys.executable, str(ROOT / "tools" / "create_pretraining_data.py"),
                           f"--output_file={out}", f"--num_workers={num_workers}"] + common
                else:
                    cmd = [google_python, str(wrapper), f"--output_file={out}"] + common
                seconds, rss = _timed(cmd, log)
                work_s = _work_seconds(system, log)
                stats = output_statistics(str(out))
                out.unlink()
                runs.append(dict(system=system, copies=copies, repeat=r, seconds=seconds,
                                 work_seconds=work_s, peak_rss_mib=rss,
                                 examples_per_second=stats["examples"] / seconds,
                                 work_examples_per_second=stats["examples"] / work_s, **stats))
                print(json.dumps(runs[-1]), flush=True)
    results = dict(dupe_factor=dupe_factor, num_workers=num_workers, runs=runs)
    if google_python:
        pairs = list(zip(runs[0::2], runs[1::2]))  # (ours, google) run back to back
        for key, rate in (("speedup", "examples_per_second"),
                          ("work_speedup", "work_examples_per_second")):
            results[key] = {c: [o[rate] / g[rate] for o, g in pairs if o["copies"] == c]
                            for c, _ in inputs}
    if dynamic:
        results["dynamic_examples_per_second"] = dynamic_rate()
    if train_step:
        results["bert_base_train_examples_per_second"] = bert_base_step_rate()
    return results


def markdown(results):
    """The results as a markdown section for BENCHMARKS.md."""
    lines = ["## Pretraining data (python -m benchmarks.data)", "",
             f"Bundled corpus (World English Bible, 37k lines), bundled 8k vocab, max_seq_length "
             f"128, max_predictions_per_seq 20, masked_lm_prob 0.15, dupe_factor "
             f"{results['dupe_factor']}, short_seq_prob 0.1; ours with --num_workers="
             f"{results['num_workers']}. Wall time of the whole process (TF start-up included), "
             "peak RSS from /usr/bin/time -v; 2 shared CPU cores, so numbers are noisy.", "",
             "'work' excludes process start-up, mostly `import tensorflow` (~1.8 s here): ours "
             "is the tool's summary line (building the tokenizer and tracing included); "
             "Google's is its log timestamps from reading input to the last write (its "
             "tokenizer is built before).", "",
             "Input 'x4' is the corpus concatenated 4 times (documents repeat, so the outputs "
             "differ): start-up weighs less there.", "",
             "| input | run | system | wall s | examples/s (wall) | work s | examples/s (work) "
             "| peak RSS MiB | examples | masked/example | NSP random | tokens/example |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["runs"]:
        lines.append(f"| x{r['copies']} | {r['repeat'] + 1} | {r['system']} | {r['seconds']:.1f} | "
                     f"{r['examples_per_second']:.0f} | {r['work_seconds']:.1f} | "
                     f"{r['work_examples_per_second']:.0f} | {r['peak_rss_mib']:.0f} | "
                     f"{r['examples']} | {r['masked_per_example']:.2f} | "
                     f"{r['nsp_random_fraction']:.3f} | {r['tokens_per_example']:.1f} |")
    if "speedup" in results:
        lines.append("")
        for copies in results["speedup"]:
            lines.append(f"Speed-up (ours / Google) on x{copies}, per repeat: "
                         + ", ".join(f"{v:.1f}x" for v in results["speedup"][copies])
                         + " (wall); " + ", ".join(f"{v:.1f}x" for v in
                                                 results["work_speedup"][copies]) + " (work)")
    if "dynamic_examples_per_second" in results:
        lines += ["", f"Dynamic pipeline (`dynamic_pretraining_dataset`, batch 32): "
                  f"{results['dynamic_examples_per_second']:.0f} examples/s."]
    if "bert_base_train_examples_per_second" in results:
        lines += [f"A BERT-base BertPretrainer train step (float32, batch 8 x 128) consumes "
                  f"{results['bert_base_train_examples_per_second']:.1f} examples/s here."]
    return "\n".join(lines) + "\n"


flags.DEFINE_string("google_python", None, "Python of a venv with bert-tensorflow==1.0.4 "
                    "(default: this one if it has it); without one only our tool runs.")
flags.DEFINE_integer("dupe_factor", 10, "dupe_factor of both tools (10: their default).")
flags.DEFINE_integer("repeats", 2, "Back-to-back repeats of both tools.")
flags.DEFINE_integer("num_workers", 1, "--num_workers of our tool.")
flags.DEFINE_integer("large_copies", 4, "Also run both tools on the corpus concatenated this "
                     "many times (1: not).")
flags.DEFINE_string("work_dir", None, "Where outputs and logs go (default: a temp dir).")
flags.DEFINE_bool("dynamic", True, "Also measure the dynamic pipeline.")
flags.DEFINE_bool("train_step", True, "Also measure a BERT-base train step (slow on CPU).")
flags.DEFINE_string("markdown", None, "Write the markdown section here.")
FLAGS = flags.FLAGS


def _has_google_bert():
    """Whether this Python has Google's bert-tensorflow (the `bert` package)."""
    try:
        return importlib.util.find_spec("bert.create_pretraining_data") is not None
    except ModuleNotFoundError:
        return False


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.google_python and not os.path.exists(FLAGS.google_python):
        raise app.UsageError(f"--google_python={FLAGS.google_python!r} does not exist")
    if FLAGS.repeats < 1 or FLAGS.dupe_factor < 1:
        raise app.UsageError(f"--repeats and --dupe_factor must be >= 1, got {FLAGS.repeats}, "
                             f"{FLAGS.dupe_factor}")
    google_python = FLAGS.google_python
    if google_python is None and _has_google_bert():
        google_python = sys.executable
    results = run_benchmark(google_python, FLAGS.dupe_factor, FLAGS.repeats,
                            FLAGS.num_workers, FLAGS.work_dir, FLAGS.dynamic, FLAGS.train_step,
                            FLAGS.large_copies)
    print(json.dumps(results, indent=1))
    text = markdown(results)
    print(text)
    if FLAGS.markdown:
        pathlib.Path(FLAGS.markdown).write_text(text)
    return results


def run():
    """python -m benchmarks.data"""
    app.run(main)


if __name__ == "__main__":
    run()
