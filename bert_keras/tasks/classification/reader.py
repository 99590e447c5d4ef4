"""Classification readers: TSV / CSV and JSON lines files -> `ClassificationExample` lists.

Single-label (str), multi-label (list of str) or regression (float) labels; columns or
fields by index or name; unlabeled data with label_column / label_field None.

Two checks keep a file's mistakes from becoming classes (each a `TaskFileError` naming the
file, the line and the value):

- an empty (or JSON null) single-label or regression label: a missing value, never a class.
  A multi-label row may have no labels (its target is all zeros).
- a header row read as data (no `header=True`): the first row's label occurs in no other
  row of the file and it or another field of the row names a column ("label", "quality",
  "text", "sentence1", ...), or it is the only non-number among integer labels (GLUE's
  "Quality" over 0/1), or the row is unlike the rows below it (`sanity.check_header_row`).

Blank lines are skipped, and counted in a warning (`sanity.report_blank_lines`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from bert_keras.data.finetuning import sanity
from bert_keras.data.finetuning.task_files import (
    TaskFileError,
    delimited_rows,
    header_names,
    json_lines,
    required_field,
    resolve_column,
    row_repr,
)
from bert_keras.files import expand_patterns

LABEL_TYPES = ("single", "multi", "regression")


@dataclasses.dataclass
class ClassificationExample:
    """One classification / regression example.

    label: str (single-label), list[str] (multi-label), float (regression), or
    None (unlabeled, e.g. a test set). source: "file:line" it came from.
    """

    text_a: str
    text_b: str | None = None
    label: Any = None
    source: str | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def texts(self):
        """The texts that must not be empty (`sanity.drop_empty_texts`): text_a (and text_b)."""
        return [self.text_a] if self.text_b is None else [self.text_a, self.text_b]

    @property
    def multi_label(self):
        """Whether its label is a list of labels (`LabelMap(multi_label=...)`)."""
        return isinstance(self.label, list)

    def map_labels(self):
        """Its label(s) for `LabelMap.from_examples`; ValueError for an example without a class
        label (unlabeled, or a regression value)."""
        if self.label is None or isinstance(self.label, float):
            raise ValueError(f"example from {self.source} has label {self.label!r}: unlabeled "
                             "and regression examples need no LabelMap")
        return self.label if self.multi_label else [self.label]



def _parse_label(value: str, label_type: str, label_delimiter: str, where: str, column: str):
    value = value.strip()
    if not value and label_type != "multi":
        raise TaskFileError(
            f"{where}: empty label ({column}); every row of a labeled file needs one "
            "(a missing value?)")
    if label_type == "single":
        return value
    if label_type == "multi":  # no labels at all is a valid multi-label target
        return [v.strip() for v in value.split(label_delimiter) if v.strip()]
    try:
        return float(value)
    except ValueError:
        raise TaskFileError(f"{where}: regression label {value!r} is not a number") from None


def _check_label_type(label_type: str) -> None:
    if label_type not in LABEL_TYPES:
        raise ValueError(f"label_type must be one of {LABEL_TYPES}, got {label_type!r}")


def read_delimited(
    pattern: str | Sequence[str],
    *,
    delimiter: str = "\t",
    header: bool = False,
    text_a_column: int | str = 1,
    text_b_column: int | str | None = None,
    label_column: int | str | None = 0,
    label_type: str = "single",
    label_delimiter: str = ",",
) -> list[ClassificationExample]:
    """Classification examples from TSV/CSV files.

    Args:
      pattern: glob or list of globs; files may be gzip-compressed.
      delimiter: "\\t" (no quoting, as GLUE) or "," etc. (csv quoting).
      header: whether the first row of every file names the columns.
      text_a_column, text_b_column, label_column: column index (negative counts
        from the end) or header name; text_b_column=None for single sentences,
        label_column=None for unlabeled data (label=None).
      label_type: "single" (str), "multi" (list of str split on
        `label_delimiter`) or "regression" (float).

    Every row must have as many columns as the header (or, without a header, as
    the file's first row); otherwise TaskFileError (a ValueError) names file, line and row.
    Empty labels and, without a header, a header row are refused (module docstring).
    """
    _check_label_type(label_type)
    examples = []
    for path in expand_patterns(pattern):
        blank_lines = []
        rows = delimited_rows(path, delimiter, blank_lines)
        names = header_names(rows, path, header)
        columns = None
        num_columns = len(names) if names is not None else None
        parsed = []  # (where, text_a, text_b, label text or None)
        for line_no, row in rows:
            if num_columns is None:
                num_columns = len(row)
            if len(row) != num_columns:
                raise TaskFileError(
                    f"{path}:{line_no}: expected {num_columns} columns, got {len(row)}: "
                    f"{row_repr(row)}"
                )
            if columns is None:
                columns = [
                    resolve_column(c, names, num_columns, what, path)
                    for c, what in (
                        (text_a_column, "text_a_column"),
                        (text_b_column, "text_b_column"),
                        (label_column, "label_column"),
                    )
                ]
            a, b, lab = columns
            parsed.append((f"{path}:{line_no}", row[a], None if b is None else row[b],
                           None if lab is None else row[lab]))
            if len(parsed) == 1:
                first_row = row
        if not parsed:
            raise TaskFileError(f"{path} has no data rows")
        sanity.report_blank_lines(path, blank_lines)
        if columns[2] is None:
            examples.extend(ClassificationExample(a, b, None, source=where)
                            for where, a, b, _ in parsed)
            continue
        if names is None:
            sanity.check_header_row(first_row, [(where, label) for where, _, _, label in parsed],
                                    numeric_labels=label_type == "regression")
        column = f"column {columns[2]}"
        examples.extend(
            ClassificationExample(
                a, b, _parse_label(label, label_type, label_delimiter, where, column), source=where)
            for where, a, b, label in parsed)
    return examples


def read_tsv(pattern: str | Sequence[str], **kwargs) -> list[ClassificationExample]:
    """`read_delimited` with delimiter="\\t". Bundled files: `label<TAB>text_a[<TAB>text_b]`.

    Example:
        >>> from bert_keras.data.finetuning.bundled import bundled_task_path
        >>> ex = read_tsv(bundled_task_path("wordnet_topics", "dev"))  # label 0, text_a 1
        >>> ex[0].label
        'noun.person'
    """
    return read_delimited(pattern, delimiter="\t", **kwargs)


def read_csv(pattern: str | Sequence[str], **kwargs) -> list[ClassificationExample]:
    """`read_delimited` with delimiter="," and standard CSV quoting."""
    return read_delimited(pattern, delimiter=",", **kwargs)


def read_jsonl(
    pattern: str | Sequence[str],
    *,
    text_a_field: str = "text",
    text_b_field: str | None = None,
    label_field: str | None = "label",
    label_type: str = "single",
    label_delimiter: str = ",",
) -> list[ClassificationExample]:
    """Classification examples from JSON lines (one object per line).

    Labels are converted to str ("single"; JSON numbers too, so they match TSV
    labels), list of str ("multi": a JSON list or a delimited string) or float
    ("regression"). label_field=None reads unlabeled data.
    """
    _check_label_type(label_type)
    examples = []
    for path in expand_patterns(pattern):
        n_before, blank_lines = len(examples), []
        for line_no, obj in json_lines(path, blank_lines):
            where = f"{path}:{line_no}"
            label = None
            if label_field is not None:
                raw = required_field(obj, label_field, where)
                if raw is None:
                    raise TaskFileError(f"{where}: label field {label_field!r} is null; every "
                                        "row of a labeled file needs a label")
                if label_type == "multi" and isinstance(raw, list):
                    label = [str(v) for v in raw]
                else:
                    label = _parse_label(str(raw), label_type, label_delimiter, where,
                                         f"field {label_field!r}")
            text_b = None if text_b_field is None else str(required_field(obj, text_b_field, where))
            examples.append(
                ClassificationExample(str(required_field(obj, text_a_field, where)), text_b, label,
                                      source=where)
            )
        if len(examples) == n_before:
            raise TaskFileError(f"{path} has no data rows")
        sanity.report_blank_lines(path, blank_lines)
    return examples


LABEL_COLUMN_NAMES = sanity.LABEL_COLUMN_NAMES  # where it was defined before

__all__ = [
    "ClassificationExample",
    "LABEL_TYPES",
    "read_delimited",
    "read_tsv",
    "read_csv",
    "read_jsonl",
]
