"""The layout of BENCHMARKS.md: an intro, one generated section per CPU kind, then hand-written
sections; and of the page of each kind's every row, docs/benchmarks/<kind>.md.

    # Benchmarks              the intro (INTRO for a new file; an existing one is kept)
    ## CPU kind: AMX          written by benchmarks/run.py on an AMX machine: its command,
                              machine, Goals, and a link to its page (`summary`)
    ## CPU kind: AVX512-BF16  ... on an AVX512-BF16 machine
    ## Span QA ..., ## Notes  hand-written: from the first other `## ` heading after the
                              kinds to the end of the file

    docs/benchmarks/amx.md    the whole section of the kind, its Results table included
                              (`page_path`, `page`)

A run replaces only its own kind's section (or adds it among them) and its own page, so the
figures of the other kinds, measured on machines this one is not, survive it; every other
byte is kept.

>>> text = replace_section("", "AVX2", "## CPU kind: AVX2\\n\\nfigures\\n\\n")
>>> [kind for kind, _ in split(text)[1]], split(text)[2]
(['AVX2'], '## Notes\\n\\n(none)\\n')
"""

import re

KIND_HEADING = re.compile(r"^## CPU kind: (.+)$", re.MULTILINE)
HEADING = re.compile(r"^## ", re.MULTILINE)
NOTES_HEADING = re.compile(r"^## Notes$", re.MULTILINE)
EMPTY_NOTES = "## Notes\n\n(none)\n"

# The one command that regenerates this machine's section, as the intro gives it.
COMMAND = ("python -m benchmarks.run --sections=peak,encoder,pretrain,finetune,data,export "
           "--train_presets=bert_L-4_H-512,bert_base --rounds=1 --seconds=5")

INTRO = f"""# Benchmarks

bert_keras against keras-hub and Hugging Face PyTorch, one section per CPU kind (AMX,
AVX512-BF16, AVX512, AVX2, other: the bfloat16 hardware and vector width decide most ratios).
To regenerate the section of this machine's kind, from the repository root in the benchmark
environment (`pip install -e ".[bench]"`):

    {COMMAND}

It replaces that section only (or adds it) and the kind's page under docs/benchmarks/ (the
section whole, its Results table of every row); every other byte of this file is kept.
`--max_isa=AVX2` (or `AVX512`) measures a newer x86 CPU as an AVX2-only (or AVX-512 without
bfloat16) one. Each section gives its exact command, the machine, the date and the versions,
its Goals table and the link to its page.

**Goals**: the goals of benchmarks/goals.json, computed from the section's rows: `met`,
`missed` or `not measured` (and what is missing). Ratios are bert_keras / peer, each family
at its best (its fastest row of the group), so > 1 means bert_keras is faster.

**Results**: each system runs in its own process on the same inputs, interleaved over the
section's rounds; each figure is the best round. A blank section or shape is the row
above's. `value`: one pass with every batch at its fastest of >= 3 timed calls; `mean`:
total work / total wall time; `per CPU-s`: work per second of the process's CPU time.
`× peer` = this row / the peer's best row of the group (latency: peer / this row). `% peak`
= model FLOPs per second / the run's fastest TensorFlow matmul without XLA.

"""


RESULTS_HEADING = re.compile(r"^### Results$", re.MULTILINE)


def page_path(kind):
    """The page of a kind's whole section, relative to the repository root."""
    return f"docs/benchmarks/{kind.lower()}.md"


def page(kind, section):
    """The text of `kind`'s page: a title, then its whole section.

    >>> page("AVX2", "## CPU kind: AVX2\\n\\nrows\\n").splitlines()[0]
    '# Benchmarks on CPU kind AVX2'
    """
    return (f"# Benchmarks on CPU kind {kind}\n\nEvery row of the latest run on this kind; "
            "the goals and the other kinds: [BENCHMARKS.md](../../BENCHMARKS.md). Generated "
            "by `python -m benchmarks.run`.\n\n" + section)


def summary(kind, section):
    """`section` without its Results table: its command, machine and Goals, then the link to
    the page that holds every row.

    >>> print(summary("AVX2", "## CPU kind: AVX2\\n\\ngoals\\n\\n### Results\\n\\nrows\\n"))
    ## CPU kind: AVX2
    <BLANKLINE>
    goals
    <BLANKLINE>
    Results, every row: [docs/benchmarks/avx2.md](docs/benchmarks/avx2.md).
    <BLANKLINE>
    <BLANKLINE>
    """
    results = RESULTS_HEADING.search(section)
    head = section[:results.start()] if results else section
    link = page_path(kind)
    return head.rstrip("\n") + f"\n\nResults, every row: [{link}]({link}).\n\n"


def split(text):
    """(the intro, [(kind, its section's text)] in file order, the hand-written rest).

    A kind's section runs to the next `## ` heading; the rest starts at the first one after
    the kinds that is not a kind's. Joined back in that order they give `text` again, byte for
    byte. A file without kind sections (or with a `## Notes` before them) is an intro and,
    from `## Notes` on, the rest.
    """
    first = KIND_HEADING.search(text)
    notes = NOTES_HEADING.search(text)
    if first is None or (notes and notes.start() < first.start()):
        at = notes.start() if notes else len(text)
        return text[:at], [], text[at:]
    starts = [match.start() for match in HEADING.finditer(text, first.start())] + [len(text)]
    sections = []
    for start, end in zip(starts, starts[1:]):
        kind = KIND_HEADING.match(text, start)
        if kind is None:
            return text[:first.start()], sections, text[start:]
        sections.append((kind.group(1).strip(), text[start:end]))
    return text[:first.start()], sections, ""


def section_of(text, kind):
    """The text of `kind`'s section in `text`, or None."""
    return dict(split(text)[1]).get(kind)


def replace_section(text, kind, section, notes=None, order=()):
    """`text` with `kind`'s section replaced by `section`; added if absent, before the first
    section of a kind that `order` (kinds, the newest CPU first) puts after `kind`, else after
    the others.

    `notes` replaces the hand-written rest when given; else it is kept (EMPTY_NOTES if there
    is none).
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
