"""Extractive-QA readers: SQuAD JSON (v1.1 / v2.0) and SQuAD-style JSON lines -> `SpanExample`
lists."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Sequence

from bert_keras.data.finetuning.task_files import (
    TaskFileError,
    json_lines,
    read_text,
    required_field,
    row_repr,
)
from bert_keras.files import expand_patterns


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

    @property
    def texts(self):
        """The texts that must not be empty (`sanity.drop_empty_texts`)."""
        return [self.question, self.context]



def _parse_answers(answers, where: str) -> list[tuple[str, int]]:
    """[{text, answer_start}, ...] or {text: [...], answer_start: [...]} -> [(text, start)]."""
    if isinstance(answers, dict):  # TFDS / Hugging Face layout.
        texts, starts = answers.get("text", []), answers.get("answer_start", [])
        if len(texts) != len(starts):
            raise TaskFileError(
                f"{where}: {len(texts)} answer texts but {len(starts)} answer starts")
        answers = [{"text": t, "answer_start": s} for t, s in zip(texts, starts)]
    if not isinstance(answers, list):
        raise TaskFileError(f"{where}: answers must be a list, got {row_repr(answers)}")
    out = []
    for a in answers:
        if not isinstance(a, dict) or not isinstance(a.get("text"), str) or not isinstance(
            a.get("answer_start"), int
        ):
            raise TaskFileError(f"{where}: bad answer {row_repr(a)}: "
                                "need {'text': str, 'answer_start': int}")
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
    for path in expand_patterns(pattern):
        n_before = len(examples)
        base = os.path.basename(path)
        for line_no, obj in json_lines(path):
            where = f"{path}:{line_no}"
            answers = _parse_answers(required_field(obj, answers_field, where), where)
            examples.append(
                SpanExample(
                    qid=str(obj.get(id_field, f"{base}-{line_no}")),
                    question=str(required_field(obj, question_field, where)),
                    context=str(required_field(obj, context_field, where)),
                    answers=answers,
                    is_impossible=bool(obj.get("is_impossible", not answers)),
                    source=where,
                )
            )
        if len(examples) == n_before:
            raise TaskFileError(f"{path} has no data rows")
    return examples


def read_squad_json(pattern: str | Sequence[str]) -> list[SpanExample]:
    """Official SQuAD v1.1 / v2.0 JSON:
    {"data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}.

    v2.0 unanswerable questions have is_impossible=True and no answers
    (their "plausible_answers" are ignored).
    """
    examples = []
    for path in expand_patterns(pattern):
        text = read_text(path)
        try:
            root = json.loads(text)
        except json.JSONDecodeError as e:
            raise TaskFileError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
        if not isinstance(root, dict) or not isinstance(root.get("data"), list):
            raise TaskFileError(f"{path}: not SQuAD JSON (needs a top-level 'data' list)")
        n_before = len(examples)
        for a, article in enumerate(root["data"]):
            for p, paragraph in enumerate(article.get("paragraphs", [])):
                where = f"{path}: data[{a}].paragraphs[{p}]"
                context = required_field(paragraph, "context", where)
                for qa in required_field(paragraph, "qas", where):
                    qid = str(required_field(qa, "id", where))
                    is_impossible = bool(qa.get("is_impossible", False))
                    answers = [] if is_impossible else _parse_answers(
                        qa.get("answers", []), f"{where} qid {qid}")
                    examples.append(
                        SpanExample(
                            qid=qid,
                            question=required_field(qa, "question", f"{where} qid {qid}"),
                            context=context,
                            answers=answers,
                            is_impossible=is_impossible,
                            source=f"{path}:{qid}",
                        )
                    )
        if len(examples) == n_before:
            raise TaskFileError(f"{path} has no questions")
    return examples


__all__ = [
    "SpanExample",
    "read_squad_jsonl",
    "read_squad_json",
]
