"""Multiple-choice examples -> feature rows, their batches, and the model's scores on them.

Each choice is packed as the pair (context, ending) by `BertPreprocessor` (the packer that
serving uses: `[CLS] context [SEP] ending [SEP]`, round-robin truncation), as transformers
users encode SWAG. One example is one feature: its K packed rows, (K, T_n) int32, padded
to the longest of them. Batches are (B, K, T), padded to the longest row of the batch and
drawn from buckets of similar length, as `batching` does for one row per example.

Shape legend: N examples, K choices, T tokens, B batch.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning import batching
from bert_keras.data.finetuning.label_map import all_labeled
from bert_keras.names import INPUT_NAMES
from bert_keras.text.preprocessor import BertPreprocessor

EXAMPLES_PER_CALL = 256  # examples packed per eager call of the packer


def num_choices(examples):
    """The K of every example; ValueError naming two examples that differ (a batch holds one
    K: give each data set one number of choices)."""
    first = examples[0]
    for ex in examples:
        if len(ex.choices) != len(first.choices):
            raise ValueError(f"{first.source or 'example 0'} has {len(first.choices)} choices "
                             f"and {ex.source or 'another example'} {len(ex.choices)}: every "
                             "example of a data set needs the same number of choices.")
    return len(first.choices)


def choice_labels(examples):
    """int32 [N] labels, or None when no example has one; ValueError for a mix."""
    if not all_labeled(examples):
        return None
    return np.array([ex.label for ex in examples], np.int32)


def choice_features(examples, tokenizer, seq_length):
    """{"input_word_ids", "input_mask", "input_type_ids": N int32 (K, T_n) arrays, and
    "labels": int32 [N] when the examples are labeled}."""
    if not examples:
        raise ValueError("no examples to featurize")
    k = num_choices(examples)
    labels = choice_labels(examples)
    packer = BertPreprocessor(tokenizer, seq_length=seq_length, pad_to_longest=True)
    features = {key: [] for key in INPUT_NAMES}
    for i in range(0, len(examples), EXAMPLES_PER_CALL):
        chunk = examples[i:i + EXAMPLES_PER_CALL]
        contexts = tf.constant([ex.context for ex in chunk for _ in range(k)], tf.string)
        endings = tf.constant([ending for ex in chunk for ending in ex.choices], tf.string)
        packed = {key: value.numpy().reshape(len(chunk), k, -1)
                  for key, value in packer(contexts, endings).items()}
        for n in range(len(chunk)):
            length = int(packed["input_mask"][n].sum(axis=1).max())
            for key in INPUT_NAMES:
                features[key].append(packed[key][n, :, :length])
    if labels is not None:
        features["labels"] = labels
    return features


def pad_choices(features, indices, pad_id=0, pad_multiple=batching.PAD_MULTIPLE):
    """Examples `indices` as dense (B, K, T) inputs, T the longest row rounded up to
    `pad_multiple`."""
    rows = {key: [features[key][i] for i in indices] for key in INPUT_NAMES}
    k = rows["input_word_ids"][0].shape[0]
    t = batching.round_up(max(r.shape[1] for r in rows["input_word_ids"]), pad_multiple)
    batch = {}
    for key, values in rows.items():
        dense = np.full((len(values), k, t), pad_id if key == "input_word_ids" else 0, np.int32)
        for b, value in enumerate(values):
            dense[b, :, :value.shape[1]] = value
        batch[key] = dense
    return batch


def _lengths(features):
    return np.array([r.shape[1] for r in features["input_word_ids"]])


def choice_dataset(features, batch_size, shuffle=False, seed=None, pad_id=0):
    """A tf.data.Dataset of (inputs (B, K, T), labels (B,)) batches, or inputs only when
    unlabeled; shuffled from length buckets every epoch when `shuffle`."""
    lengths = _lengths(features)
    labels = features.get("labels")
    rng = np.random.default_rng(seed)

    def generate():
        for indices in batching.batch_indices(lengths, batch_size, shuffle, rng):
            inputs = pad_choices(features, indices, pad_id)
            yield inputs if labels is None else (inputs, labels[indices])

    spec = {key: tf.TensorSpec((None, None, None), tf.int32) for key in INPUT_NAMES}
    if labels is not None:
        spec = (spec, tf.TensorSpec((None,), tf.int32))
    count = len(batching.batch_indices(lengths, batch_size, shuffle, np.random.default_rng(0)))
    return batching.generator_dataset(generate, spec, count)


def choice_logits(model, features, batch_size=64, pad_id=0):
    """float32 (N, K): the model's score of every choice, in example order."""
    lengths = _lengths(features)
    k = features["input_word_ids"][0].shape[0] if len(lengths) else 0
    logits = np.zeros((len(lengths), k), np.float32)
    for indices in batching.batch_indices(lengths, batch_size):
        logits[indices] = np.asarray(model.predict_on_batch(pad_choices(features, indices,
                                                                        pad_id)))
    return logits
