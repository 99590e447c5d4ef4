r"""Benchmarks bert_keras against keras-hub and Hugging Face PyTorch on this machine.

Every system runs in its own subprocess on the same inputs, and the systems of a comparison
are interleaved over --rounds rounds, so ratios come from one run on one machine; each
figure is the best (fastest) of its rounds, which is the least disturbed by other work on
the machine.

--output (BENCHMARKS.md) holds one section per CPU kind (AMX, AVX512-BF16, AVX512, AVX2,
other: the bfloat16 hardware and vector width), then hand-written sections. A run rewrites
only the section of this machine's kind, or adds it: the exact command, the machine, the
date, the versions and a Goals table (the goals of benchmarks/goals.json: met / missed / not
measured); the whole section, its Results table too, goes on the kind's page
docs/benchmarks/<kind>.md. Every other byte of the file is kept (benchmarks/file.py).
The one command that regenerates this machine's section, run from the repository root in the
benchmark environment (torch, transformers and keras-hub next to bert_keras:
`pip install -e ".[bench]"`):

  python -m benchmarks.run --sections=peak,encoder,pretrain,finetune,data,export \
      --train_presets=bert_L-4_H-512,bert_base --rounds=1 --seconds=5

Sections: peak (matmul GFLOP/s), encoder (inference, fixed 32x128 and real sentences),
pretrain, finetune, data, export, int8, modernbert (ModernBERT-base against transformers'
PyTorch ModernBertModel: 8x512, mixed lengths, one 8,192-token document, a train step;
benchmarks/modernbert.py), deberta (DeBERTa-v3-base against transformers' PyTorch
DebertaV2Model: 32x128, 8x512, the export's batch-1 latency, a train step;
benchmarks/deberta.py). A section whose bert_keras module is not there yet is
reported as such and skipped. --rows_json=FILE also saves the measured rows (with the
machine); --render_from=FILE writes the section from such a file without running anything;
--output='' prints the section only (compared with the repository's BENCHMARKS.md).
--max_isa=AVX2 measures this machine as an AVX2-only CPU (oneDNN's, MKL's, PyTorch's and
XLA's documented instruction-set limits, for every system alike) and writes the AVX2 section;
TensorFlow's bfloat16 and XLA rows, which no cap reaches, are left out there. --max_isa=AVX512
measures it as an AVX-512 CPU without bfloat16 instructions (Skylake-SP to Ice Lake) and
writes the AVX512 section, without TensorFlow's XLA rows.

This file is the command (its flags and main); the measurements, the report and the file
layout are the other modules of benchmarks/ (its __init__ lists them). benchmarks/ is not
installed with bert_keras: run it as a module from the repository root, as above.
"""

import json
import pathlib
import sys

from absl import app, flags

# First: bert_keras' CPU-kernel default (oneDNN on AVX2-only CPUs too), which every worker
# inherits, so each TensorFlow system runs the kernels a bert_keras user gets.
import bert_keras  # noqa: F401

# isort: split
from benchmarks import file, flops, machine, report, sections, table
from benchmarks.inputs import REPO

FLAGS = flags.FLAGS
flags.DEFINE_list("sections", ["peak", "encoder"], f"Sections to run, from {sections.SECTIONS}.")
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
flags.DEFINE_string("notes", "", "Markdown file whose text, as a Notes section, replaces "
                    "everything after the CPU kinds' sections; default: keep it as it is.")
flags.DEFINE_enum("ratio_basis", "value", ["value", "cpu"],
                  "Rate behind the ratios and % of peak: 'value' (wall clock, best pass) on a "
                  "quiet machine; 'cpu' (work per CPU-second of the process) on a shared one.")
flags.DEFINE_string("rows_json", "", "Also write the measured rows (JSON) to this file.")
flags.DEFINE_string("render_from", "", "Render a rows JSON written by --rows_json (no runs).")
flags.DEFINE_enum("max_isa", "", ["", *machine.ISA_CAPS],
                  "Measure as an older CPU: caps oneDNN, MKL, PyTorch's and XLA's kernels at "
                  "this instruction set (AVX2, AVX512: that kind's section on any newer x86 "
                  "machine).")
flags.DEFINE_string("worker", "", "Internal: JSON spec of one measurement to run and print.")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.max_isa:
        machine.cap_isa(FLAGS.max_isa)
    if FLAGS.worker:
        spec = json.loads(FLAGS.worker)
        print("RESULT " + json.dumps(sections.WORKERS[spec["worker"]](spec)), flush=True)
        return
    for section in FLAGS.sections:
        if sections.missing(section):
            raise app.UsageError(f"--sections: {sections.missing(section)}")
    for preset in FLAGS.presets:
        flops.preset_shape(preset)  # an unknown preset fails here, before any run
    command = " ".join(["python -m benchmarks.run"] + sys.argv[1:])
    # Read before the run, so a wrong path fails now rather than after the measurements.
    notes = "## Notes\n\n" + pathlib.Path(FLAGS.notes).read_text() if FLAGS.notes else None
    if FLAGS.render_from:
        saved = json.loads(pathlib.Path(FLAGS.render_from).read_text())
        rows, command = saved.pop("rows"), saved["command"]
        FLAGS.rounds = saved.get("rounds", FLAGS.rounds)
        # A rows file from before the machine was saved with it: this machine describes it.
        run = saved if "kind" in saved else machine.describe_run(command, FLAGS.rounds)
    else:
        rows = sections.run_sections(FLAGS.sections, FLAGS.presets, FLAGS.seconds)
        run = machine.describe_run(command, FLAGS.rounds)
        if FLAGS.rows_json:
            pathlib.Path(FLAGS.rows_json).write_text(json.dumps(dict(run, rows=rows)))
    run["basis"] = FLAGS.ratio_basis
    write_section(report.finish_rows(rows, FLAGS.ratio_basis), run, notes)


def write_section(rows, run, notes):
    """Prints this run's section, puts it whole on its kind's page (docs/benchmarks/) and its
    summary in --output in place of its kind's old one (`notes`: what replaces the
    hand-written sections after the kinds, or None to keep them)."""
    path = REPO / (FLAGS.output or "BENCHMARKS.md")
    kind = run["kind"]
    text = path.read_text() if path.exists() else ""
    page = path.parent / file.page_path(kind)
    old_section = (file.section_of(page.read_text(), kind) if page.exists()
                   else file.section_of(text, kind))
    previous = table.parse_results(old_section) if old_section else None
    section = report.render_section(rows, previous, run)
    print(section)
    if FLAGS.output:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(file.page(kind, section))
        path.write_text(file.replace_section(text, kind, file.summary(kind, section), notes,
                                             order=machine.KIND_ORDER))


def run():
    """python -m benchmarks.run"""
    app.run(main)


if __name__ == "__main__":
    run()
