"""Evaluation metrics for fine-tuning: GLUE, SQuAD, entity-level F1 (numpy only).

Plain Python functions over Python lists or numpy arrays, so they run anywhere
(no TensorFlow needed) and give the numbers papers and leaderboards report:

* classification: `accuracy`, `f1` (binary / macro / micro, as scikit-learn),
  `matthews_corrcoef` (multi-class generalisation, as scikit-learn);
* regression: `pearson`, `spearman` (average ranks for ties, as scipy);
* GLUE: `glue_metrics(task, y_true, y_pred)` picks each task's official metrics;
* SQuAD: `squad_normalize_answer`, `squad_exact_match`, `squad_f1` and
  `squad_evaluate`, following the official v1.1 / v2.0 evaluation scripts;
* tagging: `get_entities` and `entity_scores`, with seqeval's default
  (conlleval-style, non-strict) chunking rules for IOB1 / IOB2 / IOBES tags.

Example:
    >>> from bert_keras import metrics
    >>> metrics.f1([1, 0, 1, 1], [1, 0, 0, 1])
    0.8
    >>> metrics.squad_exact_match("The Eiffel Tower!", ["eiffel tower"])
    1.0
    >>> metrics.entity_scores([["B-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]])["f1"]
    1.0
"""

from __future__ import annotations

import collections
import math
import re
import string
from typing import Sequence

import numpy as np

# ----------------------------------------------------------------------------
# Classification.


def _pair(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape:
        raise ValueError(
            f"y_true and y_pred must be 1-D and of equal length, got shapes "
            f"{y_true.shape} and {y_pred.shape}"
        )
    if y_true.size == 0:
        raise ValueError("y_true and y_pred are empty")
    return y_true, y_pred


def accuracy(y_true, y_pred) -> float:
    """Fraction of predictions equal to the labels."""
    y_true, y_pred = _pair(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


def _prf(tp: float, fp: float, fn: float) -> tuple[float, float, float]:
    """Precision, recall, F1; 0.0 where a denominator is 0 (scikit-learn's default)."""
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return float(precision), float(recall), float(f)


def f1(y_true, y_pred, average: str = "binary", pos_label=1) -> float:
    """F1 score like `sklearn.metrics.f1_score`.

    Args:
      y_true, y_pred: 1-D label sequences (ints or strings).
      average: "binary" (F1 of `pos_label`), "macro" (unweighted mean of the
        per-class F1 over every label present in y_true or y_pred) or "micro"
        (from the total true/false positives; equals accuracy for single-label data).
      pos_label: the positive class for average="binary".
    """
    y_true, y_pred = _pair(y_true, y_pred)
    if average == "binary":
        tp = np.sum((y_true == pos_label) & (y_pred == pos_label))
        fp = np.sum((y_true != pos_label) & (y_pred == pos_label))
        fn = np.sum((y_true == pos_label) & (y_pred != pos_label))
        return _prf(tp, fp, fn)[2]
    labels = np.unique(np.concatenate([y_true, y_pred]))
    tps = np.array([np.sum((y_true == c) & (y_pred == c)) for c in labels])
    fps = np.array([np.sum((y_true != c) & (y_pred == c)) for c in labels])
    fns = np.array([np.sum((y_true == c) & (y_pred != c)) for c in labels])
    if average == "macro":
        return float(np.mean([_prf(*c)[2] for c in zip(tps, fps, fns)]))
    if average == "micro":
        return _prf(tps.sum(), fps.sum(), fns.sum())[2]
    raise ValueError(f"average must be 'binary', 'macro' or 'micro', got {average!r}")


def binary_f1(y_true, y_pred, pos_label=1) -> float:
    """F1 of the positive class (`f1(..., average="binary")`)."""
    return f1(y_true, y_pred, average="binary", pos_label=pos_label)


def macro_f1(y_true, y_pred) -> float:
    """Unweighted mean of per-class F1 (`f1(..., average="macro")`)."""
    return f1(y_true, y_pred, average="macro")


def matthews_corrcoef(y_true, y_pred) -> float:
    """Matthews correlation coefficient, multi-class (Gorodkin's R_K, as scikit-learn).

    For two classes this is (TP*TN - FP*FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)).
    Returns 0.0 when either y_true or y_pred holds a single class.
    """
    y_true, y_pred = _pair(y_true, y_pred)
    labels, idx = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    n = y_true.shape[0]
    k = len(labels)
    confusion = np.zeros((k, k), dtype=np.float64)  # (true, pred)
    np.add.at(confusion, (idx[:n], idx[n:]), 1)
    t_sum = confusion.sum(axis=1)
    p_sum = confusion.sum(axis=0)
    n_correct = np.trace(confusion)
    cov_ytyp = n_correct * n - t_sum @ p_sum
    cov_ypyp = n * n - p_sum @ p_sum
    cov_ytyt = n * n - t_sum @ t_sum
    if cov_ypyp * cov_ytyt == 0:
        return 0.0
    return float(cov_ytyp / math.sqrt(cov_ytyt * cov_ypyp))


# ----------------------------------------------------------------------------
# Regression.


def _float_pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = _pair(x, y)
    return x.astype(np.float64), y.astype(np.float64)


def pearson(x, y) -> float:
    """Pearson correlation; nan when either input is constant (as scipy)."""
    x, y = _float_pair(x, y)
    xm = x - x.mean()
    ym = y - y.mean()
    denom = math.sqrt(float(xm @ xm) * float(ym @ ym))
    if denom == 0.0:
        return float("nan")
    return float(np.clip((xm @ ym) / denom, -1.0, 1.0))


def rankdata(x) -> np.ndarray:
    """Ranks 1..n, ties get the average of the ranks they span (scipy's "average")."""
    x = np.asarray(x)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    # Start index of each run of equal values in the sorted array.
    new_run = np.concatenate([[True], sorted_x[1:] != sorted_x[:-1]])
    run_id = np.cumsum(new_run) - 1
    starts = np.flatnonzero(new_run)
    ends = np.concatenate([starts[1:], [len(x)]])
    avg_rank = (starts + ends + 1) / 2.0  # mean of 1-based ranks start+1 .. end
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = avg_rank[run_id]
    return ranks


def spearman(x, y) -> float:
    """Spearman rank correlation: Pearson of average ranks (handles ties, as scipy)."""
    x, y = _float_pair(x, y)
    return pearson(rankdata(x), rankdata(y))


# ----------------------------------------------------------------------------
# GLUE.

# Which metrics each GLUE task reports (GLUE paper, Table 1).
GLUE_TASK_METRICS = {
    "cola": ("mcc",),
    "sst2": ("accuracy",),
    "mrpc": ("accuracy", "f1"),
    "qqp": ("accuracy", "f1"),
    "stsb": ("pearson", "spearman"),
    "mnli": ("accuracy",),
    "mnli_matched": ("accuracy",),
    "mnli_mismatched": ("accuracy",),
    "qnli": ("accuracy",),
    "rte": ("accuracy",),
    "wnli": ("accuracy",),
    "ax": ("mcc",),
}

_METRIC_FNS = {
    "accuracy": accuracy,
    "f1": binary_f1,
    "mcc": matthews_corrcoef,
    "pearson": pearson,
    "spearman": spearman,
}


def glue_metrics(task: str, y_true, y_pred) -> dict[str, float]:
    """The official metrics of a GLUE task, as a dict of name -> value.

    cola: {"mcc"}; stsb: {"pearson", "spearman"}; mrpc, qqp: {"accuracy", "f1"}
    (F1 of class 1); every other task: {"accuracy"}. `task` may carry the TFDS
    prefix ("glue/mrpc").

    Example:
        >>> glue_metrics("glue/mrpc", [1, 0, 1], [1, 1, 1])["f1"]
        0.8
    """
    key = task.lower().removeprefix("glue/").replace("-", "").replace("sst-2", "sst2")
    if key not in GLUE_TASK_METRICS:
        raise ValueError(f"unknown GLUE task {task!r}; known: {sorted(GLUE_TASK_METRICS)}")
    return {name: _METRIC_FNS[name](y_true, y_pred) for name in GLUE_TASK_METRICS[key]}


# ----------------------------------------------------------------------------
# SQuAD (official evaluate-v1.1.py / evaluate-v2.0.py).

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


# ----------------------------------------------------------------------------
# Entity-level scores (seqeval default mode = conlleval).


def _split_tag(tag: str) -> tuple[str, str]:
    """'B-PER' -> ('B', 'PER'); 'O' -> ('O', '_') exactly as seqeval does."""
    prefix = tag[:1]
    entity_type = tag[1:].split("-", maxsplit=1)[-1] or "_"
    return prefix, entity_type


def _end_of_chunk(prev_tag, tag, prev_type, type_) -> bool:
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != type_


def _start_of_chunk(prev_tag, tag, prev_type, type_) -> bool:
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != type_


def get_entities(tags: Sequence[str] | Sequence[Sequence[str]]) -> list[tuple[str, int, int]]:
    """Entity chunks as (type, start, end) with inclusive end, conlleval rules.

    Works for IOB1 and IOB2 (and IOBES): an entity starts at B-, at S-, at an I-
    or E- that follows O / a finished chunk (I- without B-), or wherever the type
    changes; it ends before O, B-, S-, after E-/S-, or where the type changes.
    A list of sentences is joined with an "O" between them (offsets then index
    the joined sequence, like seqeval).

    Example:
        >>> get_entities(["I-PER", "I-PER", "B-PER", "I-LOC", "O"])
        [('PER', 0, 1), ('PER', 2, 2), ('LOC', 3, 3)]
    """
    seq = list(tags)
    if any(isinstance(s, (list, tuple)) for s in seq):
        seq = [t for sentence in seq for t in list(sentence) + ["O"]]
    prev_tag, prev_type, begin = "O", "", 0
    chunks = []
    for i, tag in enumerate(seq + ["O"]):
        if not isinstance(tag, str) or not tag:
            raise ValueError(f"tags must be non-empty strings, got {tag!r} at position {i}")
        prefix, type_ = _split_tag(tag)
        if _end_of_chunk(prev_tag, prefix, prev_type, type_):
            chunks.append((prev_type, begin, i - 1))
        if _start_of_chunk(prev_tag, prefix, prev_type, type_):
            begin = i
        prev_tag, prev_type = prefix, type_
    return chunks


def entity_scores(y_true: Sequence[Sequence[str]], y_pred: Sequence[Sequence[str]]) -> dict:
    """Entity-level micro precision/recall/F1 (seqeval's default, conlleval semantics).

    An entity counts as correct only when type, start and end all match.

    Args:
      y_true, y_pred: lists of sentences, each a list of tags ("B-PER", "I-LOC", "O").

    Returns:
      {"precision", "recall", "f1", "num_true", "num_pred", "num_correct",
       "per_type": {type: {"precision", "recall", "f1", "support"}}}.
    """
    y_true = [list(s) for s in y_true]
    y_pred = [list(s) for s in y_pred]
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sentences but y_pred has {len(y_pred)}")
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        if len(t) != len(p):
            raise ValueError(f"sentence {i}: {len(t)} true tags but {len(p)} predicted tags")
    true_entities = set(get_entities(y_true))
    pred_entities = set(get_entities(y_pred))
    correct = true_entities & pred_entities
    precision, recall, f = _prf(len(correct), len(pred_entities - correct), len(true_entities - correct))
    per_type = {}
    for type_ in sorted({e[0] for e in true_entities | pred_entities}):
        t = {e for e in true_entities if e[0] == type_}
        p = {e for e in pred_entities if e[0] == type_}
        c = len(t & p)
        tp, tr, tf = _prf(c, len(p) - c, len(t) - c)
        per_type[type_] = {"precision": tp, "recall": tr, "f1": tf, "support": len(t)}
    return {
        "precision": precision,
        "recall": recall,
        "f1": f,
        "num_true": len(true_entities),
        "num_pred": len(pred_entities),
        "num_correct": len(correct),
        "per_type": per_type,
    }


def entity_f1(y_true: Sequence[Sequence[str]], y_pred: Sequence[Sequence[str]]) -> float:
    """Entity-level micro F1 (`entity_scores(...)["f1"]`, seqeval's `f1_score`)."""
    return entity_scores(y_true, y_pred)["f1"]


__all__ = [
    "accuracy",
    "f1",
    "binary_f1",
    "macro_f1",
    "matthews_corrcoef",
    "pearson",
    "spearman",
    "rankdata",
    "GLUE_TASK_METRICS",
    "glue_metrics",
    "squad_normalize_answer",
    "squad_exact_match",
    "squad_f1",
    "squad_evaluate",
    "get_entities",
    "entity_scores",
    "entity_f1",
]
