"""Reranking files: a query, its relevant documents (positives) and irrelevant ones
(negatives).

JSON lines: {"query": str, "positives": [str, ...], "negatives": [str, ...]} per line
("negatives" may be missing or empty). TSV: query<TAB>positive<TAB>negative<TAB>..., one
positive per line (a query with more positives takes more lines), any number of negatives.
Every line needs a non-empty query and a positive; an error names the file, the line and the
value.

>>> import json, tempfile
>>> path = tempfile.mktemp(suffix=".jsonl")
>>> with open(path, "w") as f:
...     _ = f.write(json.dumps({"query": "Who wept?", "positives": ["Jesus wept."],
...                             "negatives": ["Amen."]}))
>>> read_reranking_jsonl(path)[0].candidates
['Jesus wept.', 'Amen.']
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from bert_keras.data.finetuning import sanity
from bert_keras.data.finetuning.task_files import (
    TaskFileError,
    delimited_rows,
    json_lines,
    required_field,
)
from bert_keras.files import expand_patterns


@dataclasses.dataclass
class RerankingExample:
    """One query with its `positives` and `negatives`. source: "file:line" it came from."""

    query: str
    positives: list[str]
    negatives: list[str] = dataclasses.field(default_factory=list)
    source: str | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def candidates(self):
        """The documents to rank: the positives, then the negatives."""
        return self.positives + self.negatives

    @property
    def relevance(self):
        """1 for each positive of `candidates`, 0 for each negative."""
        return [1] * len(self.positives) + [0] * len(self.negatives)

    # The sanity checks' view (data.finetuning.sanity): the label every example has.
    label = True


def checked_example(query, positives, negatives, where):
    """A RerankingExample; TaskFileError (`where`: the file and line, or the row of x) for
    an empty query, no positive, or a document that is not a string."""
    if not isinstance(query, str) or not query.strip():
        raise TaskFileError(f"{where}: the query is {query!r}; it must be a non-empty string")
    for what, documents in (("positives", positives), ("negatives", negatives)):
        if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
            raise TaskFileError(f"{where}: {what} is {documents!r}, not a list of strings")
    if not positives:
        raise TaskFileError(f"{where}: no positive document for the query {query!r}; every "
                            "query needs at least one")
    return RerankingExample(query, list(positives), list(negatives), source=where)


def read_reranking_jsonl(pattern: str | Sequence[str], **unused) -> list[RerankingExample]:
    """Examples of JSON lines files (see the module docstring)."""
    examples = []
    for path in expand_patterns(pattern):
        n_before, blank_lines = len(examples), []
        for line_no, obj in json_lines(path, blank_lines):
            where = f"{path}:{line_no}"
            examples.append(checked_example(required_field(obj, "query", where),
                                            required_field(obj, "positives", where),
                                            obj.get("negatives") or [], where))
        if len(examples) == n_before:
            raise TaskFileError(f"{path} has no data rows")
        sanity.report_blank_lines(path, blank_lines)
    return examples


def read_reranking_tsv(pattern: str | Sequence[str], **unused) -> list[RerankingExample]:
    """Examples of TSV files, query<TAB>positive<TAB>negative...; the lines of one query (a
    positive each) become one example with every positive and every negative."""
    examples = []
    for path in expand_patterns(pattern):
        blank_lines, by_query = [], {}
        for line_no, row in delimited_rows(path, "\t", blank_lines):
            where = f"{path}:{line_no}"
            if len(row) < 2:
                raise TaskFileError(f"{where}: {len(row)} field(s); a line is "
                                    "query<TAB>positive[<TAB>negative...]")
            example = checked_example(row[0], row[1:2], row[2:], where)
            if row[0] in by_query:
                kept = by_query[row[0]]
                kept.positives += [p for p in example.positives if p not in kept.positives]
                kept.negatives += [n for n in example.negatives if n not in kept.negatives]
            else:
                by_query[row[0]] = example
        if not by_query:
            raise TaskFileError(f"{path} has no data rows")
        examples.extend(by_query.values())
        sanity.report_blank_lines(path, blank_lines)
    return examples
