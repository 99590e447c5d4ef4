"""Classification, regression and GLUE metrics: accuracy, F1, MCC, Pearson, Spearman.

Plain numpy over Python lists or numpy arrays, matching scikit-learn (F1, MCC)
and scipy (Pearson, Spearman with average ranks for ties); `glue_metrics` picks
each GLUE task's official metrics.

Example:
    >>> from bert_keras import metrics
    >>> metrics.f1([1, 0, 1, 1], [1, 0, 0, 1])
    0.8
"""

from __future__ import annotations

import math

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


def precision_recall_f1(tp: float, fp: float, fn: float) -> tuple[float, float, float]:
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
        return precision_recall_f1(tp, fp, fn)[2]
    labels = np.unique(np.concatenate([y_true, y_pred]))
    tps = np.array([np.sum((y_true == c) & (y_pred == c)) for c in labels])
    fps = np.array([np.sum((y_true != c) & (y_pred == c)) for c in labels])
    fns = np.array([np.sum((y_true == c) & (y_pred != c)) for c in labels])
    if average == "macro":
        return float(np.mean([precision_recall_f1(*c)[2] for c in zip(tps, fps, fns)]))
    if average == "micro":
        return precision_recall_f1(tps.sum(), fps.sum(), fns.sum())[2]
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


__all__ = [
    "precision_recall_f1",
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
]
