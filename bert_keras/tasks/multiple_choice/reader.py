"""SWAG-style multiple-choice files -> `MultipleChoiceExample`s: a context, K >= 2 endings,
the index of the right one.

CSV / TSV: a context column, K ending columns, a label column (header optional; columns by
index or header name). Without `ending_columns`, a file with a header takes its columns
named ending0, ending1, ... (SWAG's names), one without takes every column but the context
and the label. JSON lines: {"context": str, "choices": [str, ...], "label": int} (field
names are options). Every error names the file, the line and the value.

>>> import gzip, json, tempfile
>>> path = tempfile.mktemp(suffix=".jsonl")
>>> with open(path, "w") as f:
...     _ = f.write(json.dumps({"context": "He wept.", "choices": ["A.", "B."], "label": 1}))
>>> read_choices_jsonl(path, text_a_field="context")[0].choices
['A.', 'B.']
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from bert_keras.data.finetuning import sanity
from bert_keras.data.finetuning.task_files import (
    TaskFileError,
    delimited_rows,
    header_names,
    json_lines,
    required_field,
    resolve_column,
)
from bert_keras.files import expand_patterns

ENDING_PREFIX = "ending"  # SWAG's ending0, ending1, ...


@dataclasses.dataclass
class MultipleChoiceExample:
    """One multiple-choice question: `context`, its `choices` (K endings) and `label`, the
    index of the right choice (None: unlabeled). source: "file:line" it came from."""

    context: str
    choices: list[str]
    label: int | None = None
    source: str | None = dataclasses.field(default=None, compare=False, repr=False)


def parse_label(value, num_choices, where, what):
    """A label (int, or a string of one) as a choice index in [0, num_choices)."""
    text = str(value).strip()
    try:
        label = int(text)
    except ValueError:
        label = None
    if isinstance(value, bool) or label is None or not 0 <= label < num_choices:
        raise TaskFileError(f"{where}: label {value!r} ({what}) is not a choice index in "
                            f"[0, {num_choices})")
    return label


def _check_choices(choices, where):
    if len(choices) < 2:
        raise TaskFileError(f"{where}: {len(choices)} choice(s); a question needs at least 2")


def _ending_columns(ending_columns, names, num_columns, context, label, path):
    """The column indices of the endings (see the module docstring for the default)."""
    if ending_columns is None:
        if names is not None:
            found = sorted((int(n[len(ENDING_PREFIX):]), i) for i, n in enumerate(names)
                           if n.startswith(ENDING_PREFIX) and n[len(ENDING_PREFIX):].isdigit())
            if len(found) < 2:
                raise TaskFileError(f"{path}: no columns ending0, ending1, ... in its header "
                                    f"{names}; name the ending columns (ending_columns)")
            return [i for _, i in found]
        columns = [i for i in range(num_columns) if i not in (context, label)]
        if len(columns) < 2:
            raise TaskFileError(f"{path} has {num_columns} columns: no room for a context, "
                                "2 endings and a label")
        return columns
    if isinstance(ending_columns, str):
        ending_columns = [c.strip() for c in ending_columns.split(",") if c.strip()]
    columns = [resolve_column(c if not str(c).lstrip("-").isdigit() else int(c), names,
                               num_columns, "ending_columns", path) for c in ending_columns]
    if len(columns) < 2:
        raise TaskFileError(f"ending_columns={ending_columns!r} names {len(columns)} column(s) "
                            f"of {path}; a question needs at least 2 endings")
    return columns


def read_choices_delimited(pattern: str | Sequence[str], *, delimiter: str = ",",
                           header: bool = False, text_a_column: int | str = 0,
                           ending_columns: str | Sequence | None = None,
                           label_column: int | str | None = -1,
                           **unused) -> list[MultipleChoiceExample]:
    """Examples from CSV (`delimiter` ",", quoted) or TSV ("\\t") files; `label_column` None
    reads unlabeled data. Other reader options (`unused`: text_b_column, ...) do not apply."""
    examples = []
    for path in expand_patterns(pattern):
        blank_lines = []
        rows = delimited_rows(path, delimiter, blank_lines)
        names = header_names(rows, path, header)
        columns, n_before = None, len(examples)
        for line_no, row in rows:
            where = f"{path}:{line_no}"
            if columns is None:
                width = len(names) if names is not None else len(row)
                context = resolve_column(text_a_column, names, width, "text_a_column", path)
                label = resolve_column(label_column, names, width, "label_column", path)
                endings = _ending_columns(ending_columns, names, width, context, label, path)
                columns = width, context, endings, label
            width, context, endings, label = columns
            if len(row) != width:
                raise TaskFileError(f"{where}: expected {width} columns, got {len(row)}")
            choices = [row[i] for i in endings]
            examples.append(MultipleChoiceExample(
                row[context], choices,
                None if label is None else parse_label(row[label], len(choices), where,
                                                       f"column {label}"),
                source=where))
        if len(examples) == n_before:
            raise TaskFileError(f"{path} has no data rows")
        sanity.report_blank_lines(path, blank_lines)
    return examples


def read_choices_jsonl(pattern: str | Sequence[str], *, text_a_field: str = "context",
                       choices_field: str = "choices", label_field: str | None = "label",
                       **unused) -> list[MultipleChoiceExample]:
    """Examples from JSON lines: the context, a list of K >= 2 strings, an int label (or a
    string of one); `label_field` None reads unlabeled data."""
    examples = []
    for path in expand_patterns(pattern):
        n_before, blank_lines = len(examples), []
        for line_no, obj in json_lines(path, blank_lines):
            where = f"{path}:{line_no}"
            choices = required_field(obj, choices_field, where)
            if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
                raise TaskFileError(f"{where}: field {choices_field!r} is {choices!r}, not a "
                                    "list of strings")
            _check_choices(choices, where)
            label = None
            if label_field is not None:
                label = parse_label(required_field(obj, label_field, where), len(choices), where,
                                    f"field {label_field!r}")
            context = required_field(obj, text_a_field, where)
            if not isinstance(context, str):
                raise TaskFileError(f"{where}: field {text_a_field!r} is {context!r}, not a "
                                    "string")
            examples.append(MultipleChoiceExample(context, choices, label, source=where))
        if len(examples) == n_before:
            raise TaskFileError(f"{path} has no data rows")
        sanity.report_blank_lines(path, blank_lines)
    return examples
