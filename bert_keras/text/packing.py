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


def keep_values(ragged, keep):
    """The values of a [B, (n)] ragged tensor where the flat bool `keep` is true.

    Same result as `tf.ragged.boolean_mask`, on flat tensors: that op costs ~0.5 GB of
    transient memory and ~0.4 s per 13k lines, and its ragged broadcasting adds ~0.5 s to
    every trace of a serving function.
    """
    kept_before = tf.concat([[0], tf.cumsum(tf.cast(keep, ragged.row_splits.dtype))], 0)
    return tf.RaggedTensor.from_row_splits(tf.boolean_mask(ragged.flat_values, keep),
                                           tf.gather(kept_before, ragged.row_splits),
                                           validate=False)


def keep_first(ragged, counts):
    """The first counts[b] items of each row b of `ragged` [B, (n)]."""
    rows = ragged.value_rowids()
    position = tf.range(tf.size(rows, out_type=rows.dtype)) - tf.gather(ragged.row_starts(), rows)
    return keep_values(ragged, position < tf.gather(tf.cast(counts, rows.dtype), rows))


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
    return keep_values(ids, keep)


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
    starts = segment_starts(kept, separators_between)  # (B,) each
    total = starts[-1] + kept[-1] + 1  # (B,) packed length, the last [SEP] included
    if pad_to_seq_length:
        width = tf.constant(seq_length, tf.int32)
    else:
        width = tf.maximum(tf.reduce_max(tf.concat([total, [2]], 0)), 2)
    # Each position of the dense [B, T] rows selected from the segments' flat values, not a
    # ragged concatenation: the same ids, and a serving function traces in a quarter of the time.
    position = tf.range(width)[None, :]  # (1, T)
    in_row = position < total[:, None]  # (B, T)
    ids = tf.where(position == 0, cls_id, tf.where(in_row, sep_id, pad_id))
    for segment, start, keep in zip(segments, starts, kept):
        offset = position - start[:, None]  # (B, T) index into the segment's row
        inside = (offset >= 0) & (offset < keep[:, None])
        values = tf.concat([tf.cast(segment.values, tf.int32), [pad_id]], 0)
        index = tf.cast(segment.row_starts(), tf.int32)[:, None] + offset
        ids = tf.where(inside, tf.gather(values, tf.where(inside, index, tf.size(values) - 1)), ids)
    second = position >= starts[-1][:, None] if len(segments) == 2 else False
    inputs = {
        "input_word_ids": ids,  # (B, T)
        "input_mask": tf.cast(in_row, tf.int32),  # (B, T)
        "input_type_ids": tf.cast(in_row & second, tf.int32),  # (B, T)
    }
    return inputs, kept
