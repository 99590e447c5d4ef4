"""Classification examples -> model features: single sentences or pairs, packed by
`BertPreprocessor` (the same packer that serving uses): `[CLS] A [SEP] (B [SEP])`, round-robin
truncation. Targets `labels`: int32 [N] (single-label), multi-hot float32 [N, C]
(multi-label) or float32 [N] (regression).

Shape legend: N features, T tokens of one feature (before padding), C classes.

Example:
    >>> from bert_keras import finetuning_data as fd
    >>> from bert_keras.data.finetuning.label_map import LabelMap
    >>> from bert_keras.data.pretraining.pipeline import default_vocab_file
    >>> from bert_keras.text.tokenizer import WordPieceTokenizer
    >>> tok = WordPieceTokenizer(default_vocab_file())
    >>> train = fd.load_bundled_task("bible_paraphrase", "train")[:4]
    >>> feats = classification_features(train, tok, 32, LabelMap.from_examples(train))
    >>> sorted(feats), feats["labels"].tolist()
    (['input_type_ids', 'input_word_ids', 'labels'], [1, 0, 1, 0])
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning.features import TOKENIZE_CHUNK
from bert_keras.data.finetuning.label_map import LabelMap, all_labeled
from bert_keras.tasks.classification.reader import LABEL_TYPES, ClassificationExample
from bert_keras.text.preprocessor import BertPreprocessor


def classification_labels(examples: Sequence[ClassificationExample], label_type: str,
                          label_map: LabelMap | None) -> np.ndarray | None:
    """Targets of classification examples, or None when every example is unlabeled.

    By `label_type` (the readers' label_type, which the classification task types'
    `ProblemType` names): single -> int32 [N]; multi -> float32 [N, C]; regression ->
    float32 [N]. Unseen labels raise ValueError naming the label and the file:line it came
    from.
    """
    if label_type not in LABEL_TYPES:
        raise ValueError(f"label_type must be one of {LABEL_TYPES}, got {label_type!r}")
    if not all_labeled(examples):
        return None
    if label_type == "regression":
        bad = [ex for ex in examples if not isinstance(ex.label, (int, float))]
        if bad:
            raise ValueError(
                f"regression needs numeric labels; {bad[0].source} has {bad[0].label!r}")
        return np.array([ex.label for ex in examples], np.float32)
    if label_map is None:
        raise ValueError(f"label_type {label_type!r} needs a label_map "
                         "(LabelMap.from_examples(train))")
    if label_map.multi_label != (label_type == "multi"):
        raise ValueError(f"label_type {label_type!r} needs a LabelMap with "
                         f"multi_label={label_type == 'multi'}, got {label_map!r}")
    return label_map.encode(examples)


def classification_features(examples: Sequence[ClassificationExample], tokenizer, seq_length: int,
                            label_map: LabelMap | None = None, label_type: str = "single") -> dict:
    """Classification examples -> features packed by `BertPreprocessor` (round-robin truncation).

    Returns {"input_word_ids", "input_type_ids"}: lists of N unpadded int32 [T] rows, and
    "labels" (see `classification_labels`) when the examples are labeled.
    All examples must be single sentences, or all pairs.
    """
    if not examples:
        raise ValueError("no examples to featurize")
    pairs = {ex.text_b is not None for ex in examples}
    if len(pairs) > 1:
        raise ValueError("examples mix single sentences and pairs (text_b None in some rows only)")
    is_pair = pairs.pop()
    labels = classification_labels(examples, label_type, label_map)
    packer = BertPreprocessor(tokenizer, seq_length=seq_length, pad_to_longest=True)
    word_ids, type_ids = [], []
    for i in range(0, len(examples), TOKENIZE_CHUNK):
        chunk = examples[i:i + TOKENIZE_CHUNK]
        a = tf.constant([ex.text_a for ex in chunk], tf.string)
        b = tf.constant([ex.text_b for ex in chunk], tf.string) if is_pair else None
        packed = packer(a, b)
        lengths = packed["input_mask"].numpy().sum(axis=1)  # (B,)
        ids, types = packed["input_word_ids"].numpy(), packed["input_type_ids"].numpy()
        word_ids.extend(ids[j, :n] for j, n in enumerate(lengths))
        type_ids.extend(types[j, :n] for j, n in enumerate(lengths))
    features = {"input_word_ids": word_ids, "input_type_ids": type_ids}
    if labels is not None:
        features["labels"] = labels
    return features


__all__ = [
    "classification_labels",
    "classification_features",
]
