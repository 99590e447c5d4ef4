"""The classic mistakes in a fine-tuning task file, caught before training instead of trained.

A CSV `text,sentiment` read without --header and column flags trains: the default columns
make the header's "text" a label and each text a class of its own (301 classes, accuracy
0.016). Each check here refuses such data with a `TaskFileError` (an InputError: the tools
print it as one line and exit 1) that names the file and the flag that fixes it.

1. **A header row read as data** (`check_header_row`; the TSV/CSV reader, without header):
   the first row's label occurs in no other row of its file, and
   - it, or another field of the row, names a column: a label column's usual name (label,
     sentiment, quality, ...), a text column's (text, sentence1, question, review, ...) or an
     id's, also with a number (`sentence 1`) or as a part of a snake_case name
     (`tweet_text`, `airline_sentiment`);
   - or its type breaks the column's: the only non-number among integer labels (GLUE MRPC's
     "Quality" over 0/1), a regression label that is no number (STS-B's "score"; the one
     rule for regression labels, which are seldom repeated);
   - or the row is unlike the data below it: at least `HEADER_MIN_OTHER_ROWS` (10) other
     rows, every other label occurs at least twice, and every field of the row is a short
     name (at most 3 words and 40 characters: letters, digits, `_ - . # /`).
2. **A label column of (nearly) distinct values** (`check_labels`; single-label
   classification training data only, never regression or multi-label): more than
   `MAX_SINGLETON_LABELS` (20) distinct labels, and the labels that occur once label more
   than half of the rows (`MAX_SINGLETON_SHARE`). A real class column repeats its classes
   (a 100-class intent set of 2 examples a class has no label seen once); a text or id column
   read as the label is almost all singletons. A class seen once can be neither learned nor
   scored, so few-shot data with mostly one example per class, over 20 classes, is refused
   too.
3. **Empty texts** (`drop_empty_texts`, `count_empty_texts`): an example whose text (either
   text of a pair, a question or a context) is empty or whitespace is no example. In the
   training data they are counted, logged and left out; more than `MAX_EMPTY_TEXT_SHARE`
   (1%) of the rows is refused: that many is a wrong text column or a broken export, not a
   few lost cells (in a file under 100 rows one empty text is refused: fix it by hand). Eval
   and test rows are counted and logged, and kept: their predictions line up with the file.
   Blank lines, which the readers skip, are counted and logged by `report_blank_lines`.

Tagging (CoNLL) and span-QA data have no label column: checks 1 and 2 do not apply to them.

Example:
    >>> import bert_keras as bk
    >>> rows = [bk.ClassificationExample(f"text {i}", None, f"text {i}", source=f"t.csv:{i}")
    ...         for i in range(1, 31)]
    >>> check_labels(rows, "csv")
    Traceback (most recent call last):
    ...
    bert_keras.data.finetuning.task_files.TaskFileError: t.csv: the training labels have 30 \
distinct values and 30 of the 30 rows have a label no other row has: a text or id column read \
as the label? Pass --label_column and --text_a_column for the label and text columns (indices, \
or with --header the first row's names)
"""

from __future__ import annotations

import collections
import re

from absl import logging

from bert_keras.data.finetuning.task_files import TaskFileError, row_repr

HEADER_MIN_OTHER_ROWS = 10
MAX_SINGLETON_LABELS = 20
MAX_SINGLETON_SHARE = 0.5
MAX_EMPTY_TEXT_SHARE = 0.01
COLUMN_FORMATS = ("tsv", "csv", "jsonl")  # whose text columns or fields flags name

# Names that label columns go by in public datasets (GLUE, SuperGLUE, Kaggle, HF datasets).
LABEL_COLUMN_NAMES = frozenset({
    "label", "labels", "class", "classes", "category", "categories", "target", "gold_label",
    "quality", "is_duplicate", "sentiment", "polarity", "score", "rating", "topic", "intent",
    "tag", "tags", "y", "answer", "relevance", "stance", "emotion", "language", "lang",
})
# ... and text and id columns.
TEXT_COLUMN_NAMES = frozenset({
    "text", "texts", "text_a", "text_b", "sentence", "sentences", "question", "questions",
    "premise", "hypothesis", "review", "reviews", "comment", "comments", "content", "body",
    "title", "tweet", "document", "doc", "passage", "context", "utterance", "query", "message",
    "headline", "abstract", "summary", "description", "string", "phrase", "input", "claim",
    "id", "idx", "index", "guid", "qid", "uid",
})
COLUMN_NAMES = LABEL_COLUMN_NAMES | TEXT_COLUMN_NAMES

_INTEGER = re.compile(r"[+-]?\d+")
_NUMBERED = re.compile(r"[\s_#-]*\d+$")  # "sentence1", "sentence_2", "Sentence 1"
_SNAKE_CASE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")
_SHORT_NAME = re.compile(r"(?:[^\W\d]|#)[\w#./-]*(?: [\w#./-]+){0,2}")


# -- 1. a header row read as data ---------------------------------------------------------------

def names_a_column(value: str) -> bool:
    """Whether `value` is a usual column name: "label", "Sentence 1", "tweet_text".

    >>> [names_a_column(v) for v in ("Quality", "sentence2", "airline_sentiment", "pos", "y_pos")]
    [True, True, True, False, False]
    """
    name = value.strip().lower()
    if not name or len(name) > 40:
        return False
    if name in COLUMN_NAMES or _NUMBERED.sub("", name) in COLUMN_NAMES:
        return True
    if _SNAKE_CASE.fullmatch(name):  # a part of at least 2 letters: "y_pos" is a class name
        parts = (_NUMBERED.sub("", part) for part in name.split("_"))
        return any(len(part) >= 2 and part in COLUMN_NAMES for part in parts)
    return False


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_short_name(text: str) -> bool:
    text = text.strip()
    return len(text) <= 40 and bool(_SHORT_NAME.fullmatch(text)) and not _is_number(text)


def check_header_row(fields: list[str], labels: list[tuple[str, str]],
                     numeric_labels: bool = False) -> None:
    """Refuses a first row that is a header read as data (the module docstring's rule 1).

    fields: all fields of the first row of a file read without a header; labels: (where,
    label text) of every row of that file, in order; numeric_labels: the labels are numbers
    (a regression target), seldom repeated."""
    if not labels:
        return
    where, first = labels[0]
    first = first.strip()
    others = [label.strip() for _, label in labels[1:]]
    if not first or first in others:
        return
    if numeric_labels:
        looks_like_header = not _is_number(first)
    else:
        counts = collections.Counter(others)
        looks_like_header = (
            any(names_a_column(f) for f in fields)
            or (bool(others) and not _INTEGER.fullmatch(first)
                and all(_INTEGER.fullmatch(v) for v in others))
            or (len(others) >= HEADER_MIN_OTHER_ROWS and min(counts.values()) >= 2
                and all(_is_short_name(f) for f in fields)))
    if looks_like_header:
        raise TaskFileError(
            f"{where}: label {first!r} looks like a column name (no other row has it): a "
            f"header row read as data? Pass --header (header=True) to skip each file's first "
            f"row, with --label_column and --text_a_column naming the columns (the first row "
            f"is {row_repr(fields)}), or remove the row")


# -- 2. a label column of distinct values -------------------------------------------------------

def _files(examples) -> str:
    """The file of the first example's source, and how many more the examples come from."""
    paths = list(dict.fromkeys((ex.source or "?").rsplit(":", 1)[0] for ex in examples))
    more = f" (and {len(paths) - 1} more files)" if len(paths) > 1 else ""
    return f"{paths[0]}{more}" if paths else "the training data"


def _flags(file_format: str) -> tuple[str, str, str]:
    """(label flag, text flag, how to name a column) of a file format."""
    if file_format == "jsonl":
        return "--label_field", "--text_a_field", "field names"
    return "--label_column", "--text_a_column", "indices, or with --header the first row's names"


def check_labels(examples, file_format: str, label_option: str | None = None) -> None:
    """Refuses single-label classification training data whose label column holds (nearly)
    distinct values (the module docstring's rule 2); other examples pass. label_option: the
    flag that picked the label column, e.g. "--label_column=0", for the message."""
    labels = [ex.label for ex in examples
              if isinstance(getattr(ex, "label", None), str)]
    if len(labels) != len(examples) or not labels:
        return  # regression, multi-label, unlabeled, tagging, span QA
    counts = collections.Counter(labels)
    singletons = sum(1 for n in counts.values() if n == 1)
    if len(counts) > MAX_SINGLETON_LABELS and singletons > MAX_SINGLETON_SHARE * len(labels):
        label_flag, text_flag, naming = _flags(file_format)
        source = f" ({label_option})" if label_option else ""
        raise TaskFileError(
            f"{_files(examples)}: the training labels{source} have {len(counts)} distinct "
            f"values and {singletons} of the {len(labels)} rows have a label no other row has: "
            f"a text or id column read as the label? Pass {label_flag} and {text_flag} for the "
            f"label and text columns ({naming})")


# -- 3. empty texts ---------------------------------------------------------------------------

def _has_empty_text(example) -> bool:
    # The example types name their texts (`texts`); the others (a CoNLL sentence has at least
    # one word; multiple choice and reranking refuse empty texts as they read) take no part.
    return any(not (text or "").strip() for text in getattr(example, "texts", ()))


def _empty_text_rows(examples) -> list:
    return [ex for ex in examples if _has_empty_text(ex)]


def _where(rows, shown=3) -> str:
    places = ", ".join(ex.source or "?" for ex in rows[:shown])
    return places + (", ..." if len(rows) > shown else "")


def drop_empty_texts(examples, file_format: str) -> list:
    """The training examples without those of an empty text, which are counted and logged;
    TaskFileError when they are more than MAX_EMPTY_TEXT_SHARE of the rows."""
    empty = _empty_text_rows(examples)
    if not empty:
        return examples
    share = len(empty) / len(examples)
    if share > MAX_EMPTY_TEXT_SHARE:
        if file_format not in COLUMN_FORMATS:  # texts not chosen by flags (SQuAD's)
            fix = "fill or remove those rows"
        else:
            _, text_flag, _ = _flags(file_format)
            text_b = text_flag.replace("text_a", "text_b")
            fix = (f"check {text_flag} (and {text_b} for pairs) names the text column, or remove "
                   "the rows")
        raise TaskFileError(
            f"{_files(empty)}: {len(empty)} of the {len(examples)} training rows "
            f"({share:.1%}) have an empty text (at {_where(empty)}), more than "
            f"{MAX_EMPTY_TEXT_SHARE:.0%} of them are refused: {fix}")
    logging.warning("%s: %d of the %d training rows have an empty text and are left out (at %s)",
                    _files(empty), len(empty), len(examples), _where(empty))
    return [ex for ex in examples if not _has_empty_text(ex)]


def count_empty_texts(examples, what: str) -> int:
    """The number of `examples` (eval or test data: `what`) with an empty text, logged when
    there are any; the examples stay (their predictions line up with the file)."""
    empty = _empty_text_rows(examples)
    if empty:
        logging.warning("%s: %d of the %d %s rows have an empty text (at %s); they are predicted "
                        "from [CLS] [SEP] alone", _files(empty), len(empty), len(examples), what,
                        _where(empty))
    return len(empty)


def report_blank_lines(path: str, line_numbers: list[int]) -> None:
    """Logs the blank lines a reader skipped in `path`, if any."""
    if line_numbers:
        shown = ", ".join(map(str, line_numbers[:5])) + (", ..." if len(line_numbers) > 5 else "")
        logging.warning("%s: skipped %d blank line%s (line %s)", path, len(line_numbers),
                        "s" if len(line_numbers) > 1 else "", shown)


__all__ = [
    "LABEL_COLUMN_NAMES",
    "TEXT_COLUMN_NAMES",
    "names_a_column",
    "check_header_row",
    "check_labels",
    "drop_empty_texts",
    "count_empty_texts",
    "report_blank_lines",
]
