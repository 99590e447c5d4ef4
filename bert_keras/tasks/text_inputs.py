"""Raw text in `fit`, `evaluate` and `predict` of a task model that carries a preprocessor:
recognise it, and turn it into a `tf.data.Dataset` of batches that the preprocessor packs as
the pipeline reads them (keras-hub's PipelineModel maps its preprocessor the same way).

Text is one string, a list or array of strings, a pair `(texts_a, texts_b)` of two lists or
arrays (a tuple of two strings is two texts, not a pair), or a `tf.data.Dataset` whose
elements are `texts` or `(texts, labels[, weights])`, with `texts` a string tensor or a pair
of them. A [batch, 1] column of strings (a DataFrame's `df[["text"]]`)
counts as [batch]; strings of any other shape are refused with a ValueError. Anything else
(dicts of ids) is not text and passes through.

>>> is_text(["a", "b"]), is_text((["a"], ["b"])), is_text({"input_word_ids": [[1]]})
(True, True, False)
>>> ds = text_dataset(["a b", "c"], y=[0, 1], batch_size=2,
...                   preprocess=tf.function(lambda t: tf.strings.split(t).to_tensor("")))
>>> [x.numpy().tolist() for x, _ in ds]
[[[b'a', b'b'], [b'c', b'']]]
"""

import numpy as np
import tensorflow as tf

DEFAULT_BATCH_SIZE = 32  # Keras' default for arrays


def _is_string_batch(x):
    """Strings in a list, array or tensor (of any shape, with other items among them:
    `text_column` checks both)."""
    if isinstance(x, (str, bytes)):  # one text
        return True
    if isinstance(x, (list, tuple)):  # an empty list too: `text_column` says it is empty
        return not x or any(isinstance(t, (str, bytes)) for t in x)
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "SU" or (x.dtype.kind == "O" and any(
            isinstance(t, (str, bytes)) for t in x.flat))
    return isinstance(x, tf.Tensor) and x.dtype == tf.string


def _check_column(shape):
    """Refuses a shape of texts other than [batch] or a [batch, 1] column (or a scalar,
    which only a dataset's unbatched elements have)."""
    shape = tuple(shape)
    if len(shape) <= 1 or (len(shape) == 2 and shape[1] == 1):
        return
    raise ValueError(f"Texts must be a [batch] of strings (or a [batch, 1] column), got shape "
                     f"{shape}; pass pairs as a tuple (texts_a, texts_b).")


def text_column(texts):
    """`texts` (strings, [batch] or [batch, 1]) as a [batch] string tensor."""
    if isinstance(texts, tf.Tensor):
        _check_column(texts.shape)
        return tf.reshape(texts, [-1])
    array = np.asarray(texts, dtype=object)
    _check_column(array.shape)
    flat = array.reshape(-1)
    if not len(flat):
        raise ValueError("No texts: x is empty.")
    for i, t in enumerate(flat):
        if not isinstance(t, (str, bytes)):
            raise ValueError(f"Text {i} is {t!r} ({type(t).__name__}), not a string.")
    return tf.constant([t if isinstance(t, bytes) else t.encode("utf-8") for t in flat],
                       tf.string)


def _columns(x):
    """Text arrays `x` (texts, or a pair of them) as [batch] string tensors."""
    return tuple(text_column(t) for t in x) if _is_pair(x) else text_column(x)


def _count_rows(texts, y, sample_weight):
    """The number of examples; ValueError unless every part has that many rows."""
    parts = dict(zip(("texts_a", "texts_b"), texts)) if isinstance(texts, tuple) else dict(
        texts=texts)
    parts.update((name, p) for name, p in (("y", y), ("sample_weight", sample_weight))
                 if p is not None)
    rows = {name: len(p) for name, p in parts.items()}
    if len(set(rows.values())) > 1:
        raise ValueError("The texts and their labels differ in length: " + ", ".join(
            f"{name} has {n}" for name, n in rows.items()) + ".")
    return next(iter(rows.values()))


def split_off(x, y, sample_weight, fraction):
    """`((x, y, sample_weight), validation)`: the last `fraction` of text arrays `x` and of
    `y` and `sample_weight` (those given) split off as validation data, as Keras'
    `validation_split` does with arrays (before shuffling)."""
    if isinstance(x, tf.data.Dataset):
        raise ValueError("validation_split takes arrays of texts, not a tf.data.Dataset; "
                         "give validation_data instead.")
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split must be in (0, 1), got {fraction!r}.")
    texts = _columns(x)
    n = _count_rows(texts, y, sample_weight)
    cut = int(n * (1.0 - fraction))
    if cut == 0:
        raise ValueError(f"validation_split={fraction!r} of {n} examples leaves no training "
                         "examples.")

    def split(part):
        if part is None:
            return None, None
        if isinstance(part, tuple):
            halves = [split(p) for p in part]
            return tuple(h[0] for h in halves), tuple(h[1] for h in halves)
        part = part if isinstance(part, tf.Tensor) else np.asarray(part)
        return part[:cut], part[cut:]

    (x_train, x_val), (y_train, y_val), (w_train, w_val) = (
        split(texts), split(y), split(sample_weight))
    validation = tuple(p for p in (x_val, y_val, w_val) if p is not None)
    return (x_train, y_train, w_train), validation


def _squeezed(texts):
    """A dataset's [batch, 1] column of texts as [batch]; other texts as they are."""
    if isinstance(texts, tuple):
        return tuple(_squeezed(t) for t in texts)
    return tf.squeeze(texts, -1) if texts.shape.rank == 2 else texts


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

    Arrays are shuffled each epoch when `shuffle` and batched by `batch_size` (default 32),
    each batch packed as the pipeline asks for it (`packed_batches`); a dataset is used as it
    is, batched first if its elements are single rows, and packed by a map.
    """
    if not isinstance(x, tf.data.Dataset):
        texts = _columns(x)
        _count_rows(texts, y, sample_weight)
        extras = tuple(p for p in (y, sample_weight) if p is not None)
        return packed_batches(texts, preprocess, extras=extras, batch_size=batch_size,
                              shuffle=shuffle)
    dataset = x
    texts = _texts_of_element(dataset.element_spec)
    for spec in texts if isinstance(texts, tuple) else (texts,):
        _check_column(spec.shape)
    if (texts[0] if isinstance(texts, tuple) else texts).shape.rank == 0:
        dataset = dataset.batch(batch_size or DEFAULT_BATCH_SIZE)

    @tf.autograph.experimental.do_not_convert  # plain TF ops: converting only costs time
    def pack(*element):
        if len(element) == 2 and all(isinstance(e, tf.Tensor) and e.dtype == tf.string
                                     for e in element):
            return (preprocess(_squeezed(element)),)  # a dataset of pairs, without labels
        return (preprocess(_squeezed(element[0])),) + element[1:]

    return dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def packed_batches(texts, preprocess, combine=None, extras=(), batch_size=None,
                   shuffle=False):
    """A dataset of `(preprocess(combine(texts' rows)), *extras' rows)` per batch of
    `batch_size` rows (default 32) of `texts` ([N] string tensors: one, or a tuple of them)
    and the arrays `extras` (labels, weights), in a new random order each pass when
    `shuffle`; `combine` (default: the rows as they are) turns a batch of `texts` into
    what `preprocess` takes.

    `preprocess` (a tf.function: a preprocessor's `batch_function`) runs eagerly, batch by
    batch, as the pipeline asks, traced once for batches of any size: its graph is
    instantiated once per process, where a dataset mapping it instantiates and optimizes it
    again for each iterator, that is each epoch and each predict call (0.02 s for WordPiece,
    0.12 s for a byte-level BPE tokenizer). The order is drawn from TensorFlow's global seed
    (`keras.utils.set_random_seed`)."""
    combine = combine or (lambda rows: rows)
    batch_size = batch_size or DEFAULT_BATCH_SIZE
    extras = tuple(tf.constant(np.asarray(e)) for e in extras)
    rows = int(tf.nest.flatten(texts)[0].shape[0])
    # Traced for batches of any size: a first eager call would trace for its own size.
    strings = tf.nest.map_structure(lambda t: tf.TensorSpec([None], tf.string),
                                    combine(tf.nest.map_structure(lambda t: t[:1], texts)))
    packed = preprocess.get_concrete_function(strings).structured_outputs
    # A packed batch is as wide as its longest row; labels keep their other dims.
    signature = (tf.nest.map_structure(lambda t: tf.TensorSpec([None] * t.shape.rank, t.dtype),
                                       packed),) + tuple(
        tf.TensorSpec([None, *e.shape[1:]], e.dtype) for e in extras)
    seed = int(tf.random.uniform((), maxval=2**31 - 1, dtype=tf.int32)) if shuffle else 0
    passes = [0]

    def batches():
        order = np.arange(rows)
        if shuffle:
            order = np.random.default_rng([seed, passes[0]]).permutation(rows)
            passes[0] += 1
        for start in range(0, rows, batch_size):
            index = tf.constant(order[start:start + batch_size])
            batch = tf.nest.map_structure(lambda t: tf.gather(t, index), texts)
            yield (preprocess(combine(batch)),) + tuple(tf.gather(e, index) for e in extras)

    dataset = tf.data.Dataset.from_generator(batches, output_signature=signature)
    return dataset.apply(tf.data.experimental.assert_cardinality(-(-rows // batch_size))
                         ).prefetch(tf.data.AUTOTUNE)
