"""Length-bucketed batches of unpadded feature rows: padding only to the longest row of a batch.

Features are dicts of per-feature int32 rows (`input_word_ids`, `input_type_ids`, targets);
`pad_batch` pads a set of rows and adds `input_mask`, `batch_indices` groups rows of similar
length (sorted for prediction, bucketed and shuffled for training), `make_dataset` feeds
`model.fit`, `predict` runs a model over every row and returns outputs in feature order.
On CPU this is several times faster than padding everything to `seq_length`.

Shape legend: N features, T tokens of one feature (before padding), B batch.

>>> import numpy as np
>>> features = {"input_word_ids": [np.array([2, 5, 3], "int32"), np.array([2, 3], "int32")],
...             "input_type_ids": [np.zeros(3, "int32"), np.zeros(2, "int32")]}
>>> batch = pad_batch(features, [0, 1], pad_multiple=1)
>>> batch["input_word_ids"].tolist(), batch["input_mask"].tolist()
([[2, 5, 3], [2, 3, 0]], [[1, 1, 1], [1, 1, 0]])
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_keras.names import IGNORE_LABEL, INPUT_NAMES

# The one home of these key sets: the model inputs a feature row holds (`pad_batch` adds
# input_mask, making `names.INPUT_NAMES`), and the keys holding one value per token.
INPUT_KEYS = ("input_word_ids", "input_type_ids")
TOKEN_LEVEL_KEYS = ("input_word_ids", "input_type_ids", "labels", "word_index", "token_offsets",
                    "token_is_max_context",
                    "teacher_logits")  # task distillation: per token (T, C) when a list of rows


# Batches are padded to their longest row rounded up to this: fewer distinct shapes (XLA's fused
# training kernels compile once per shape) for a few pad tokens.
PAD_MULTIPLE = 8


def round_up(length: int, multiple: int) -> int:
    return -(-length // multiple) * multiple


def pad_batch(features: dict, indices: Sequence[int], pad_id: int = 0,
              pad_multiple: int = PAD_MULTIPLE, seq_length: int | None = None) -> dict:
    """Rows `indices` of token-level features padded to the longest row (rounded up to
    pad_multiple, capped at seq_length); adds input_mask. Other keys are gathered as is."""
    longest = max(len(features["input_word_ids"][i]) for i in indices)
    t = round_up(longest, pad_multiple)
    if seq_length is not None:
        t = max(min(t, seq_length), longest)
    batch = {}
    for key, value in features.items():
        if key in TOKEN_LEVEL_KEYS and not isinstance(value, np.ndarray):
            rows = [value[i] for i in indices]
            fill = {"input_word_ids": pad_id, "labels": IGNORE_LABEL, "word_index": -1,
                    "token_offsets": -1}.get(key, 0)
            dense = np.full((len(rows), t) + rows[0].shape[1:], fill, dtype=rows[0].dtype)
            for r, row in enumerate(rows):
                dense[r, :len(row)] = row
            batch[key] = dense  # (B, T, ...)
        else:
            batch[key] = np.asarray(value)[np.asarray(indices)] if len(indices) else value[:0]
    mask = np.zeros((len(indices), t), np.int32)
    for r, i in enumerate(indices):
        mask[r, :len(features["input_word_ids"][i])] = 1
    batch["input_mask"] = mask  # (B, T)
    return batch


def batch_indices(lengths: Sequence[int], batch_size: int, shuffle: bool = False,
                  rng: np.random.Generator | None = None,
                  bucket_batches: int = 50) -> list[np.ndarray]:
    """Batches of feature indices.

    shuffle=False: sorted by length (stable), so each batch pads little; callers undo the
    order with the indices. shuffle=True: random order, then sorted by length within
    chunks of `bucket_batches` batches, and the batches shuffled.
    """
    lengths = np.asarray(lengths)
    if not shuffle:
        order = np.argsort(lengths, kind="stable")
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    rng = rng or np.random.default_rng()
    order = rng.permutation(len(lengths))
    chunk = batch_size * max(1, bucket_batches)
    batches = []
    for c in range(0, len(order), chunk):
        part = order[c:c + chunk]
        part = part[np.argsort(lengths[part], kind="stable")]
        batches.extend(part[i:i + batch_size] for i in range(0, len(part), batch_size))
    rng.shuffle(batches)
    return batches


def make_dataset(features: dict, batch_size: int, label_keys=None, shuffle: bool = False,
                 seed: int | None = None, pad_id: int = 0, pad_multiple: int = PAD_MULTIPLE,
                 bucket_batches: int = 50) -> tf.data.Dataset:
    """A `tf.data.Dataset` of (inputs, targets) batches for `model.fit`, or inputs only.

    inputs: dict of input_word_ids, input_mask, input_type_ids, int32 (B, T), T = longest
    row of the batch rounded up to pad_multiple. label_keys: None (no targets), a key (e.g.
    "labels") or a tuple of keys (e.g. ("start_positions", "end_positions"): a dict).
    shuffle: reshuffled every epoch, drawn from length buckets (see `batch_indices`);
    without shuffle the batches come in order of length.
    """
    if isinstance(label_keys, str):
        label_keys = (label_keys,)
        single = True
    else:
        single = False
    label_keys = tuple(label_keys or ())
    missing = [k for k in label_keys if k not in features]
    if missing:
        raise ValueError(f"features have no {missing}; they have {sorted(features)}")
    lengths = np.array([len(r) for r in features["input_word_ids"]])
    keys = INPUT_KEYS + label_keys
    subset = {k: features[k] for k in keys}
    rng = np.random.default_rng(seed)

    def generate():
        for idx in batch_indices(lengths, batch_size, shuffle, rng, bucket_batches):
            batch = pad_batch(subset, idx, pad_id=pad_id, pad_multiple=pad_multiple)
            inputs = {k: batch[k] for k in INPUT_NAMES}
            if not label_keys:
                yield inputs
            elif single:
                yield inputs, batch[label_keys[0]]
            else:
                yield inputs, {k: batch[k] for k in label_keys}

    int_spec = tf.TensorSpec((None, None), tf.int32)
    input_spec = {k: int_spec for k in INPUT_NAMES}

    def spec(key):
        value = features[key]
        if isinstance(value, np.ndarray):
            return tf.TensorSpec((None,) + value.shape[1:], tf.as_dtype(value.dtype))
        return tf.TensorSpec((None, None) + value[0].shape[1:], tf.as_dtype(value[0].dtype))

    if not label_keys:
        signature = input_spec
    elif single:
        signature = (input_spec, spec(label_keys[0]))
    else:
        signature = (input_spec, {k: spec(k) for k in label_keys})
    num_batches = len(batch_indices(lengths, batch_size, shuffle, np.random.default_rng(0),
                                    bucket_batches))
    return generator_dataset(generate, signature, num_batches)


def generator_dataset(generate, signature, num_batches: int) -> tf.data.Dataset:
    """The batches `generate()` yields as a tf.data.Dataset of known cardinality (Keras then
    knows an epoch's steps), prefetched, and never auto-sharded: a generator cannot be
    sharded by files or data."""
    ds = tf.data.Dataset.from_generator(generate, output_signature=signature)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    ds = ds.apply(tf.data.experimental.assert_cardinality(num_batches)).with_options(options)
    return ds.prefetch(2)


def trace_for_any_batch(model, inputs: dict):
    """Traces `model.predict_on_batch`'s function once for batches of any size and length
    like `inputs`, unless it is traced already: on its own (reduce_retracing) it is traced
    for the first batch's shape, again with the length left open, and again with the size
    open too (the last, smaller batch), each trace a new graph to build and optimize.
    Anything else with a `predict_on_batch` (no Keras `make_predict_function`) is left alone."""
    make_predict_function = getattr(model, "make_predict_function", None)
    if make_predict_function is None:
        return
    make_predict_function()
    function = model.predict_function
    if hasattr(function, "get_concrete_function"):  # a tf.function (not with run_eagerly)
        spec = {k: tf.TensorSpec((None,) * np.ndim(v), tf.as_dtype(np.asarray(v).dtype))
                for k, v in inputs.items()}
        function.get_concrete_function([(spec,)])  # Keras' predict_on_batch calls it so


def predict(model, features: dict, batch_size: int = 64, token_outputs=(), pad_id: int = 0,
            pad_multiple: int = PAD_MULTIPLE):
    """Runs `model` over all features in length-sorted batches; outputs in feature order.

    Returns one numpy row per feature (a list, or a dict of lists for dict outputs).
    token_outputs: the names of per-token outputs (True for a single per-token output),
    trimmed to each feature's unpadded length, e.g. ("start_logits", "end_logits").
    """
    lengths = np.array([len(r) for r in features["input_word_ids"]])
    subset = {k: features[k] for k in INPUT_KEYS}
    results = [None] * len(lengths)
    for b, idx in enumerate(batch_indices(lengths, batch_size)):
        batch = pad_batch(subset, idx, pad_id=pad_id, pad_multiple=pad_multiple)
        inputs = {k: batch[k] for k in INPUT_NAMES}
        if not b:
            trace_for_any_batch(model, inputs)
        out = model.predict_on_batch(inputs)
        if isinstance(out, dict):
            out = {k: np.asarray(v) for k, v in out.items()}
        else:
            out = np.asarray(out)
        for r, i in enumerate(idx):
            n = lengths[i]
            if isinstance(out, dict):
                results[i] = {k: v[r, :n] if k in token_outputs else v[r] for k, v in out.items()}
            else:
                results[i] = out[r, :n] if token_outputs is True else out[r]
    if results and isinstance(results[0], dict):
        return {k: [res[k] for res in results] for k in results[0]}
    return results
