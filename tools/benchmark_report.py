"""The report of tools/benchmark.py: ratios to the peers, model TFLOP/s and % of peak, and the
Markdown table with the command, the machine, the date and the notes."""

import datetime
import os
import pathlib
import platform
import subprocess


PEERS = (("keras-hub default", lambda s: s.startswith("keras-hub default")),
         ("keras-hub best", lambda s: s.startswith("keras-hub")),
         ("HF f32", lambda s: s.startswith("HF torch f32")),
         ("HF best", lambda s: s.startswith("HF")))


def add_ratios(rows, peak_bf16, basis="value"):
    """Adds model TFLOP/s, % of the bf16 peak, and the ratio of each row to each peer's row.

    `basis` picks the rate compared: "value" (wall clock) or "cpu" (per CPU-second; the peak
    is then also per CPU-second, so the % of peak is the same either way on a quiet machine).
    """
    def rate(row):
        return row.get(basis) if not row["metric"].startswith("latency") else row.get("value")

    groups = {}
    for row in rows:
        groups.setdefault((row["section"], row["shape"], row["metric"]), []).append(row)
    for group in groups.values():
        lower_is_better = group[0]["metric"].startswith("latency")
        for peer, matches in PEERS:
            values = [rate(r) for r in group if matches(r["system"]) and rate(r)]
            if not values:
                continue
            best = min(values) if lower_is_better else max(values)
            for row in group:
                if rate(row):
                    row[peer] = best / rate(row) if lower_is_better else rate(row) / best
    for row in rows:
        if row.get("flops") and rate(row):
            row["tflops"] = row["flops"] * rate(row) / 1e12
            if peak_bf16:
                row["mfu"] = row["flops"] * rate(row) / 1e9 / peak_bf16


def machine_line():
    model = platform.processor()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
        flags_line = next((l for l in out.splitlines() if l.startswith("Flags:")), "")
        amx = " with AMX (amx_bf16)" if "amx_bf16" in flags_line else ""
    except OSError:
        amx = ""
    return f"{model}, {os.cpu_count()} CPU cores{amx}, Linux {platform.release()}"


def versions_line():
    import importlib.metadata as md

    parts = []
    for name in ("tensorflow", "keras", "keras-hub", "torch", "transformers"):
        try:
            parts.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(parts)


def fmt(value, spec):
    return "" if value is None else format(value, spec)


def render(rows, command, notes, rounds, ratio_basis):
    lines = [
        "# Benchmarks",
        "",
        f"Command (from the repository root): `{command}`",
        "",
        f"Machine: {machine_line()}. Date: {datetime.date.today().isoformat()}. "
        f"Versions: {versions_line()}.",
        "",
        "Each system runs in its own process on the same inputs; systems are interleaved over "
        f"{rounds} round(s) and each figure is the best round. `value` is the rate of "
        "one pass over the inputs with every batch at its fastest of >= 3 timed calls (the "
        "least disturbed by other work on the machine); `mean` is total work / total wall "
        "time (data section: always the mean). `× peer` = this row / that "
        "peer's row in the same group (for latency: peer / this row), so > 1 means faster; "
        f"ratios, model TFLOP/s and % of peak use the "
        f"`{'value' if ratio_basis == 'value' else 'per CPU-s'}` column. "
        "`% bf16 peak` = model FLOPs (matmuls, padded shape) per second / the measured "
        "bfloat16 matmul peak. `per CPU-s` = the same work per second of this process's CPU "
        "time (all threads): less sensitive to other load on the machine, but it also counts "
        "threads that spin while waiting.",
        "",
        "| section | shape | system | metric | value | mean | per CPU-s | model TFLOP/s | % bf16 peak | "
        + " | ".join(f"× {peer}" for peer, _ in PEERS) + " |",
        "|---|---|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(PEERS),
    ]
    for row in rows:
        value = fmt(row.get("value"), ".1f") if row.get("value") else f"failed: {row.get('error')}"
        lines.append(
            f"| {row['section']} | {row['shape']} | {row['system']} | {row['metric']} | {value} | "
            f"{fmt(row.get('mean'), '.1f')} | {fmt(row.get('cpu'), '.1f')} | "
            f"{fmt(row.get('tflops'), '.2f')} | {fmt(row.get('mfu') and 100 * row['mfu'], '.0f')} | "
            + " | ".join(fmt(row.get(peer), ".2f") for peer, _ in PEERS) + " |")
    lines += ["", "## Notes", "", notes.strip() or "(none)", ""]
    return "\n".join(lines)


def existing_notes(path):
    if not path or not os.path.exists(path):
        return ""
    text = pathlib.Path(path).read_text()
    return text.split("\n## Notes\n", 1)[1] if "\n## Notes\n" in text else ""


def finish_rows(rows, basis):
    """Adds ratios and % of peak to measured rows (the peak row of this run, if any)."""
    peak_bf16 = next((row.get(basis) for row in rows if row["section"] == "peak"
                      and row["system"].endswith("bfloat16")), None)
    add_ratios(rows, peak_bf16, basis)
    return rows
