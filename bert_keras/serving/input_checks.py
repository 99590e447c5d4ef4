"""In-graph checks of serving inputs: a bad request fails with InvalidArgument naming the input.

The signatures declare their shapes (tf.string [B], int32 [B, T]), but nothing enforces them
at run time: TF Serving (and a TF1 Session) feeds whatever tensor the request holds, and
`tf.saved_model.load`'s signature functions take a tf.Tensor of any shape. Without these
checks a 2x2 text tensor is answered as if it were a batch of two texts, and a token id of -7
or >= vocab_size is read as some other token (or as zeros, on a GPU). So each signature
checks its inputs here, as graph ops, before any other op reads them: the request fails with
an InvalidArgumentError ("assertion failed: [input_word_ids must be in [0, 1000) (the
vocabulary of the model); got] [-7]") and the server keeps serving.

A rank is never taken from a static shape: the traced shapes are the declared ones, so
`tf.rank` or `tf.debugging.assert_rank` would be decided at trace time, and even a Rank op is
folded into a constant by Grappler in `tf.saved_model.load`'s function runtime, which trusts
the declared shapes. `_request_rank` hides the shape from both (TF Serving's Session, which
does not trust feeds, would run a plain Rank op).

>>> import tensorflow as tf
>>> ids = {"input_word_ids": tf.constant([[2, -7]]), "input_mask": tf.constant([[1, 1]]),
...        "input_type_ids": tf.constant([[0, 0]])}
>>> try:
...     checked_token_ids(ids, vocab_size=100, type_vocab_size=2, max_length=32)
... except tf.errors.InvalidArgumentError as e:
...     print("input_word_ids must be in [0, 100)" in str(e), "-7" in str(e))
True True
"""

import tensorflow as tf

from bert_keras.names import INPUT_NAMES

# Values printed after a failed check's message (the first offending ones).
SHOWN_VALUES = 3


def _assert(condition, message, *values):
    """An Assert op whose InvalidArgumentError reads "`message` `values`"."""
    return tf.debugging.Assert(condition, [message, *values], summarize=SHOWN_VALUES)


def _after(checks, tensors):
    """`tensors` (a dict) behind `checks`: whatever reads them runs after the checks pass."""
    with tf.control_dependencies(checks):
        return {name: tf.identity(t) for name, t in tensors.items()}


def _request_rank(tensor):
    """(rank, shape) of `tensor` as the request has it, whatever shape the signature declares.

    The tensor goes through an Optional whose declared output shape is unknown: a zero-copy
    round trip (the Optional holds a reference) that no shape inference sees through.
    """
    optional = tf.raw_ops.OptionalFromValue(components=[tensor])
    (opaque,) = tf.raw_ops.OptionalGetValue(optional=optional, output_types=[tensor.dtype],
                                            output_shapes=[tf.TensorShape(None)])
    return tf.raw_ops.Rank(input=opaque), tf.raw_ops.Shape(input=opaque)


def _rank_check(name, tensor, rank, meaning):
    """Refuses `tensor` unless its rank in the request is `rank`."""
    actual, shape = _request_rank(tensor)
    return _assert(tf.equal(actual, rank), f"{name} must be {meaning}; got shape", shape)


def _range_check(name, tensor, low, high, what):
    """Refuses `tensor` unless all its values are in [low, high); shows the first bad ones."""
    flat = tf.reshape(tensor, [-1])
    good = tf.logical_and(flat >= low, flat < high)
    return _assert(tf.reduce_all(good), f"{name} must be in [{low}, {high}){what}; got",
                   tf.boolean_mask(flat, tf.logical_not(good)))


def checked_texts(texts):
    """{input name: tf.string tensor} -> the same tensors, each refused unless rank 1 ([B]:
    one text per row). Everything that reads the returned tensors runs after the checks."""
    checks = [_rank_check(name, text, 1, "a rank-1 string tensor [batch], one text per row")
              for name, text in texts.items()]
    return _after(checks, texts)


def checked_strings(inputs, ranks):
    """{input name: tf.string tensor} -> the same tensors, each refused unless of the rank
    `ranks` gives it (2: [batch, items], e.g. a tagger's pre-split words)."""
    checks = [_rank_check(name, tensor, ranks[name], f"a rank-{ranks[name]} string tensor")
              for name, tensor in inputs.items()]
    return _after(checks, inputs)


def _type_id_range(type_vocab_size):
    """(exclusive upper bound of input_type_ids, why) for an encoder with `type_vocab_size`
    token types. Without a segment embedding (0: DistilBERT) the model reads no types, and
    takes what BERT's packer and transformers' tokenizer send for a pair: 0 or 1."""
    if type_vocab_size >= 2:
        return type_vocab_size, " (the token types of the model)"
    if type_vocab_size == 1:
        return 1, " (all 0: the model has one token type)"
    return 2, " (segment A or B; the model reads no token types)"


def checked_token_ids(inputs, vocab_size, type_vocab_size, max_length):
    """The encoder's three int32 inputs, checked: each rank 2 [batch, seq], all of one shape,
    at most `max_length` tokens per row, input_word_ids in [0, vocab_size), input_type_ids in
    [0, type_vocab_size) (0 or 1 without token types), input_mask 0 or 1. Returns the same
    dict; whatever reads it runs after the checks. Rank first, then shapes, then values, so
    each error names the first thing wrong and never comes from an op of a later check."""
    inputs = {name: inputs[name] for name in INPUT_NAMES}
    ranks = [_rank_check(name, t, 2, "a rank-2 int32 tensor [batch, seq]")
             for name, t in inputs.items()]
    inputs = _after(ranks, inputs)
    word_shape = tf.shape(inputs["input_word_ids"])
    shapes = [_assert(tf.reduce_all(tf.equal(tf.shape(t), word_shape)),
                      f"{name} must have the shape of input_word_ids; got", tf.shape(t),
                      "and input_word_ids has", word_shape)
              for name, t in inputs.items() if name != "input_word_ids"]
    shapes.append(_assert(word_shape[1] <= max_length,
                          f"input_word_ids must have at most {max_length} tokens per row "
                          "(the positions of the model); got", word_shape[1]))
    inputs = _after(shapes, inputs)
    values = [
        _range_check("input_word_ids", inputs["input_word_ids"], 0, vocab_size,
                     " (the vocabulary of the model)"),
        _range_check("input_type_ids", inputs["input_type_ids"], 0,
                     *_type_id_range(type_vocab_size)),
        _range_check("input_mask", inputs["input_mask"], 0, 2, " (1 = token, 0 = padding)"),
    ]
    return _after(values, inputs)
