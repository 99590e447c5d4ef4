"""Reranking examples -> packed (query, document) rows, the groups a reranker trains on, and
its scores of every candidate.

Each candidate is packed as the pair (query, document) by `BertPreprocessor` (the packer that
serving uses: `[CLS] query [SEP] document [SEP]`, round-robin truncation, RoBERTa's double
separator), as `CrossEncoder` packs a pair. One feature per query: "input_word_ids",
"input_type_ids" (int32 (C, T_n), its C candidates' rows padded to the longest of them),
"row_lengths" (int32 (C,)) and "relevance" (int32 (C,): 1 positive, 0 negative).

Training: one group per query, its positives and its first `max_negatives` negatives (and,
with in-batch negatives, the first positive of each other query of the batch); a batch of B
groups is (B*K, T) rows and relevance (B, K), shorter groups filled with their first row
marked absent (-1: `losses`). With one positive that is sentence-transformers'
MultipleNegativesRankingLoss of a cross-encoder; with more, the listwise target spreads over
them (ListNet).

Shape legend: N queries, C candidates of a query, B groups, K candidates of a group, T tokens.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning import batching
from bert_keras.tasks.reranking.losses import ABSENT
from bert_keras.text.preprocessor import BertPreprocessor

ROWS_PER_CALL = 1024  # pairs packed per eager call of the packer
INPUT_KEYS = batching.INPUT_KEYS  # input_word_ids, input_type_ids


def pair_features(examples, tokenizer, seq_length):
    """The features of `examples` (RerankingExamples): one (C, T_n) feature per query."""
    if not examples:
        raise ValueError("no examples to featurize")
    packer = BertPreprocessor(tokenizer, seq_length=seq_length, pad_to_longest=True)
    pairs = [(n, ex.query, doc) for n, ex in enumerate(examples) for doc in ex.candidates]
    rows = {key: [] for key in INPUT_KEYS}
    for i in range(0, len(pairs), ROWS_PER_CALL):
        chunk = pairs[i:i + ROWS_PER_CALL]
        packed = packer(tf.constant([p[1] for p in chunk]), tf.constant([p[2] for p in chunk]))
        lengths = packed["input_mask"].numpy().sum(axis=1)
        for key in INPUT_KEYS:
            rows[key].extend(row[:n] for row, n in zip(packed[key].numpy(), lengths))
    features = {key: [] for key in INPUT_KEYS + ("row_lengths",)}
    start = 0
    for ex in examples:
        own = slice(start, start + len(ex.candidates))
        features["row_lengths"].append(np.array([len(r) for r in rows["input_word_ids"][own]],
                                                np.int32))
        width = max(features["row_lengths"][-1])
        for key in INPUT_KEYS:
            dense = np.zeros((len(ex.candidates), width), np.int32)
            for c, row in enumerate(rows[key][own]):
                dense[c, :len(row)] = row
            features[key].append(dense)
        start = own.stop
    features["relevance"] = [np.array(ex.relevance, np.int32) for ex in examples]
    return features


def training_group(relevance, max_negatives):
    """The candidate indices a query trains on: its positives, then its first negatives."""
    return (list(np.flatnonzero(relevance == 1))
            + list(np.flatnonzero(relevance == 0)[:max_negatives]))


def batch_of_groups(features, queries, max_negatives, in_batch_negatives, pad_id=0):
    """(inputs (B*K, T) with input_mask, relevance (B, K)) of the groups of `queries`."""
    groups = [[(n, c) for c in training_group(features["relevance"][n], max_negatives)]
              for n in queries]
    if in_batch_negatives:
        firsts = [g[0] for g in groups]
        groups = [g + [f for f in firsts if f[0] != g[0][0]] for g in groups]
    k = max(len(g) for g in groups)
    relevance = np.full((len(groups), k), ABSENT, np.float32)
    rows = {key: [] for key in INPUT_KEYS}
    for b, group in enumerate(groups):
        for j, (n, c) in enumerate(group + [group[0]] * (k - len(group))):
            if j < len(group):
                relevance[b, j] = float(features["relevance"][n][c]) if n == group[0][0] else 0.0
            for key in INPUT_KEYS:
                rows[key].append(features[key][n][c][:row_length(features, n, c)])
    batch = batching.pad_batch(rows, list(range(len(rows["input_word_ids"]))), pad_id=pad_id)
    return {key: batch[key] for key in INPUT_KEYS + ("input_mask",)}, relevance


def row_length(features, n, c):
    """The packed length of candidate c of query n (its row without padding)."""
    return int(features["row_lengths"][n][c])


def group_dataset(features, batch_size, *, max_negatives, in_batch_negatives=False,
                  shuffle=False, seed=None, pad_id=0):
    """A tf.data.Dataset of (inputs (B*K, T), relevance (B, K)) batches, a group per query,
    shuffled from length buckets every epoch when `shuffle`."""
    if max_negatives < 1 and not in_batch_negatives:
        raise ValueError("no negatives to train against: give max_negatives above 0, or "
                         "train with in-batch negatives")
    lengths = np.array([r.shape[1] for r in features["input_word_ids"]])
    rng = np.random.default_rng(seed)

    def generate():
        for indices in batching.batch_indices(lengths, batch_size, shuffle, rng):
            yield batch_of_groups(features, indices, max_negatives, in_batch_negatives, pad_id)

    spec = ({key: tf.TensorSpec((None, None), tf.int32) for key in INPUT_KEYS + ("input_mask",)},
            tf.TensorSpec((None, None), tf.float32))
    count = len(batching.batch_indices(lengths, batch_size, shuffle, np.random.default_rng(0)))
    return batching.generator_dataset(generate, spec, count)


def candidate_logits(model, features, batch_size=64, pad_id=0):
    """[float32 (C_n,)]: the model's logit of each candidate of each query, in order."""
    index = [(n, c) for n, rel in enumerate(features["relevance"]) for c in range(len(rel))]
    flat = {key: [features[key][n][c][:row_length(features, n, c)] for n, c in index]
            for key in INPUT_KEYS}
    rows = batching.predict(model, flat, batch_size, pad_id=pad_id)  # (1,) each
    logits = np.array([np.asarray(r).reshape(-1)[0] for r in rows], np.float32)
    ends = np.cumsum([len(rel) for rel in features["relevance"]])
    return np.split(logits, ends[:-1])
