"""Fine-tuning task readers: files -> Python lists of examples (labels to ids: `label_map`).

Readers only parse; tokenization and featurization live elsewhere. Three example
types cover the fine-tuning heads:

* `ClassificationExample(text_a, text_b, label)`: single sentences and pairs,
  single-label (str), multi-label (list of str) or regression (float) labels;
* `TaggingExample(words, tags)`: token classification (NER);
* `SpanExample(qid, question, context, answers, is_impossible)`: extractive QA,
  answers as (text, character start) pairs.

Every example carries `source` ("file:line"), so errors found later (e.g. an
unseen label in `LabelMap.encode`) name the row that caused them.

Formats: TSV/CSV (`read_tsv`, `read_csv`, header optional, columns by name or
index), JSON lines (`read_jsonl`), SQuAD JSON v1.1/v2.0 (`read_squad_json`),
SQuAD-style JSON lines (`read_squad_jsonl`), CoNLL (`read_conll`). Any file may be
gzip-compressed; `pattern` may be a glob or a list of globs; paths go through
`tf.io.gfile`, so gs:// works too. The tasks bundled in bert_keras/data load with
`load_bundled_task`; TFDS tasks with `bert_keras.tfds_tasks.load_tfds_task`.

Example:
    >>> from bert_keras import finetuning_data as fd
    >>> train = fd.load_bundled_task("bible_paraphrase", "train")
    >>> train[0].label, train[0].text_b is not None
    ('1', True)
    >>> from bert_keras.data.finetuning.label_map import LabelMap
    >>> label_map = LabelMap.from_examples(train)
    >>> label_map.labels
    ['0', '1']
    >>> label_map.encode(train[:3]).tolist()
    [1, 0, 1]
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import io
import json
import os
import zlib
from typing import Any, Iterator, Sequence

import tensorflow as tf

from bert_keras import assets


# ----------------------------------------------------------------------------
# Example types.


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


@dataclasses.dataclass
class TaggingExample:
    """One sentence for token classification: words and one tag per word (or None)."""

    words: list[str]
    tags: list[str] | None = None
    source: str | None = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass
class SpanExample:
    """One extractive-QA question.

    answers: list of (text, char_start), character offsets into `context`;
    empty with is_impossible=True for SQuAD v2.0 unanswerable questions.
    """

    qid: str
    question: str
    context: str
    answers: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    is_impossible: bool = False
    source: str | None = dataclasses.field(default=None, compare=False, repr=False)


# ----------------------------------------------------------------------------
# Files.

_ROW_REPR_CHARS = 200
LABEL_TYPES = ("single", "multi", "regression")


def _row_repr(row) -> str:
    text = repr(row)
    return text if len(text) <= _ROW_REPR_CHARS else text[:_ROW_REPR_CHARS] + "..."


def expand_pattern(pattern: str | Sequence[str]) -> list[str]:
    """Sorted files matching a glob (or a list of globs); FileNotFoundError if none."""
    patterns = [pattern] if isinstance(pattern, (str, os.PathLike)) else list(pattern)
    if not patterns:
        raise FileNotFoundError(f"no file pattern given: {pattern!r}")
    files = []
    for p in patterns:
        matches = sorted(tf.io.gfile.glob(os.fspath(p)))
        if not matches:
            raise FileNotFoundError(f"no files match {os.fspath(p)!r}")
        files.extend(matches)
    return files


def read_text(path: str) -> str:
    """A whole UTF-8 file (gzip or plain) as str; ValueError naming file and line on bad bytes."""
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ValueError(f"{path}: corrupt gzip data ({e})") from e
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ValueError(
            f"{path}:{line}: invalid UTF-8 ({e.reason}) at byte {e.start}: "
            f"{data[max(0, e.start - 20):e.start + 20]!r}"
        ) from e
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise ValueError(f"{path} is empty")
    return text


def _lines(path: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline) for every line of a file."""
    text = read_text(path)
    # split("\n"), not splitlines(): text may hold U+2028, U+0085, form feeds.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines, start=1):
        yield i, line.removesuffix("\r")


def _rows(path: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a delimited file; empty lines skipped.

    Tab: split on tabs, quotes are literal (GLUE's convention). Anything else: the
    csv module with standard double-quote quoting (fields may span lines).
    """
    if delimiter == "\t":
        for line_no, line in _lines(path):
            if line.strip():
                yield line_no, line.split("\t")
        return
    reader = csv.reader(io.StringIO(read_text(path), newline=""), delimiter=delimiter)
    start = 1
    try:
        for row in reader:
            if row and any(field.strip() for field in row):
                yield start, row
            start = reader.line_num + 1
    except csv.Error as e:
        raise ValueError(f"{path}:{start}: malformed CSV ({e})") from e


def _parse_label(value: str, label_type: str, label_delimiter: str, where: str):
    value = value.strip()
    if label_type == "single":
        return value
    if label_type == "multi":
        return [v.strip() for v in value.split(label_delimiter) if v.strip()]
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{where}: regression label {value!r} is not a number") from None


def _check_label_type(label_type: str) -> None:
    if label_type not in LABEL_TYPES:
        raise ValueError(f"label_type must be one of {LABEL_TYPES}, got {label_type!r}")


def _resolve_column(column, header: list[str] | None, num_columns: int, what: str, path: str):
    if column is None:
        return None
    if isinstance(column, str):
        if header is None:
            raise ValueError(f"{what}={column!r} is a column name, but {path} is read without a header")
        if column not in header:
            raise ValueError(f"{what}={column!r} is not in the header of {path}: {header}")
        return header.index(column)
    index = int(column)
    if not -num_columns <= index < num_columns:
        raise ValueError(f"{what}={column} is out of range for {path}, which has {num_columns} columns")
    return index % num_columns


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
    the file's first row); otherwise ValueError names file, line and row.
    """
    _check_label_type(label_type)
    examples = []
    for path in expand_pattern(pattern):
        rows = _rows(path, delimiter)
        names = None
        if header:
            first = next(rows, None)
            if first is None:
                raise ValueError(f"{path} is empty")
            names = [n.strip() for n in first[1]]
        n_before = len(examples)
        columns = None
        num_columns = len(names) if names is not None else None
        for line_no, row in rows:
            if num_columns is None:
                num_columns = len(row)
            if len(row) != num_columns:
                raise ValueError(
                    f"{path}:{line_no}: expected {num_columns} columns, got {len(row)}: {_row_repr(row)}"
                )
            if columns is None:
                columns = [
                    _resolve_column(c, names, num_columns, what, path)
                    for c, what in (
                        (text_a_column, "text_a_column"),
                        (text_b_column, "text_b_column"),
                        (label_column, "label_column"),
                    )
                ]
            a, b, lab = columns
            where = f"{path}:{line_no}"
            label = None if lab is None else _parse_label(row[lab], label_type, label_delimiter, where)
            examples.append(
                ClassificationExample(row[a], None if b is None else row[b], label, source=where)
            )
        if len(examples) == n_before:
            raise ValueError(f"{path} has no data rows")
    return examples


def read_tsv(pattern: str | Sequence[str], **kwargs) -> list[ClassificationExample]:
    """`read_delimited` with delimiter="\\t". Bundled files: `label<TAB>text_a[<TAB>text_b]`.

    Example:
        >>> ex = read_tsv(bundled_task_path("wordnet_topics", "dev"))  # label_column=0, text_a_column=1
        >>> ex[0].label
        'noun.person'
    """
    return read_delimited(pattern, delimiter="\t", **kwargs)


def read_csv(pattern: str | Sequence[str], **kwargs) -> list[ClassificationExample]:
    """`read_delimited` with delimiter="," and standard CSV quoting."""
    return read_delimited(pattern, delimiter=",", **kwargs)


def _json_lines(path: str) -> Iterator[tuple[int, dict]]:
    for line_no, line in _lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{line_no}: invalid JSON ({e.msg}): {_row_repr(line)}") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{path}:{line_no}: expected a JSON object, got {_row_repr(obj)}")
        yield line_no, obj


def _field(obj: dict, name: str, where: str):
    if name not in obj:
        raise ValueError(f"{where}: missing field {name!r} in {_row_repr(obj)}")
    return obj[name]


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
    for path in expand_pattern(pattern):
        n_before = len(examples)
        for line_no, obj in _json_lines(path):
            where = f"{path}:{line_no}"
            label = None
            if label_field is not None:
                raw = _field(obj, label_field, where)
                if label_type == "multi" and isinstance(raw, list):
                    label = [str(v) for v in raw]
                else:
                    label = _parse_label(str(raw), label_type, label_delimiter, where)
            text_b = None if text_b_field is None else str(_field(obj, text_b_field, where))
            examples.append(
                ClassificationExample(str(_field(obj, text_a_field, where)), text_b, label, source=where)
            )
        if len(examples) == n_before:
            raise ValueError(f"{path} has no data rows")
    return examples


def _parse_answers(answers, where: str) -> list[tuple[str, int]]:
    """[{text, answer_start}, ...] or {text: [...], answer_start: [...]} -> [(text, start)]."""
    if isinstance(answers, dict):  # TFDS / Hugging Face layout.
        texts, starts = answers.get("text", []), answers.get("answer_start", [])
        if len(texts) != len(starts):
            raise ValueError(f"{where}: {len(texts)} answer texts but {len(starts)} answer starts")
        answers = [{"text": t, "answer_start": s} for t, s in zip(texts, starts)]
    if not isinstance(answers, list):
        raise ValueError(f"{where}: answers must be a list, got {_row_repr(answers)}")
    out = []
    for a in answers:
        if not isinstance(a, dict) or not isinstance(a.get("text"), str) or not isinstance(
            a.get("answer_start"), int
        ):
            raise ValueError(f"{where}: bad answer {_row_repr(a)}: need {{'text': str, 'answer_start': int}}")
        out.append((a["text"], a["answer_start"]))
    return out


def read_squad_jsonl(
    pattern: str | Sequence[str],
    *,
    question_field: str = "question",
    context_field: str = "context",
    answers_field: str = "answers",
    id_field: str = "id",
) -> list[SpanExample]:
    """SQuAD-style JSON lines: question, context, answers [{text, answer_start}].

    qid is the `id_field` value, or "BASENAME-LINE" when the row has none.
    is_impossible comes from an "is_impossible" field, or is True when answers is empty.
    """
    examples = []
    for path in expand_pattern(pattern):
        n_before = len(examples)
        base = os.path.basename(path)
        for line_no, obj in _json_lines(path):
            where = f"{path}:{line_no}"
            answers = _parse_answers(_field(obj, answers_field, where), where)
            examples.append(
                SpanExample(
                    qid=str(obj.get(id_field, f"{base}-{line_no}")),
                    question=str(_field(obj, question_field, where)),
                    context=str(_field(obj, context_field, where)),
                    answers=answers,
                    is_impossible=bool(obj.get("is_impossible", not answers)),
                    source=where,
                )
            )
        if len(examples) == n_before:
            raise ValueError(f"{path} has no data rows")
    return examples


def read_squad_json(pattern: str | Sequence[str]) -> list[SpanExample]:
    """Official SQuAD v1.1 / v2.0 JSON: {"data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}.

    v2.0 unanswerable questions have is_impossible=True and no answers
    (their "plausible_answers" are ignored).
    """
    examples = []
    for path in expand_pattern(pattern):
        text = read_text(path)
        try:
            root = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
        if not isinstance(root, dict) or not isinstance(root.get("data"), list):
            raise ValueError(f"{path}: not SQuAD JSON (needs a top-level 'data' list)")
        n_before = len(examples)
        for a, article in enumerate(root["data"]):
            for p, paragraph in enumerate(article.get("paragraphs", [])):
                where = f"{path}: data[{a}].paragraphs[{p}]"
                context = _field(paragraph, "context", where)
                for qa in _field(paragraph, "qas", where):
                    qid = str(_field(qa, "id", where))
                    is_impossible = bool(qa.get("is_impossible", False))
                    answers = [] if is_impossible else _parse_answers(qa.get("answers", []), f"{where} qid {qid}")
                    examples.append(
                        SpanExample(
                            qid=qid,
                            question=_field(qa, "question", f"{where} qid {qid}"),
                            context=context,
                            answers=answers,
                            is_impossible=is_impossible,
                            source=f"{path}:{qid}",
                        )
                    )
        if len(examples) == n_before:
            raise ValueError(f"{path} has no questions")
    return examples


def read_conll(
    pattern: str | Sequence[str],
    *,
    word_column: int = 0,
    tag_column: int | None = -1,
    delimiter: str | None = None,
) -> list[TaggingExample]:
    """CoNLL files: one token per line (columns split on `delimiter`, default
    whitespace), a blank line between sentences, "-DOCSTART-" lines skipped.

    tag_column=None reads unlabeled data (tags=None). Every token line of a file
    must have the same number of columns as its first one.
    """
    examples = []
    for path in expand_pattern(pattern):
        n_before = len(examples)
        num_columns = None
        words, tags, start = [], [], None

        def flush():
            if words:
                examples.append(
                    TaggingExample(list(words), None if tag_column is None else list(tags), source=f"{path}:{start}")
                )
            words.clear()
            tags.clear()

        for line_no, line in _lines(path):
            fields = line.split(delimiter)
            if not line.strip():
                flush()
                continue
            if fields[0] == "-DOCSTART-":
                flush()
                continue
            if num_columns is None:
                num_columns = len(fields)
                for c in (word_column, tag_column):
                    if c is not None and not -num_columns <= c < num_columns:
                        raise ValueError(
                            f"{path}:{line_no}: column {c} is out of range for a row with "
                            f"{num_columns} columns: {_row_repr(line)}"
                        )
            if len(fields) != num_columns:
                raise ValueError(
                    f"{path}:{line_no}: expected {num_columns} columns, got {len(fields)}: {_row_repr(line)}"
                )
            if not words:
                start = line_no
            words.append(fields[word_column])
            if tag_column is not None:
                tags.append(fields[tag_column])
        flush()
        if len(examples) == n_before:
            raise ValueError(f"{path} has no sentences")
    return examples


# ----------------------------------------------------------------------------
# Bundled tasks (bert_keras/data, see its README.md).

BUNDLED_TASKS = {
    "bible_paraphrase": ("bible_paraphrase.{split}.tsv.gz", "tsv", {"text_a_column": 1, "text_b_column": 2, "label_column": 0}),
    "wordnet_topics": ("wordnet_topics.{split}.tsv.gz", "tsv", {"text_a_column": 1, "label_column": 0}),
    "wordnet_qa": ("wordnet_qa.{split}.jsonl.gz", "squad_jsonl", {}),
    "bible_ner": ("bible_ner.{split}.conll.gz", "conll", {}),
}
_READERS = {"tsv": read_tsv, "squad_jsonl": read_squad_jsonl, "conll": read_conll}


def bundled_task_path(name: str, split: str) -> str:
    """Path of a bundled task file, e.g. bundled_task_path("bible_ner", "dev")."""
    if name not in BUNDLED_TASKS:
        raise ValueError(f"unknown bundled task {name!r}; known: {sorted(BUNDLED_TASKS)}")
    if split not in ("train", "dev", "test"):
        raise ValueError(f"split must be 'train', 'dev' or 'test', got {split!r}")
    return assets.path(BUNDLED_TASKS[name][0].format(split=split))


def load_bundled_task(name: str, split: str) -> list:
    """Examples of a task bundled with bert_keras.

    bible_paraphrase (sentence pairs, labels "0"/"1"), wordnet_topics (45
    classes), wordnet_qa (SpanExample), bible_ner (TaggingExample, O/B-PER/B-LOC).
    """
    path = bundled_task_path(name, split)
    _, kind, kwargs = BUNDLED_TASKS[name]
    return _READERS[kind](path, **kwargs)


__all__ = [
    "ClassificationExample",
    "TaggingExample",
    "SpanExample",
    "expand_pattern",
    "read_text",
    "read_delimited",
    "read_tsv",
    "read_csv",
    "read_jsonl",
    "read_squad_jsonl",
    "read_squad_json",
    "read_conll",
    "BUNDLED_TASKS",
    "bundled_task_path",
    "load_bundled_task",
]
