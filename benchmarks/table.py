"""The Results table of benchmarks/run.py: measured rows to Markdown and back.

The parser reads a table this module wrote, so a new run can compare itself with the previous
run of the same CPU kind (BENCHMARKS.md keeps only the Markdown, not the rows). A row's
section and shape are written only where they change (blank: the row above's), which keeps
the file about a quarter smaller; the parser fills them back in.

>>> rows = [dict(section="encoder", shape="bert_tiny 32x128", system="bert_keras f32",
...              metric="sequences/s", value=98.31, mean=90.0, cpu=48.6, mfu=0.8),
...         dict(section="encoder", shape="bert_tiny 32x128", system="HF torch f32",
...              metric="sequences/s", value=90.0)]
>>> render_results(rows).splitlines()[3][:41]
'|  |  | HF torch f32 | sequences/s | 90.0'
>>> back = parse_results(render_results(rows))
>>> back[0]["value"], back[0]["mfu"], back[0]["HF best"], back[1]["shape"]
(98.3, 0.8, None, 'bert_tiny 32x128')
"""

import re

# The peers each row is compared with (columns `× peer`): a name and which systems it covers.
PEERS = (("keras-hub default", lambda s: s.startswith("keras-hub default")),
         ("keras-hub best", lambda s: s.startswith("keras-hub")),
         ("HF f32", lambda s: s.startswith("HF torch f32")),
         ("HF best", lambda s: s.startswith("HF")))

# (header, row key, format, scale of the figure shown) of the numeric columns after `metric`.
NUMBER_COLUMNS = (("value", "value", ".1f", 1), ("mean", "mean", ".1f", 1),
                  ("per CPU-s", "cpu", ".1f", 1), ("model TFLOP/s", "tflops", ".2f", 1),
                  ("% peak", "mfu", ".0f", 100)) + tuple(
                      (f"× {peer}", peer, ".2f", 1) for peer, _ in PEERS)
# Sections written before the peak became the fastest matmul of either dtype.
OLD_PEAK_HEADER = "% bf16 peak"
TEXT_COLUMNS = ("section", "shape", "system", "metric")
FAILED = "failed: "
# A cell boundary: a `|` that is not escaped as `\|` (error messages may hold pipes).
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def is_latency(row):
    """Whether lower is better: latencies, and sizes ("MB on disk")."""
    return row["metric"].startswith(("latency", "MB"))


def rate(row, basis="value"):
    """The figure compared: `basis` ("value" or "cpu"); latencies always by value."""
    return row.get("value") if is_latency(row) else row.get(basis)


def _cell(text):
    return str(text).replace("|", r"\|").replace("\n", " ")


def _number(value, spec, scale):
    return "" if value is None else format(value * scale, spec)


def render_results(rows):
    """The Markdown table of `rows` (dicts of benchmarks/run.py, after finish_rows)."""
    headers = TEXT_COLUMNS + tuple(header for header, *_ in NUMBER_COLUMNS)
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "---|" * len(TEXT_COLUMNS) + "---:|" * len(NUMBER_COLUMNS)]
    above = None  # the section and shape of the row above
    for row in rows:
        cells = [_cell(row[key]) for key in TEXT_COLUMNS]
        cells[:2], above = (["", ""] if cells[:2] == above else cells[:2]), cells[:2]
        for header, key, spec, scale in NUMBER_COLUMNS:
            if key == "value" and not row.get("value"):
                cells.append(_cell(f"{FAILED}{row.get('error')}"))
            else:
                cells.append(_number(row.get(key), spec, scale))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _split_row(line):
    cells = _CELL_SPLIT.split(line.strip())[1:-1]
    return [cell.strip().replace(r"\|", "|") for cell in cells]


def parse_results(text):
    """The rows of the first Results table in `text` (figures as shown, rounded); [] if none.

    Columns are found by their headers, so a table with fewer or reordered peer columns
    still parses; a `failed: ...` value comes back as value None and the error; a blank
    section or shape is the row above's.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if _split_row(line)[:len(TEXT_COLUMNS)] == list(TEXT_COLUMNS)), None)
    if start is None:
        return []
    headers = _split_row(lines[start])
    numbers = {header: (key, scale) for header, key, _, scale in NUMBER_COLUMNS}
    numbers[OLD_PEAK_HEADER] = numbers["% peak"]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        row = {}
        for header, cell in zip(headers, _split_row(line)):
            if header in TEXT_COLUMNS:
                row[header] = cell or (rows[-1][header] if header in TEXT_COLUMNS[:2] and rows
                                       else cell)
            elif header in numbers:
                key, scale = numbers[header]
                if key == "value" and cell.startswith(FAILED):
                    row["value"], row["error"] = None, cell[len(FAILED):]
                else:
                    row[key] = float(cell.replace(",", "")) / scale if cell else None
        rows.append(row)
    return rows
