"""SQuAD answer scores (exact match, token F1), as the official v1.1 / v2.0 scripts.

Example:
    >>> from bert_keras import metrics
    >>> metrics.squad_exact_match("The Eiffel Tower!", ["eiffel tower"])
    1.0
"""

from __future__ import annotations

import collections
import re
import string
from typing import Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def squad_normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (official)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _gold_list(gold_answers) -> list[str]:
    if isinstance(gold_answers, str):
        gold_answers = [gold_answers]
    # SQuAD v2.0: no (non-empty) gold answer means "no answer"; only "" matches it.
    gold = [a for a in gold_answers if squad_normalize_answer(a)]
    return gold or [""]


def _exact(prediction: str, gold: str) -> float:
    return float(squad_normalize_answer(prediction) == squad_normalize_answer(gold))


def _token_f1(prediction: str, gold: str) -> float:
    pred_toks = squad_normalize_answer(prediction).split()
    gold_toks = squad_normalize_answer(gold).split()
    if not pred_toks or not gold_toks:
        return float(pred_toks == gold_toks)
    common = collections.Counter(pred_toks) & collections.Counter(gold_toks)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_toks)
    recall = num_same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def squad_exact_match(prediction: str, gold_answers: str | Sequence[str]) -> float:
    """1.0 if the normalized prediction equals any normalized gold answer, else 0.0.

    An empty `gold_answers` (SQuAD v2.0 unanswerable) is matched only by "".
    """
    return max(_exact(prediction, g) for g in _gold_list(gold_answers))


def squad_f1(prediction: str, gold_answers: str | Sequence[str]) -> float:
    """Token-overlap F1 after normalization, maximised over the gold answers."""
    return max(_token_f1(prediction, g) for g in _gold_list(gold_answers))


def squad_evaluate(predictions: dict, references: dict) -> dict[str, float]:
    """Corpus-level SQuAD scores in percent, like the official scripts.

    Args:
      predictions: qid -> predicted answer text ("" for "no answer").
      references: qid -> list of gold answer texts (empty list: unanswerable).
        Every reference qid is scored; a missing prediction scores 0 (as the
        official scripts do).

    Returns:
      {"exact_match", "f1", "total"} and, when there are unanswerable questions
      or answerable ones, "HasAns_exact_match"/"HasAns_f1"/"HasAns_total" and the
      same for "NoAns_" (SQuAD v2.0 breakdown).
    """
    if not references:
        raise ValueError("references is empty")
    unknown = set(predictions) - set(references)
    if unknown:
        raise ValueError(f"predictions for unknown qids: {sorted(unknown)[:5]}")
    groups = {"": [], "HasAns_": [], "NoAns_": []}
    for qid, gold in references.items():
        if qid in predictions:
            scores = (squad_exact_match(predictions[qid], gold), squad_f1(predictions[qid], gold))
        else:
            scores = (0.0, 0.0)
        groups[""].append(scores)
        has_answer = _gold_list(gold) != [""]
        groups["HasAns_" if has_answer else "NoAns_"].append(scores)
    result = {}
    for prefix, scores in groups.items():
        if scores or not prefix:
            arr = np.asarray(scores, dtype=np.float64)
            result[prefix + "exact_match"] = 100.0 * float(arr[:, 0].mean())
            result[prefix + "f1"] = 100.0 * float(arr[:, 1].mean())
            result[prefix + "total"] = len(scores)
    return result


__all__ = [
    "squad_normalize_answer",
    "squad_exact_match",
    "squad_f1",
    "squad_evaluate",
]
