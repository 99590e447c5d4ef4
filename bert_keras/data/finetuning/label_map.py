"""LabelMap: task label strings <-> integer ids (sorted, saved with the model as JSON)."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Iterable, Sequence

import numpy as np
import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.files import read_json

_INT_RE = re.compile(r"[+-]?\d+")


def _sort_labels(labels: Iterable[str]) -> list[str]:
    labels = set(labels)
    if labels and all(_INT_RE.fullmatch(label) for label in labels):
        return sorted(labels, key=lambda label: (int(label), label))  # "2" before "10"
    return sorted(labels)


def all_labeled(examples) -> bool:
    """True when every example has a label, False when none has; ValueError for a mix (a
    task's features are all trained on or all predicted, never half of each).

    >>> from types import SimpleNamespace as Ex
    >>> all_labeled([Ex(label="a"), Ex(label="b")]), all_labeled([Ex(label=None)])
    (True, False)
    >>> all_labeled([Ex(label="a"), Ex(label=None, source="f.tsv:2")])
    Traceback (most recent call last):
    ...
    ValueError: 1 of 2 examples have no label, e.g. the one from f.tsv:2: label all or none of them.
    """
    unlabeled = [ex for ex in examples if ex.label is None]
    if unlabeled and len(unlabeled) < len(examples):
        raise ValueError(f"{len(unlabeled)} of {len(examples)} examples have no label, e.g. the "
                         f"one from {unlabeled[0].source}: label all or none of them.")
    return not unlabeled


class LabelMap:
    """Label strings <-> integer ids, saved with the model as JSON.

    `LabelMap.infer` / `from_examples` build it from training labels: sorted
    (numerically when every label is an integer), so the same data always gives
    the same ids. `LabelMap(labels)` keeps the order given (e.g. a TFDS
    ClassLabel's). `encode` raises ValueError naming an unseen label and the
    file:line it came from.

    multi_label=True: every label is a list of strings and `encode` returns
    multi-hot float32 [N, num_labels].

    Example:
        >>> m = LabelMap.infer(["pos", "neg", "pos"])
        >>> m.labels, m.encode(["neg", "pos"]).tolist(), m.decode([1])
        (['neg', 'pos'], [0, 1], ['pos'])
        >>> LabelMap.infer([["a", "b"], ["c"]], multi_label=True).encode([["c", "a"]]).tolist()
        [[1.0, 0.0, 1.0]]
    """

    def __init__(self, labels: Sequence[str], multi_label: bool = False):
        labels = [str(label) for label in labels]
        if not labels:
            raise ValueError("a LabelMap needs at least one label, got none")
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"duplicate labels {duplicates} in {labels}")
        self.labels = labels
        self.multi_label = bool(multi_label)
        self._ids = {label: i for i, label in enumerate(labels)}

    @classmethod
    def infer(cls, labels: Iterable, multi_label: bool = False) -> "LabelMap":
        """From training labels (a list of str; a list of lists if multi_label)."""
        if multi_label:
            return cls(_sort_labels(str(label) for group in labels for label in group),
                       multi_label=True)
        return cls(_sort_labels(str(label) for label in labels))

    @classmethod
    def from_examples(cls, examples: Sequence) -> "LabelMap":
        """From training examples that name their labels (`map_labels()` and `multi_label`:
        a task type's example, such as ClassificationExample or TaggingExample)."""
        if not examples:
            raise ValueError("no examples to build a LabelMap from")
        first = examples[0]
        if not callable(getattr(first, "map_labels", None)):
            raise ValueError("expected examples that name their labels (ClassificationExample, "
                             f"TaggingExample), got {type(first).__name__}")
        return cls(_sort_labels(str(label) for ex in examples for label in ex.map_labels()),
                   multi_label=first.multi_label)

    @property
    def num_labels(self) -> int:
        return len(self.labels)

    def __len__(self) -> int:
        return len(self.labels)

    def __contains__(self, label) -> bool:
        return str(label) in self._ids

    def __eq__(self, other) -> bool:
        return isinstance(other, LabelMap) and (
            (self.labels, self.multi_label) == (other.labels, other.multi_label))

    def __repr__(self) -> str:
        return f"LabelMap({self.labels!r}, multi_label={self.multi_label})"

    def _id(self, label, where: str) -> int:
        try:
            return self._ids[str(label)]
        except KeyError:
            known = self.labels if len(self.labels) <= 20 else self.labels[:20] + ["..."]
            raise InputError(  # the data's mistake: the tools print it in one line
                f"label {label!r} in {where} is not in the label map (built from the "
                f"training labels): {known}"
            ) from None

    @staticmethod
    def _unpack(items, sources, attr):
        items = list(items)
        if sources is not None and len(sources) != len(items):
            raise ValueError(f"{len(items)} labels but {len(sources)} sources")
        values, wheres = [], []
        for i, item in enumerate(items):
            if dataclasses.is_dataclass(item):
                values.append(getattr(item, attr))
                wheres.append(item.source or f"row {i}")
            else:
                values.append(item)
                wheres.append(sources[i] if sources is not None else f"row {i}")
        return values, wheres

    def encode(self, labels: Sequence, sources: Sequence[str] | None = None) -> np.ndarray:
        """Labels (or ClassificationExamples) -> int32 [N], or multi-hot float32 [N, C].

        sources: optional "file:line" per label, used in the error for an unseen
        label (examples carry their own).
        """
        values, wheres = self._unpack(labels, sources, "label")
        if not self.multi_label:
            return np.array([self._id(v, w) for v, w in zip(values, wheres)], dtype=np.int32)
        out = np.zeros((len(values), len(self.labels)), dtype=np.float32)  # (N, C)
        for row, (group, where) in enumerate(zip(values, wheres)):
            if isinstance(group, str):
                raise ValueError(
                    f"multi-label map needs a list of labels in {where}, got {group!r}")
            for label in group:
                out[row, self._id(label, where)] = 1.0
        return out

    def encode_tags(self, sequences: Sequence,
                    sources: Sequence[str] | None = None) -> list[np.ndarray]:
        """Tag sequences (or TaggingExamples) -> list of int32 [words] arrays."""
        values, wheres = self._unpack(sequences, sources, "tags")
        return [np.array([self._id(t, w) for t in tags], dtype=np.int32)
                for tags, w in zip(values, wheres)]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Integer ids -> label strings."""
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.labels):
                raise ValueError(f"label id {i} is out of range for {len(self.labels)} labels")
            out.append(self.labels[i])
        return out

    def decode_multi_hot(self, scores, threshold: float = 0.5) -> list[list[str]]:
        """[N, C] scores/probabilities -> list of the labels scoring >= threshold."""
        scores = np.asarray(scores)
        return [[self.labels[j] for j in np.flatnonzero(row >= threshold)] for row in scores]

    def get_config(self) -> dict:
        return {"labels": list(self.labels), "multi_label": self.multi_label}

    def save(self, path: str) -> None:
        """Write {"labels": [...], "multi_label": bool} as JSON."""
        with tf.io.gfile.GFile(path, "w") as f:
            json.dump(self.get_config(), f, ensure_ascii=False, indent=1)

    @classmethod
    def load(cls, path: str) -> "LabelMap":
        config = read_json(path)
        if "labels" not in config:
            raise InputError(f"{path} is not a LabelMap JSON file (no 'labels').")
        return cls(config["labels"], multi_label=config.get("multi_label", False))
