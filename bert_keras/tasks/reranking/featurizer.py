"""Reranking examples -> packed (query, document) rows, the groups a reranker trains on, and
its scores of every candidate.

Each candidate is packed as the pair (query, document) by `BertPreprocessor` (the packer that
serving uses: `[CLS] query [SEP] document [SEP]`, round-robin truncation, RoBERTa's double
separator), as `CrossEncoder` packs a pair. The features are one row per (query, candidate):
"input_word_ids", "input_type_ids" (unpadded int32 rows, as `batching` pads them),
"example" (the query's index) and "relevance" (1 positive, 0 negative), int32 arrays.

Training groups: one per positive, [positive, its query's first `max_negatives` negatives]
(and, with in-batch negatives, the positives of the batch's other queries); a batch of B
groups is (B*K, T) rows and relevance (B, K), shorter groups filled with their positive
marked absent (-1: `losses`).

Shape legend: N rows, B groups, K candidates of a group, T tokens.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning import batching
from bert_keras.tasks.reranking.losses import ABSENT
from bert_keras.text.preprocessor import BertPreprocessor

ROWS_PER_CALL = 1024  # pairs packed per eager call of the packer


def pair_features(examples, tokenizer, seq_length):
    """The features of `examples` (RerankingExamples): one row per (query, candidate)."""
    if not examples:
        raise ValueError("no examples to featurize")
    packer = BertPreprocessor(tokenizer, seq_length=seq_length, pad_to_longest=True)
    pairs = [(n, ex.query, doc, rel) for n, ex in enumerate(examples)
             for doc, rel in zip(ex.candidates, ex.relevance)]
    features = {"input_word_ids": [], "input_type_ids": []}
    for i in range(0, len(pairs), ROWS_PER_CALL):
        chunk = pairs[i:i + ROWS_PER_CALL]
        packed = packer(tf.constant([p[1] for p in chunk]), tf.constant([p[2] for p in chunk]))
        lengths = packed["input_mask"].numpy().sum(axis=1)
        for key in features:
            rows = packed[key].numpy()
            features[key].extend(row[:n] for row, n in zip(rows, lengths))
    features["example"] = np.array([p[0] for p in pairs], np.int32)
    features["relevance"] = np.array([p[3] for p in pairs], np.int32)
    return features


def training_groups(features, max_negatives):
    """[row indices] per group: each positive row, then its query's first negatives."""
    example, relevance = features["example"], features["relevance"]
    groups = []
    for n in np.unique(example):
        rows = np.flatnonzero(example == n)
        negatives = list(rows[relevance[rows] == 0][:max_negatives])
        groups.extend([int(p)] + negatives for p in rows[relevance[rows] == 1])
    return groups


def _batch_groups(groups, features, in_batch_negatives):
    """The rows (B*K,) and relevance (B, K) of a batch of groups."""
    example = features["example"]
    if in_batch_negatives:
        positives = [g[0] for g in groups]
        groups = [g + [p for p in positives if example[p] != example[g[0]]] for g in groups]
    k = max(len(g) for g in groups)
    rows = np.array([g + [g[0]] * (k - len(g)) for g in groups], np.int64)  # (B, K)
    relevance = np.where(np.arange(k)[None, :] < np.array([len(g) for g in groups])[:, None],
                         features["relevance"][rows], ABSENT).astype(np.float32)
    return rows.reshape(-1), relevance


def group_dataset(features, batch_size, *, groups, in_batch_negatives=False, shuffle=False,
                  seed=None, pad_id=0):
    """A tf.data.Dataset of (inputs (B*K, T), relevance (B, K)) batches of `groups`
    (`training_groups`), shuffled from length buckets every epoch when `shuffle`."""
    if not groups:
        raise ValueError("no training groups: no example has a positive")
    if max(len(g) for g in groups) < 2 and not in_batch_negatives:
        raise ValueError("no negatives to train against: give the queries negatives (or "
                         "--max_negatives above 0), or train with in-batch negatives")
    row_lengths = np.array([len(r) for r in features["input_word_ids"]])
    lengths = np.array([row_lengths[g].max() for g in groups])
    inputs = {key: features[key] for key in batching.INPUT_KEYS}
    rng = np.random.default_rng(seed)

    def generate():
        for indices in batching.batch_indices(lengths, batch_size, shuffle, rng):
            rows, relevance = _batch_groups([groups[i] for i in indices], features,
                                            in_batch_negatives)
            batch = batching.pad_batch(inputs, rows, pad_id=pad_id)
            yield {key: batch[key] for key in batching.INPUT_KEYS + ("input_mask",)}, relevance

    spec = ({key: tf.TensorSpec((None, None), tf.int32)
             for key in batching.INPUT_KEYS + ("input_mask",)},
            tf.TensorSpec((None, None), tf.float32))
    count = len(batching.batch_indices(lengths, batch_size, shuffle, np.random.default_rng(0)))
    ds = tf.data.Dataset.from_generator(generate, output_signature=spec)
    options = tf.data.Options()  # a generator cannot be sharded by files or data
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return ds.apply(tf.data.experimental.assert_cardinality(count)).with_options(
        options).prefetch(2)


def candidate_logits(model, features, num_examples, batch_size=64, pad_id=0):
    """[float32 (C_n,)]: the model's logit of each candidate of each example, in order."""
    inputs = {key: features[key] for key in batching.INPUT_KEYS}
    rows = batching.predict(model, inputs, batch_size, pad_id=pad_id)  # N x (1,)
    logits = np.array([np.asarray(r).reshape(-1)[0] for r in rows], np.float32)
    return [logits[features["example"] == n] for n in range(num_examples)]
