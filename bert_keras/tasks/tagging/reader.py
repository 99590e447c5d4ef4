"""Token-classification reader: CoNLL files -> `TaggingExample` lists."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from bert_keras.data.finetuning.task_files import TaskFileError, file_lines, row_repr
from bert_keras.files import expand_patterns


@dataclasses.dataclass
class TaggingExample:
    """One sentence for token classification: words and one tag per word (or None)."""

    words: list[str]
    tags: list[str] | None = None
    source: str | None = dataclasses.field(default=None, compare=False, repr=False)

    multi_label = False  # one tag per word

    def map_labels(self):
        """Its tags for `LabelMap.from_examples`; ValueError if it has none."""
        if self.tags is None:
            raise ValueError("cannot build a LabelMap from untagged TaggingExamples")
        return self.tags



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
    for path in expand_patterns(pattern):
        n_before = len(examples)
        num_columns = None
        words, tags, start = [], [], None

        def flush():
            if words:
                examples.append(
                    TaggingExample(list(words), None if tag_column is None else list(tags),
                                   source=f"{path}:{start}")
                )
            words.clear()
            tags.clear()

        for line_no, line in file_lines(path):
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
                        raise TaskFileError(
                            f"{path}:{line_no}: column {c} is out of range for a row with "
                            f"{num_columns} columns: {row_repr(line)}"
                        )
            if len(fields) != num_columns:
                raise TaskFileError(
                    f"{path}:{line_no}: expected {num_columns} columns, got {len(fields)}: "
                    f"{row_repr(line)}"
                )
            if not words:
                start = line_no
            words.append(fields[word_column])
            if tag_column is not None:
                if not fields[tag_column].strip():
                    raise TaskFileError(f"{path}:{line_no}: empty tag (column {tag_column}); every "
                                        f"token of a labeled file needs one: {row_repr(line)}")
                tags.append(fields[tag_column])
        flush()
        if len(examples) == n_before:
            raise TaskFileError(f"{path} has no sentences")
    return examples


__all__ = [
    "TaggingExample",
    "read_conll",
]
