"""The layout of BENCHMARKS.md: an intro, one generated section per CPU kind, then the Notes.

    # Benchmarks              the intro (INTRO for a new file; an existing one is kept)
    ## CPU kind: AMX          written by tools/benchmark.py on an AMX machine
    ## CPU kind: AVX512-BF16  ... on an AVX512-BF16 machine
    ## Notes                  hand-written, down to the end of the file

A run replaces only its own kind's section (or adds it before the Notes), so the figures of
the other kinds, measured on machines this one is not, survive it; every other byte is kept.

>>> text = replace_section("", "AVX2", "## CPU kind: AVX2\\n\\nfigures\\n\\n")
>>> [kind for kind, _ in split(text)[1]], split(text)[2]
(['AVX2'], '## Notes\\n\\n(none)\\n')
"""

import re

KIND_HEADING = re.compile(r"^## CPU kind: (.+)$", re.MULTILINE)
NOTES_HEADING = re.compile(r"^## Notes$", re.MULTILINE)
EMPTY_NOTES = "## Notes\n\n(none)\n"

# The one command that regenerates this machine's section, as the intro gives it.
COMMAND = ("python tools/benchmark.py --sections=peak,encoder,pretrain,finetune,data,export "
           "--train_presets=bert_L-4_H-512,bert_base --rounds=1 --seconds=5")

INTRO = f"""# Benchmarks

bert_keras against keras-hub and Hugging Face PyTorch, one section per CPU kind: the
machine's bfloat16 hardware and vector width (AMX, AVX512-BF16, AVX512 without bfloat16,
AVX2 or other), which decide most of the ratios. To regenerate the section of this machine's
kind, from the repository root in the benchmark environment (`pip install -e ".[bench]"`):

    {COMMAND}

It replaces that section only (or adds it); the other kinds' sections and the Notes at the
end are kept as they are. `--max_isa=AVX2` measures any newer x86 machine as an AVX2-only CPU
(oneDNN's, MKL's, PyTorch's and XLA's documented instruction-set caps, for every system
alike) and writes the AVX2 section; TensorFlow's bfloat16 and XLA rows, which no cap
reaches, are left out there. `--max_isa=AVX512` does the same for an AVX-512 CPU without
bfloat16 instructions (the AVX512 section, XLA's rows left out). Each section gives its exact
command, the machine, the date and the versions, then two tables.

**Goals**: issue 30's goals computed from the section's rows: `met`, `missed` or `not
measured` (and what is missing). A family at its best is its fastest row of the group
(bert_keras, HF and keras-hub: the systems whose names start so); ratios are bert_keras /
peer, so > 1 means bert_keras is faster. "float32 not slower" compares the bert_keras f32
rows with the section this run replaced.

**Results**: each system runs in its own process on the same inputs; systems are
interleaved over the section's rounds and each figure is the best round. `value` is the rate
of one pass over the inputs with every batch at its fastest of >= 3 timed calls (the least
disturbed by other work on the machine); `mean` is total work / total wall time (data
section: always the mean). `× peer` = this row / that peer's row in the same group (for
latency: peer / this row), so > 1 means faster; ratios, model TFLOP/s and % of peak use the
column the section names (`value` on a quiet machine). `% peak` = model FLOPs (matmuls,
padded shape) per second / the measured matmul peak: the fastest TensorFlow matmul row without
XLA, bfloat16 where the CPU has bfloat16 instructions, float32 on AVX512 and AVX2 (older
sections: `% bf16 peak`, the bfloat16 row). `per CPU-s` = the same work per second of this
process's CPU time (all threads): less sensitive to other load on the machine, but it also
counts threads that spin while waiting.

"""


def split(text):
    """(the intro, [(kind, its section's text)] in file order, the Notes to the end).

    Joined back in that order they give `text` again, byte for byte.
    """
    notes = NOTES_HEADING.search(text)
    body, notes = (text[:notes.start()], text[notes.start():]) if notes else (text, "")
    starts = [match.start() for match in KIND_HEADING.finditer(body)]
    kinds = [match.group(1).strip() for match in KIND_HEADING.finditer(body)]
    ends = starts[1:] + [len(body)]
    intro = body[:starts[0]] if starts else body
    return intro, [(kind, body[start:end]) for kind, start, end in zip(kinds, starts, ends)], notes


def section_of(text, kind):
    """The text of `kind`'s section in `text`, or None."""
    return dict(split(text)[1]).get(kind)


def replace_section(text, kind, section, notes=None, order=()):
    """`text` with `kind`'s section replaced by `section`; added if absent, before the first
    section of a kind that `order` (kinds, the newest CPU first) puts after `kind`, else after
    the others.

    `notes` replaces the Notes when given; else they are kept (EMPTY_NOTES if there are none).
    """
    intro, sections, old_notes = split(text)
    intro = intro if intro.strip() else INTRO
    if kind in dict(sections):
        sections = [(name, section if name == kind else body) for name, body in sections]
    else:
        later = set(order[order.index(kind) + 1:]) if kind in order else set()
        at = next((i for i, (name, _) in enumerate(sections) if name in later), len(sections))
        sections.insert(at, (kind, section))
    parts = [intro] + [body for _, body in sections]
    for i in range(1, len(parts)):
        # A heading needs a blank line before it; add one only where a part lacks it.
        if not parts[i - 1].endswith("\n\n"):
            parts[i - 1] += "\n" if parts[i - 1].endswith("\n") else "\n\n"
    body = "".join(parts)
    if not body.endswith("\n\n"):
        body += "\n" if body.endswith("\n") else "\n\n"
    return body + (notes if notes is not None else old_notes or EMPTY_NOTES)
