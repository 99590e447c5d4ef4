r"""Benchmarks bert_keras against keras-hub and Hugging Face PyTorch on this machine.

Every system runs in its own subprocess on the same inputs, and the systems of a comparison
are interleaved over --rounds rounds, so ratios come from one run on one machine; each
figure is the best (fastest) of its rounds, which is the least disturbed by other work on
the machine.

--output (BENCHMARKS.md) holds one section per CPU kind (AMX, AVX512-BF16, AVX2, other: the
bfloat16 hardware), then hand-written Notes. A run rewrites only the section of this
machine's kind, or adds it: the exact command, the machine, the date, the versions, a Goals
table (issue 16's goals, met / missed / not measured, tools/benchmark_goals.py) and the
Results table. The other kinds' sections and the Notes are kept byte for byte
(tools/benchmark_file.py). The one command that regenerates this machine's section, run from
the repository root in the benchmark environment (torch, transformers and keras-hub next to
bert_keras: `pip install -e ".[bench]"`):

  python tools/benchmark.py --sections=peak,encoder,pretrain,finetune,data,export \
      --train_presets=bert_L-4_H-512,bert_base --rounds=1 --seconds=5

Sections: peak (matmul GFLOP/s), encoder (inference, fixed 32x128 and real sentences),
pretrain, finetune, data, export. A section whose bert_keras module is not there yet is
reported as such and skipped. --rows_json=FILE also saves the measured rows (with the
machine); --render_from=FILE writes the section from such a file without running anything;
--output='' prints the section only (compared with the repository's BENCHMARKS.md).
"""

import datetime
import json
import pathlib
import sys
import tempfile

from absl import app, flags

# Importing the section modules also registers their section hooks.
from bert_keras_tools import (benchmark_encoder, benchmark_export, benchmark_file,
                              benchmark_flops, benchmark_machine, benchmark_pipeline,
                              benchmark_report, benchmark_table, benchmark_training)
from bert_keras_tools.benchmark_inputs import REPO
from bert_keras_tools.benchmark_runner import SECTION_HOOKS

SECTIONS = ("peak", "encoder", "pretrain", "finetune", "data", "export")

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
flags.DEFINE_string("output", "BENCHMARKS.md", "Markdown file whose section of this CPU kind is "
                    "rewritten (relative to the repository root; '' = print the section only).")
flags.DEFINE_string("notes", "", "Markdown file whose text becomes the Notes section; "
                    "default: keep the Notes section already in --output.")
flags.DEFINE_enum("ratio_basis", "value", ["value", "cpu"],
                  "Rate behind the ratios and % of peak: 'value' (wall clock, best pass) on a "
                  "quiet machine; 'cpu' (work per CPU-second of the process) on a shared one.")
flags.DEFINE_string("rows_json", "", "Also write the measured rows (JSON) to this file.")
flags.DEFINE_string("render_from", "", "Render a rows JSON written by --rows_json (no runs).")
flags.DEFINE_string("worker", "", "Internal: JSON spec of one measurement to run and print.")


# The worker functions, by the name a spec gives (--worker runs one in this process).
WORKERS = {
    "peak": benchmark_flops.run_peak,
    "bert_keras_train": benchmark_training.run_bert_keras_train,
    "keras_hub_train": benchmark_training.run_keras_hub_train,
    "huggingface_train": benchmark_training.run_huggingface_train,
    "data": benchmark_pipeline.run_data_pipeline,
    "keras_hub_data": benchmark_pipeline.run_keras_hub_data,
    "bert_keras_export": benchmark_export.run_bert_keras_export,
    "huggingface_serving": benchmark_export.run_huggingface_serving,
    "bert_keras_encoder": benchmark_encoder.run_bert_keras_encoder,
    "keras_hub_encoder": benchmark_encoder.run_keras_hub_encoder,
    "huggingface_encoder": benchmark_encoder.run_huggingface_encoder,
}


def run_sections(sections, presets, seconds):
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for section in sections:
            if section == "peak":
                rows += benchmark_flops.peak_rows(seconds)
            elif section == "encoder":
                rows += benchmark_encoder.encoder_rows(presets, seconds, workdir)
            else:
                rows += SECTION_HOOKS[section](presets, seconds, workdir)
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
        benchmark_flops.preset_shape(preset)
    command = " ".join(["python tools/benchmark.py"] + sys.argv[1:])
    # Read before the run, so a wrong path fails now rather than after the measurements.
    notes = "## Notes\n\n" + pathlib.Path(FLAGS.notes).read_text() if FLAGS.notes else None
    if FLAGS.render_from:
        saved = json.loads(pathlib.Path(FLAGS.render_from).read_text())
        rows, command = saved.pop("rows"), saved["command"]
        FLAGS.rounds = saved.get("rounds", FLAGS.rounds)
        # A rows file from before the machine was saved with it: this machine describes it.
        run = saved if "kind" in saved else describe_run(command)
    else:
        rows = run_sections(FLAGS.sections, FLAGS.presets, FLAGS.seconds)
        run = describe_run(command)
        if FLAGS.rows_json:
            pathlib.Path(FLAGS.rows_json).write_text(json.dumps(dict(run, rows=rows)))
    run["basis"] = FLAGS.ratio_basis
    write_section(benchmark_report.finish_rows(rows, FLAGS.ratio_basis), run, notes)


def write_section(rows, run, notes):
    """Prints this run's section and puts it in --output in place of its kind's old one
    (`notes`: the new Notes section, or None to keep the file's)."""
    path = REPO / (FLAGS.output or "BENCHMARKS.md")
    text = path.read_text() if path.exists() else ""
    old_section = benchmark_file.section_of(text, run["kind"])
    previous = benchmark_table.parse_results(old_section) if old_section else None
    section = benchmark_report.render_section(rows, previous, run)
    print(section)
    if FLAGS.output:
        path.write_text(benchmark_file.replace_section(text, run["kind"], section, notes))


def describe_run(command):
    """The command and the machine of a run, as its section and --rows_json give them."""
    kind = benchmark_machine.cpu_kind()
    return dict(command=command, rounds=FLAGS.rounds, kind=kind,
                machine=benchmark_machine.machine_line(kind),
                date=datetime.date.today().isoformat(),
                versions=benchmark_machine.versions_line())


def run():
    """Entry point of the console script bert-keras-benchmark."""
    app.run(main)


if __name__ == "__main__":
    run()
