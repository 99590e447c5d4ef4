"""Reading fine-tuning task files: globs, gzip / UTF-8 text, lines, delimited rows, JSON lines.

The format readers of the task types (`tasks/<name>/reader.py`) build on these; every error
names the file and line it comes from.
Paths go through `tf.io.gfile`, so gs:// works too.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from typing import Iterator

import tensorflow as tf

from bert_keras import text_files
from bert_keras.errors import InputError
from bert_keras.text_files import TextFileError

_ROW_REPR_CHARS = 200


class TaskFileError(InputError):
    """A fine-tuning task file that cannot be used as it is (a malformed row, a missing field,
    an empty label, a header row read as data): the message names the file, the line and the
    value, and the tools print it in one line."""


def row_repr(row) -> str:
    """`repr(row)`, cut to _ROW_REPR_CHARS: a row quoted in an error message."""
    text = repr(row)
    return text if len(text) <= _ROW_REPR_CHARS else text[:_ROW_REPR_CHARS] + "..."


def read_text(path: str) -> str:
    """A whole UTF-8 file (gzip or plain) as str, under the text-file policy of
    `bert_keras.text_files` with no bad line allowed (every row of a task file is a labeled
    example: skipping one would change the task): TextFileError (a ValueError) naming the file
    for binary data and no text, and the file and line for bad bytes."""
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise TextFileError(f"{path}: corrupt gzip data ({e})") from e
    text_files.sniff(path, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TextFileError(
            f"{path}:{line}: invalid UTF-8 ({e.reason}) at byte {e.start}: "
            f"{data[max(0, e.start - 20):e.start + 20]!r}"
        ) from e
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise TextFileError(f"{path} is empty")
    return text


def file_lines(path: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline) for every line of a file."""
    text = read_text(path)
    # split("\n"), not splitlines(): text may hold U+2028, U+0085, form feeds.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines, start=1):
        yield i, line.removesuffix("\r")


def delimited_rows(path: str, delimiter: str,
                   blank_lines: list | None = None) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a delimited file; empty lines skipped (their numbers appended
    to `blank_lines` when given).

    Tab: split on tabs, quotes are literal (GLUE's convention). Anything else: the
    csv module with standard double-quote quoting (fields may span lines).
    """
    if delimiter == "\t":
        for line_no, line in file_lines(path):
            if line.strip():
                yield line_no, line.split("\t")
            elif blank_lines is not None:
                blank_lines.append(line_no)
        return
    reader = csv.reader(io.StringIO(read_text(path), newline=""), delimiter=delimiter)
    start = 1
    try:
        for row in reader:
            if row and any(field.strip() for field in row):
                yield start, row
            elif blank_lines is not None:
                blank_lines.append(start)
            start = reader.line_num + 1
    except csv.Error as e:
        raise TaskFileError(f"{path}:{start}: malformed CSV ({e})") from e


def header_names(rows: Iterator[tuple[int, list[str]]], path: str,
                 header: bool) -> list[str] | None:
    """The column names of a file read with a header row (taken from `rows`), None without
    one; TaskFileError for a file that has not even the header."""
    if not header:
        return None
    first = next(rows, None)
    if first is None:
        raise TaskFileError(f"{path} is empty")
    return [name.strip() for name in first[1]]


def json_lines(path: str, blank_lines: list | None = None) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSON lines file; empty lines skipped (their numbers appended
    to `blank_lines` when given)."""
    for line_no, line in file_lines(path):
        if not line.strip():
            if blank_lines is not None:
                blank_lines.append(line_no)
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskFileError(
                f"{path}:{line_no}: invalid JSON ({e.msg}): {row_repr(line)}") from None
        if not isinstance(obj, dict):
            raise TaskFileError(f"{path}:{line_no}: expected a JSON object, got {row_repr(obj)}")
        yield line_no, obj


def required_field(obj: dict, name: str, where: str):
    """`obj[name]`; TaskFileError naming `where` and the row when the field is missing."""
    if name not in obj:
        raise TaskFileError(f"{where}: missing field {name!r} in {row_repr(obj)}")
    return obj[name]


def resolve_column(column, header: list[str] | None, num_columns: int, what: str, path: str):
    """The index of a TSV/CSV column given by index (negative counts from the end) or header
    name (None: None); TaskFileError naming the flag `what` when it is not in the file."""
    if column is None:
        return None
    if isinstance(column, str):
        if header is None:
            raise TaskFileError(
                f"{what}={column!r} is a column name, but {path} is read without a header")
        if column not in header:
            raise TaskFileError(f"{what}={column!r} is not in the header of {path}: {header}")
        return header.index(column)
    index = int(column)
    if not -num_columns <= index < num_columns:
        raise TaskFileError(
            f"{what}={column} is out of range for {path}, which has {num_columns} columns")
    return index % num_columns


__all__ = [
    "TaskFileError",
    "read_text",
    "row_repr",
    "file_lines",
    "delimited_rows",
    "header_names",
    "json_lines",
    "required_field",
    "resolve_column",
]
