"""The Goals table of benchmarks/run.py, computed from one run's rows against the goals that
benchmarks/goals.json states (the data; this module only computes them).

Each goal is met, missed, or not measured (and what is missing). A system family "at its
best" is its fastest row in the group (same section, shape and metric): bert_keras, HF and
keras-hub are the systems whose names start with those words. Rows are those of
report.finish_rows (or parsed back from a Results table), so `mfu` is there when
the run measured the matmul peak (`matmul_peak`).

>>> rows = [dict(section="encoder", shape="bert_tiny 32x128", system=system,
...              metric="sequences/s", value=value) for system, value in
...         (("bert_keras bf16", 98.3), ("HF torch bf16 weights", 90.6))]
>>> goals(rows)[0]
Goal(goal='encoder inference bert_tiny 32x128: best bert_keras ≥ 1.00x best HF', \
measured='1.08x (98.3 vs 90.6 seq/s: bert_keras bf16 vs HF torch bf16 weights)', status='met')
"""

import collections
import json
import pathlib

from benchmarks.table import is_latency, rate

Goal = collections.namedtuple("Goal", "goal measured status")

GOALS_FILE = pathlib.Path(__file__).resolve().with_name("goals.json")
BERT_KERAS = "bert_keras"
TRAIN_SECTIONS = (("pretrain", "pretraining train step"), ("finetune", "fine-tuning train step"))


def load(path=GOALS_FILE):
    """The goals of `path` (a dict; goals.json says what each key means)."""
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))


def unit(metric):
    return metric.replace("sequences/s", "seq/s").split(" (")[0]


def best(rows, family, basis="value", word=""):
    """The fastest row (lowest latency) of a family with a figure, or None."""
    found = [row for row in rows if row["system"].startswith(family) and word in row["system"]
             and rate(row, basis)]
    if not found:
        return None
    pick = min if is_latency(found[0]) else max
    return pick(found, key=lambda row: rate(row, basis))


def presets(rows):
    """The presets of the rows, in order: the first word of each model row's shape."""
    found = [row["shape"].split()[0] for row in rows if row["section"] not in ("peak", "data")]
    return list(dict.fromkeys(found))


def groups(rows, section, preset, metric=None, shape_end=""):
    """{shape: rows} of one section and preset (optionally one metric, shapes ending so)."""
    found = {}
    for row in rows:
        if (row["section"] == section and row["shape"].startswith(preset + " ")
                and row["shape"].endswith(shape_end) and metric in (None, row["metric"])):
            found.setdefault(row["shape"], []).append(row)
    return found


def ratio_goal(goal, group, word, peer, least, basis):
    ours, theirs = best(group, BERT_KERAS, basis, word), best(group, peer, basis)
    missing = [name for name, row in ((f"{BERT_KERAS} {word}".strip(), ours), (peer, theirs))
               if row is None]
    if missing:
        return Goal(goal, "", f"not measured (no {' or '.join(missing)} row with a figure)")
    ratio = rate(ours, basis) / rate(theirs, basis)
    measured = (f"{ratio:.2f}x ({rate(ours, basis):.1f} vs {rate(theirs, basis):.1f} "
                f"{unit(ours['metric'])}: {ours['system']} vs {theirs['system']})")
    return Goal(goal, measured, "met" if ratio >= least else "missed")


def throughput_goals(rows, specs, basis):
    found = []
    for spec in specs:
        section, what, word = spec["section"], spec["what"], spec["rows_with"]
        peer, least = spec["peer"], spec["least_ratio"]
        for preset in presets(rows):
            ours = f"best {BERT_KERAS} {word}".strip()
            shapes = groups(rows, section, preset)
            if not shapes and spec.get("skip_unmeasured_presets"):
                continue
            for shape, group in (shapes or {preset: []}).items():
                goal = f"{what} {shape}: {ours} ≥ {least:.2f}x best {peer}"
                if not group:
                    found.append(Goal(goal, "", f"not measured (no {section} rows for {preset})"))
                else:
                    found.append(ratio_goal(goal, group, word, peer, least, basis))
    return found


def matmul_peak(rows, basis="value"):
    """The peak row: the fastest TensorFlow matmul of the run without XLA (the kernels the model
    runs), float32 or bfloat16, whichever the CPU does faster (bfloat16 on AMX and AVX512-BF16,
    float32 on AVX512 and AVX2); None if the run measured none."""
    found = [row for row in rows if row["section"] == "peak" and "XLA" not in row["system"]
             and rate(row, basis)]
    return max(found, key=lambda row: rate(row, basis), default=None)


def share_goal(goal, group, rows, share, basis):
    """The fastest bert_keras row of `group` at >= `share` of the measured matmul peak."""
    ours, peak = best(group, BERT_KERAS, basis), matmul_peak(rows, basis)
    if ours is None:
        return Goal(goal, "", "not measured (no bert_keras rows)")
    if peak is None or ours.get("mfu") is None:
        return Goal(goal, "", "not measured (no matmul peak in this run)")
    measured = (f"{ours['mfu']:.0%} ({ours['system']}: {rate(ours, basis):.1f} "
                f"{unit(ours['metric'])} at {ours['shape']}; peak {rate(peak, basis):.1f} GFLOP/s)")
    return Goal(goal, measured, "met" if ours["mfu"] >= share else "missed")


def peak_share_goal(rows, spec, basis):
    preset, least = spec["preset"], spec["least"]
    goal = f"{preset} inference ≥ {least:.0%} of the measured matmul peak"
    group = sum(groups(rows, "encoder", preset).values(), [])
    if not group:
        return Goal(goal, "", f"not measured (no {preset} encoder rows)")
    return share_goal(goal, group, rows, least, basis)


def train_peak_goals(rows, shares, basis):
    """Each train step shape's best bert_keras row against its preset's share of the peak
    (`shares`: {preset: share}, "*" for the other presets)."""
    found = []
    for section, what in TRAIN_SECTIONS:
        for preset in presets(rows):
            share = shares.get(preset, shares["*"])
            for shape, group in groups(rows, section, preset).items():
                goal = f"{what} {shape}: best {BERT_KERAS} ≥ {share:.0%} of the matmul peak"
                found.append(share_goal(goal, group, rows, share, basis))
    return found


def export_goals(rows, specs):
    """Batch-1 latency of the exports (each spec: a section's), each dtype against the peer
    (PyTorch eager) of the same dtype: bert_keras's p50 and p99 (of one row) both at most the
    peer's."""
    return [goal for spec in specs for goal in _export_goals(rows, spec)]


def _export_goals(rows, spec):
    peer, section = spec["peer"], spec["section"]
    p99 = {(row["shape"], row["system"]): row.get("value") for row in rows
           if row["section"] == section and row["metric"] == "latency p99 ms"}
    found = []
    for preset in presets(rows):
        for dtype in spec["dtypes"]:
            shapes = groups(rows, section, preset, "latency p50 ms", " ids")
            if not shapes and spec.get("skip_unmeasured_presets"):
                continue
            for shape, group in (shapes or {preset: []}).items():
                goal = (f"exported model latency {shape} {dtype}: {BERT_KERAS} p50 and p99 "
                        f"≤ {peer} {dtype}")
                ours, theirs = best(group, BERT_KERAS, word=dtype), best(group, peer, word=dtype)
                if ours is None or theirs is None:
                    found.append(Goal(goal, "", f"not measured (no {dtype} export latency rows "
                                                f"of both {BERT_KERAS} and {peer} for {preset})"))
                    continue
                theirs99 = p99.get((shape, theirs["system"]))

                def meets(row):
                    ours99 = p99.get((shape, row["system"]))
                    return row["value"] <= theirs["value"] and (
                        ours99 is None or theirs99 is None or ours99 <= theirs99)

                # At its best: the fastest row that meets both, if one does.
                meeting = [row for row in group if row["system"].startswith(BERT_KERAS)
                           and dtype in row["system"] and row.get("value") and meets(row)]
                ours = min(meeting, key=lambda row: row["value"]) if meeting else ours
                ours99 = p99.get((shape, ours["system"]))
                measured = (f"{theirs['value'] / ours['value']:.2f}x (p50 {ours['value']:.1f} vs "
                            f"{theirs['value']:.1f} ms; p99 {_ms(ours99)} vs {_ms(theirs99)} "
                            f"ms: {ours['system']} vs {theirs['system']})")
                met = bool(meeting)
                found.append(Goal(goal, measured, "met" if met else "missed"))
    return found


def _ms(value):
    return "?" if value is None else f"{value:.1f}"


def float32_goal(rows, previous, spec, basis):
    """Every bert_keras float32 throughput row at >= the least ratio of the previous run of
    this CPU kind."""
    least = spec["least_ratio"]
    goal = (f"float32 not slower: each {BERT_KERAS} f32 row ≥ {least:.2f}x "
            "the previous run of this CPU kind")
    if not previous:
        return Goal(goal, "", "not measured (no earlier run of this kind)")

    def key(row):
        return (row["section"], row["shape"], row["system"], row["metric"])

    before = {key(row): rate(row, basis) for row in previous if rate(row, basis)}
    pairs = [(rate(row, basis) / before[key(row)], row) for row in rows
             if row["system"].startswith(BERT_KERAS) and "f32" in row["system"].split()
             and not is_latency(row) and rate(row, basis) and key(row) in before]
    if not pairs:
        return Goal(goal, "", f"not measured (no {BERT_KERAS} f32 row in both runs)")
    ratio, row = min(pairs, key=lambda pair: pair[0])
    measured = (f"worst {ratio:.2f}x ({rate(row, basis):.1f} vs {before[key(row)]:.1f} "
                f"{unit(row['metric'])}: {row['section']} {row['shape']} {row['system']}); "
                f"{len(pairs)} rows compared")
    return Goal(goal, measured, "met" if ratio >= least else "missed")


def goals(rows, previous=None, basis="value", spec=None):
    """The goals of one run's rows; `previous`: the rows of the previous run of this CPU kind;
    `spec`: the goals (a dict like goals.json's; default: goals.json)."""
    spec = spec or load()
    return (throughput_goals(rows, spec["inference"], basis)
            + [peak_share_goal(rows, spec["inference_peak_share"], basis)]
            + train_peak_goals(rows, spec["train_peak_share"], basis)
            + throughput_goals(rows, spec["training"], basis)
            + export_goals(rows, spec["export_latency"])
            + [float32_goal(rows, previous, spec["float32_not_slower"], basis)])


def render_goals(found):
    lines = ["| goal | measured | status |", "|---|---|---|"]
    lines += [f"| {goal.goal} | {goal.measured} | {goal.status} |" for goal in found]
    return "\n".join(lines)
