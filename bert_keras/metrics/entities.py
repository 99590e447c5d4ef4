"""Entity-level precision/recall/F1 over tag sequences (seqeval's default mode).

Chunking follows conlleval (seqeval's non-strict default) for IOB1 / IOB2 / IOBES tags.

Example:
    >>> from bert_keras import metrics
    >>> metrics.entity_scores([["B-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]])["f1"]
    1.0
"""

from __future__ import annotations

from typing import Sequence

from bert_keras.metrics.classification import precision_recall_f1


def split_tag(tag: str) -> tuple[str, str]:
    """'B-PER' -> ('B', 'PER'); 'O' -> ('O', '_') exactly as seqeval does.

    `ends_chunk` and `starts_chunk` take the prefixes and types of two neighbouring tags."""
    prefix = tag[:1]
    entity_type = tag[1:].split("-", maxsplit=1)[-1] or "_"
    return prefix, entity_type


def ends_chunk(prev_tag, tag, prev_type, type_) -> bool:
    """Whether a chunk ends at the tag before `tag` (conlleval's rule)."""
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != type_


def starts_chunk(prev_tag, tag, prev_type, type_) -> bool:
    """Whether a chunk starts at `tag`, after `prev_tag` (conlleval's rule)."""
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
        prefix, type_ = split_tag(tag)
        if ends_chunk(prev_tag, prefix, prev_type, type_):
            chunks.append((prev_type, begin, i - 1))
        if starts_chunk(prev_tag, prefix, prev_type, type_):
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
    precision, recall, f = precision_recall_f1(len(correct), len(pred_entities - correct),
                                len(true_entities - correct))
    per_type = {}
    for type_ in sorted({e[0] for e in true_entities | pred_entities}):
        t = {e for e in true_entities if e[0] == type_}
        p = {e for e in pred_entities if e[0] == type_}
        c = len(t & p)
        tp, tr, tf = precision_recall_f1(c, len(p) - c, len(t) - c)
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


# split_tag, ends_chunk and starts_chunk are public for the served tagger's chunk tables
# (tasks/tagging/chunks.py), not names of bk.metrics.
__all__ = [
    "get_entities",
    "entity_scores",
    "entity_f1",
]
