"""Raw text in `fit`, `evaluate` and `predict` of a task model that carries a preprocessor:
recognise it, and turn it into a `tf.data.Dataset` of batches that the preprocessor packs in
the input pipeline (keras-hub's PipelineModel does the same).

Text is a list or array of strings, a pair `(texts_a, texts_b)` of two such, or a
`tf.data.Dataset` whose elements are `texts` or `(texts, labels[, weights])`, with `texts` a
string tensor or a pair of them. Anything else (dicts of ids) is not text and passes through.

>>> is_text(["a", "b"]), is_text((["a"], ["b"])), is_text({"input_word_ids": [[1]]})
(True, True, False)
>>> ds = text_dataset(["a b", "c"], y=[0, 1], batch_size=2,
...                   preprocess=lambda t: tf.strings.split(t).to_tensor(""))
>>> [x.numpy().tolist() for x, _ in ds]
[[[b'a', b'b'], [b'c', b'']]]
"""

import numpy as np
import tensorflow as tf

DEFAULT_BATCH_SIZE = 32  # Keras' default for arrays


def _is_string_batch(x):
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and all(isinstance(t, (str, bytes)) for t in x)
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "OSU" and x.ndim == 1 and (
            x.dtype.kind != "O" or all(isinstance(t, (str, bytes)) for t in x))
    return isinstance(x, tf.Tensor) and x.dtype == tf.string


def _is_pair(x):
    return (isinstance(x, tuple) and len(x) == 2 and not isinstance(x[0], (str, bytes))
            and all(_is_string_batch(t) for t in x))


def _is_string_spec(spec):
    if isinstance(spec, tuple) and len(spec) == 2:
        return all(_is_string_spec(s) for s in spec)
    return isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string


def _texts_of_element(spec):
    """The texts part of a dataset element spec: the element, or its first item."""
    if isinstance(spec, tuple) and not _is_string_spec(spec):
        return spec[0]
    return spec


def is_text(x):
    """Whether `x` is raw text (strings, a pair of them, or a dataset of them)."""
    if isinstance(x, tf.data.Dataset):
        return _is_string_spec(_texts_of_element(x.element_spec))
    return _is_pair(x) or _is_string_batch(x)


def text_count(x):
    """1 for single texts, 2 for pairs (`x` is text)."""
    if isinstance(x, tf.data.Dataset):
        texts = _texts_of_element(x.element_spec)
        return 2 if isinstance(texts, tuple) else 1
    return 2 if _is_pair(x) else 1


def text_dataset(x, preprocess, y=None, sample_weight=None, batch_size=None, shuffle=False):
    """Batches of `(preprocess(texts), y, sample_weight)` (those given) from text `x`.

    Arrays are sliced, shuffled each epoch when `shuffle`, and batched by `batch_size`
    (default 32); a dataset is used as it is, batched first if its elements are single rows.
    """
    if isinstance(x, tf.data.Dataset):
        dataset = x
        texts = _texts_of_element(dataset.element_spec)
        if (texts[0] if isinstance(texts, tuple) else texts).shape.rank == 0:
            dataset = dataset.batch(batch_size or DEFAULT_BATCH_SIZE)
    else:
        texts = tuple(_strings(t) for t in x) if _is_pair(x) else _strings(x)
        parts = (texts,) + tuple(np.asarray(p) for p in (y, sample_weight) if p is not None)
        dataset = tf.data.Dataset.from_tensor_slices(parts)
        if shuffle:
            dataset = dataset.shuffle(len(parts[-1]), reshuffle_each_iteration=True)
        dataset = dataset.batch(batch_size or DEFAULT_BATCH_SIZE)

    def pack(*element):
        if len(element) == 2 and all(isinstance(e, tf.Tensor) and e.dtype == tf.string
                                     for e in element):
            return (preprocess(element),)  # a dataset of pairs, without labels
        return (preprocess(element[0]),) + element[1:]

    return dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def _strings(batch):
    return tf.constant([t if isinstance(t, bytes) else str(t).encode("utf-8")
                        for t in (batch.numpy().tolist() if isinstance(batch, tf.Tensor)
                                  else batch)], tf.string)
