"""The report of benchmarks/run.py: ratios to the peers, model TFLOP/s and % of peak, and the
section of BENCHMARKS.md for one CPU kind (its command, machine, Goals and Results tables)."""

from benchmarks import goals, table
from benchmarks.table import PEERS, is_latency, rate


def add_ratios(rows, peak, basis="value"):
    """Adds model TFLOP/s, % of the matmul peak (GFLOP/s), and the ratio of each row to each
    peer's row.

    `basis` picks the rate compared: "value" (wall clock) or "cpu" (per CPU-second; the peak
    is then also per CPU-second, so the % of peak is the same either way on a quiet machine).
    """
    groups = {}
    for row in rows:
        groups.setdefault((row["section"], row["shape"], row["metric"]), []).append(row)
    for group in groups.values():
        lower_is_better = is_latency(group[0])
        for peer, matches in PEERS:
            values = [rate(r, basis) for r in group if matches(r["system"]) and rate(r, basis)]
            if not values:
                continue
            best = min(values) if lower_is_better else max(values)
            for row in group:
                if rate(row, basis):
                    row[peer] = (best / rate(row, basis) if lower_is_better
                                 else rate(row, basis) / best)
    for row in rows:
        if row.get("flops") and rate(row, basis):
            row["tflops"] = row["flops"] * rate(row, basis) / 1e12
            if peak:
                row["mfu"] = row["flops"] * rate(row, basis) / 1e9 / peak


def render_section(rows, previous, run):
    """The Markdown section of one CPU kind: command, machine, Goals and Results tables.

    `rows`: finished rows (finish_rows); `previous`: the rows of the section this one replaces
    (for the float32 goal), or None; `run`: dict of command, kind, machine, date, versions,
    rounds and basis ("value" or "cpu", as in add_ratios).
    """
    column = "value" if run["basis"] == "value" else "per CPU-s"
    found = goals.goals(rows, previous, run["basis"])
    lines = [
        f"## CPU kind: {run['kind']}",
        "",
        f"Command (from the repository root): `{run['command']}`",
        "",
        f"Machine: {run['machine']}. Date: {run['date']}. Versions: {run['versions']}. "
        f"Rounds: {run['rounds']}; ratios, model TFLOP/s and % of peak use the `{column}` column.",
        "",
        "### Goals",
        "",
        goals.render_goals(found),
        "",
        "### Results",
        "",
        table.render_results(rows),
        "",
        "",
    ]
    return "\n".join(lines)


def finish_rows(rows, basis):
    """Adds ratios and % of peak to measured rows (the peak row of this run, if any)."""
    peak = goals.matmul_peak(rows, basis)
    add_ratios(rows, peak and rate(peak, basis), basis)
    return rows
