"""The fine-tuning example types: what the readers produce and the featurizers consume.

* `ClassificationExample(text_a, text_b, label)`: single sentences and pairs,
  single-label (str), multi-label (list of str) or regression (float) labels;
* `TaggingExample(words, tags)`: token classification (NER);
* `SpanExample(qid, question, context, answers, is_impossible)`: extractive QA,
  answers as (text, character start) pairs.

Every example carries `source` ("file:line"), so errors found later (e.g. an
unseen label in `LabelMap.encode`) name the row that caused them.
"""

from __future__ import annotations

import dataclasses
from typing import Any


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


__all__ = [
    "ClassificationExample",
    "TaggingExample",
    "SpanExample",
]
