"""The BERT packer, in core TF ops: 1 or 2 tokenized segments -> [CLS] A [SEP] (B [SEP]).

Round-robin truncation like Google BERT's `_truncate_seq_pair` (and tf-text's
`RoundRobinTrimmer`, whose op 'TFText>RoundRobinTrim' TF Serving's tf-text lacks, which is
why this is written with core ops). `BertPreprocessor` and every exported serving function
pack with `pack_segments`, so training and serving see the same ids.

Shape legend: B batch, T packed length.

>>> import tensorflow as tf
>>> inputs, kept = pack_segments([tf.ragged.constant([[7, 8, 9]]), tf.ragged.constant([[5]])],
...                              seq_length=5, cls_id=2, sep_id=3, pad_id=0)
>>> inputs["input_word_ids"].numpy().tolist(), inputs["input_type_ids"].numpy().tolist()
([[2, 7, 3, 5, 3]], [[0, 0, 0, 1, 1]])
"""

import tensorflow as tf


def keep_first(ragged, counts):
    """The first counts[b] items of each row b of `ragged` [B, (n)]."""
    index = tf.ragged.range(tf.cast(ragged.row_lengths(), counts.dtype))
    return tf.ragged.boolean_mask(ragged, index < counts[:, None])


def without_ids(ids, dropped):
    """Ids [B, (n)] (ragged, dense or nested lists) as int32 ragged, without the ids in
    `dropped` (the special tokens a detokenizer leaves out)."""
    if isinstance(ids, (list, tuple)):
        ids = tf.ragged.constant(ids)
    if not isinstance(ids, tf.RaggedTensor):
        ids = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(ids))
    ids = tf.cast(ids, tf.int32)
    keep = tf.reduce_all(tf.not_equal(ids.flat_values[:, None],
                                      tf.constant(list(dropped), tf.int32)[None]), axis=-1)
    return tf.ragged.boolean_mask(ids, ids.with_flat_values(keep))


def truncation_lengths(lengths, budget):
    """Round-robin truncation (A, B, A, B, ...): kept lengths of 1 or 2 segments.

    For two segments of lengths a, b and a budget n: a' = min(a, max(n - b, ceil(n / 2))),
    b' = min(b, n - a'), i.e. a short segment is kept whole and two long ones share n with A
    getting the odd token (= Google BERT's _truncate_seq_pair, = tf-text RoundRobinTrimmer).
    """
    if len(lengths) == 1:
        return [tf.minimum(lengths[0], budget)]
    a, b = lengths
    keep_a = tf.minimum(a, tf.maximum(budget - b, (budget + 1) // 2))
    return [keep_a, tf.minimum(b, budget - keep_a)]


def shortest_packing(num_segments, separators_between=1):
    """The shortest packed row that holds a token of each segment: `[CLS] a [SEP]`, or
    `[CLS] a [SEP] b [SEP]` with RoBERTa's extra separator.

    >>> shortest_packing(1), shortest_packing(2), shortest_packing(2, separators_between=2)
    (3, 5, 6)
    """
    return 1 + 2 * num_segments + (separators_between - 1 if num_segments == 2 else 0)


def segment_starts(kept, separators_between=1):
    """The position of each segment's first token in a packed row, from the kept lengths
    that `pack_segments` returns: 1 (after [CLS]) and, for a pair, after A, its [SEP] and the
    extra separators (RoBERTa's `<s> A </s></s> B </s>`). Works on tensors and numbers.

    >>> segment_starts([3, 4], separators_between=2)
    [1, 6]
    """
    starts = [kept[0] * 0 + 1]
    if len(kept) == 2:
        starts.append(1 + kept[0] + separators_between)
    return starts


def pack_with(tokenizer, segments, seq_length, pad_to_seq_length=False):
    """`pack_segments` with the special tokens of `tokenizer` (and RoBERTa's double separator
    between the two texts of a pair when the tokenizer says `separators_between = 2`); type
    ids all 0 when the tokenizer says `pair_type_ids = False` (transformers 5's ALBERT and
    RoBERTa tokenizers send no token_type_ids)."""
    inputs, kept = pack_segments(segments, seq_length, tokenizer.cls_id, tokenizer.sep_id,
                                 tokenizer.pad_id, pad_to_seq_length=pad_to_seq_length,
                                 separators_between=tokenizer.separators_between)
    if not tokenizer.pair_type_ids:
        inputs["input_type_ids"] = tf.zeros_like(inputs["input_type_ids"])
    return inputs, kept


def pack_segments(segments, seq_length, cls_id, sep_id, pad_id, pad_to_seq_length=False,
                  separators_between=1):
    """Token ids of 1 or 2 segments (int32 ragged [B, (n)]) -> (inputs dict of int32 [B, T],
    kept lengths). T is the longest packed row (at least 2), at most seq_length; with
    `pad_to_seq_length`, T = seq_length. `separators_between=2` packs RoBERTa's
    `<s> A </s></s> B </s>`."""
    extra = separators_between - 1 if len(segments) == 2 else 0
    budget = seq_length - 1 - len(segments) - extra
    if len(segments) == 2:
        check = tf.debugging.assert_equal(
            segments[0].nrows(), segments[1].nrows(),
            message="The two text inputs must have the same batch size")
        with tf.control_dependencies([check]):
            segments = [tf.identity(s) for s in segments]
    lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
    kept = truncation_lengths(lengths, budget)
    batch = segments[0].nrows(out_type=tf.int32)
    cls = tf.RaggedTensor.from_tensor(tf.fill([batch, 1], cls_id))
    sep = tf.RaggedTensor.from_tensor(tf.fill([batch, 1], sep_id))
    ids, types = [cls], [tf.zeros_like(cls)]
    for i, (segment, keep) in enumerate(zip(segments, kept)):
        part = keep_first(tf.cast(segment, tf.int32), keep)
        if i == 1 and extra:
            ids += [sep] * extra
            types += [tf.zeros_like(sep)] * extra
        ids += [part, sep]
        types += [tf.zeros_like(part) + i, tf.zeros_like(sep) + i]
    ids = tf.concat(ids, axis=1)  # (B, (T))
    types = tf.concat(types, axis=1)
    if pad_to_seq_length:
        width = tf.constant(seq_length, tf.int32)
    else:
        width = tf.maximum(tf.reduce_max(tf.concat([tf.cast(ids.row_lengths(), tf.int32), [2]], 0)), 2)
    shape = tf.stack([batch, width])
    inputs = {
        "input_word_ids": ids.to_tensor(pad_id, shape=shape),  # (B, T)
        "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),  # (B, T)
        "input_type_ids": types.to_tensor(0, shape=shape),  # (B, T)
    }
    return inputs, kept
