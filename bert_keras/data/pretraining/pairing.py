"""In-graph NSP / SOP / FULL-SENTENCES pairing: pure TF ops, no Python callbacks.

The dynamic pretraining pipeline runs this inside `tf.data` (no `from_generator`, no
`numpy_function`), so no tf.data thread ever calls back into Python: iterators alive at
interpreter exit cannot deadlock the shutdown. The rules are those of Google's
`create_instances_from_document` (its Python port, tests/support/pairing_oracle.py): a target
length per document (shorter with `short_seq_prob`), segments accumulated up to it, a random
split point, B the following segments or (NSP, p = 0.5 or when the chunk has one segment) a span
of a random other document with the unused segments put back; SOP swaps with p = 0.5 and cuts a
lone segment at a random token; truncation trims the longer side, each removed token from the
front or back with p = 0.5. Random numbers are stateless (`seed` [2]), so equal inputs and seed
give equal instances; the draws differ from the Python port's, so the two are equal in
distribution, not in values.

Documents of a chunk are processed in parallel: one `tf.while_loop` step makes the next
instance of every document (steps = most instances of one document). FULL-SENTENCES packing is
sequential by nature: one step per output row.

Legend: P = pieces in the chunk, S = sentences, D = documents, N = instances, T = max_seq_length.
"""

import tensorflow as tf

from bert_keras.data.pretraining.documents import PAIR_MODES

_F = 12  # per-instance fields: valid, a_lo, la, b_lo, lb, label, source (6)


def _uniform_int(u, lo, hi):
    """Ints in [lo, hi) elementwise from uniforms u in [0, 1); needs hi > lo."""
    span = hi - lo
    k = tf.cast(tf.floor(u * tf.cast(span, tf.float32)), tf.int32)
    return lo + tf.clip_by_value(k, 0, tf.maximum(span - 1, 0))


def _targets(num, seed, max_tokens, short_seq_prob):
    u = tf.random.stateless_uniform([num, 2], seed)
    short = _uniform_int(u[:, 1], 2, max_tokens + 1)
    return tf.where(u[:, 0] < short_seq_prob, short, max_tokens)


def _truncated_lengths(la, lb, max_tokens):
    """Vectorized Google truncate_seq_pair lengths (trim the longer one; ties trim B)."""
    extra = tf.maximum(la + lb - max_tokens, 0)
    cut = tf.minimum(tf.abs(la - lb), extra)
    la, lb = tf.where(la > lb, la - cut, la), tf.where(la > lb, lb, lb - cut)
    extra -= cut
    return la - extra // 2, lb - (extra + 1) // 2


def _pairs(splits, doc_splits, seed, max_tokens, short_seq_prob, pair_mode):
    """NSP/SOP spans: int32 [N, _F] rows (a_lo, la, b_lo, lb in pieces, label, source)."""
    num_docs = tf.shape(doc_splits)[0] - 1
    doc_start, doc_end = doc_splits[:-1], doc_splits[1:]  # (D,) sentence indices
    seeds = tf.random.experimental.stateless_split(seed, 3)
    target = _targets(num_docs, seeds[0], max_tokens, short_seq_prob)  # (D,)
    docs = tf.range(num_docs)
    last = tf.maximum(tf.shape(splits)[0] - 2, 0)

    def body(k, pos, rows):
        step_seed = tf.random.experimental.stateless_fold_in(seeds[1], k)
        u = tf.random.stateless_uniform([num_docs, 6], step_seed)  # (D, 6)
        active = pos < doc_end
        i = tf.minimum(pos, last)
        ci = tf.gather(splits, i)
        j1 = tf.clip_by_value(tf.searchsorted(splits, ci + target, side="left"), i + 1, doc_end)
        n = j1 - i  # segments in this chunk
        a_end = tf.where(n < 2, 1, _uniform_int(u[:, 0], 1, tf.maximum(n, 2)))
        a_lo, a_hi = ci, tf.gather(splits, tf.minimum(i + a_end, last + 1))
        first = i - doc_start
        src_a = [docs, first, first + a_end]
        valid, next_pos = active, j1
        if pair_mode == "nsp":
            rand = (n == 1) | (u[:, 1] < 0.5)
            other = _uniform_int(u[:, 2], 0, tf.maximum(num_docs - 1, 1))
            other = tf.where((num_docs > 1) & (other >= docs), other + 1, other)
            other = tf.where(num_docs > 1, other, docs)
            o_start, o_end = tf.gather(doc_start, other), tf.gather(doc_end, other)
            start = _uniform_int(u[:, 3], o_start, o_end)
            c_start = tf.gather(splits, tf.minimum(start, last))
            end = tf.clip_by_value(tf.searchsorted(splits, c_start + target - (a_hi - a_lo),
                                                   side="left"), start + 1, o_end)
            b_lo = tf.where(rand, c_start, a_hi)
            b_hi = tf.where(rand, tf.gather(splits, tf.minimum(end, last + 1)),
                            tf.gather(splits, j1))
            label = tf.cast(rand, tf.int32)
            next_pos = tf.where(rand, i + a_end, j1)
            src_b = [tf.where(rand, other, docs), tf.where(rand, start - o_start, first + a_end),
                     tf.where(rand, end - o_start, j1 - doc_start)]
        else:  # sop
            single = n == 1
            la_full = a_hi - a_lo
            cut = a_lo + _uniform_int(u[:, 4], 1, tf.maximum(la_full, 2))
            valid = active & (~single | (la_full >= 2))  # a one-token lone segment is skipped
            b_lo, b_hi = tf.where(single, cut, a_hi), tf.gather(splits, j1)
            a_hi = tf.where(single, cut, a_hi)
            src_b = [docs, tf.where(single, first, first + a_end),
                     tf.where(single, first + 1, j1 - doc_start)]
            swap = u[:, 5] < 0.5
            a_lo, a_hi, b_lo, b_hi = (tf.where(swap, b_lo, a_lo), tf.where(swap, b_hi, a_hi),
                                      tf.where(swap, a_lo, b_lo), tf.where(swap, a_hi, b_hi))
            src_a, src_b = ([tf.where(swap, b, a) for a, b in zip(src_a, src_b)],
                            [tf.where(swap, a, b) for a, b in zip(src_a, src_b)])
            label = tf.cast(swap, tf.int32)
        la, lb = _truncated_lengths(a_hi - a_lo, b_hi - b_lo, max_tokens)
        row = tf.stack([tf.cast(valid, tf.int32), a_lo, la, b_lo, lb, label] + src_a + src_b
                       + [a_hi - a_lo - la, b_hi - b_lo - lb], axis=1)  # (D, _F + 2 drops)
        return k + 1, tf.where(active, next_pos, pos), rows.write(k, row)

    rows = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[None, _F + 2])
    _, _, rows = tf.while_loop(lambda k, pos, rows: (k == 0) | tf.reduce_any(pos < doc_end),
                               body, [0, doc_start, rows])
    rows = rows.concat()  # (steps * D, _F + 2)
    rows = tf.boolean_mask(rows, rows[:, 0] > 0)  # (N, _F + 2)
    # Truncation removes each extra token from the front with p = 0.5: the front count is
    # Binomial(drop, 0.5), drawn only where tokens are dropped (the op is slow per element).
    drops = rows[:, _F:]  # (N, 2) tokens dropped from A and B
    where = tf.cast(tf.where(drops > 0), tf.int32)  # (K, 2)
    fronts = tf.scatter_nd(where, tf.random.stateless_binomial(
        tf.shape(where)[:1], seeds[2], tf.cast(tf.gather_nd(drops, where), tf.float32), 0.5,
        output_dtype=tf.int32), tf.shape(drops))  # (N, 2)
    return tf.concat([rows[:, :1], rows[:, 1:2] + fronts[:, :1], rows[:, 2:3],
                      rows[:, 3:4] + fronts[:, 1:], rows[:, 4:_F]], axis=1)  # (N, _F)


def _full_sentences(splits, doc_splits, seed, max_tokens, short_seq_prob, sep_id, pieces,
                    word_starts):
    """FULL-SENTENCES rows over a stream with [SEP] before every document -> (rows, stream)."""
    lengths = splits[1:] - splits[:-1]  # (S,)
    sent_doc = tf.ragged.row_splits_to_segment_ids(doc_splits, out_type=tf.int32)  # (S,)
    # Over-long sentences are split into units of at most max_tokens pieces.
    units = tf.ragged.range((lengths + max_tokens - 1) // max_tokens)  # (S, (units))
    unit_sent = tf.cast(units.value_rowids(), tf.int32)
    unit_lo = tf.gather(splits, unit_sent) + units.flat_values * max_tokens
    unit_hi = tf.minimum(unit_lo + max_tokens, tf.gather(splits, unit_sent + 1))
    unit_doc = tf.gather(sent_doc, unit_sent)
    # Stream position of piece p is p + (its document) + 1: one [SEP] before each document.
    piece_doc = tf.gather(sent_doc, tf.ragged.row_splits_to_segment_ids(splits, out_type=tf.int32))
    size = tf.shape(pieces)[0] + tf.shape(doc_splits)[0] - 1
    where = (tf.range(tf.shape(pieces)[0]) + piece_doc + 1)[:, None]
    stream = tf.tensor_scatter_nd_update(tf.fill([size], sep_id), where, pieces)
    starts = tf.tensor_scatter_nd_update(tf.ones([size], tf.int32), where,
                                         tf.cast(word_starts, tf.int32))
    unit_start = unit_lo + unit_doc + 1  # stream position of the unit's first piece
    unit_end = unit_hi + unit_doc + 1  # (U,)
    num_units = tf.shape(unit_end)[0]

    def body(r, u, rows):
        target = _targets(1, tf.random.experimental.stateless_fold_in(seed, r), max_tokens,
                          short_seq_prob)[0]
        lo = unit_start[u]
        v = tf.maximum(tf.searchsorted(unit_end, [lo + target], side="right")[0] - 1, u)
        row = tf.stack([1, lo, unit_end[v] - lo, 0, 0, 0, unit_doc[u], -1, -1, -1, -1, -1])
        return r + 1, v + 1, rows.write(r, row[None])

    rows = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[1, _F])
    rows = rows.write(0, tf.zeros([1, _F], tf.int32))  # never empty; dropped below
    _, _, rows = tf.while_loop(lambda r, u, rows: u < num_units, body, [1, 0, rows])
    return rows.concat()[1:], stream, starts


def build_instances(pieces, word_starts, splits, doc_splits, seed, *, cls_id, sep_id, pad_id,
                    max_seq_length=128, short_seq_prob=0.1, pair_mode="nsp"):
    """Tokenized documents -> packed, unmasked instances, in-graph.

    Args:
      pieces: int32 [P] WordPiece ids of all sentences, in order.
      word_starts: int/bool [P], 1 at the first piece of each word.
      splits: int [S + 1] piece offsets of the sentences (each sentence non-empty).
      doc_splits: int [D + 1] sentence offsets of the documents (each document non-empty).
      seed: int [2] stateless seed.

    Returns:
      dict of input_ids, input_mask, segment_ids, word_starts int32 [N, T],
      next_sentence_labels int32 [N] and source int32 [N, 6] = (doc_a, first_seg_a, end_seg_a,
      doc_b, first_seg_b, end_seg_b) as in tests/support/pairing_oracle.py (-1 where it does not
      apply). Rows come document-parallel (first instance of every document, then the second,
      ...); shuffle them.

    Example:
    >>> out = build_instances([7, 8, 9, 10, 11], [1, 1, 1, 1, 0], [0, 2, 5], [0, 1, 2], [1, 2],
    ...                       cls_id=2, sep_id=3, pad_id=0, max_seq_length=10,
    ...                       short_seq_prob=0.0, pair_mode="none")
    >>> out["input_ids"].numpy().tolist()  # two one-sentence documents packed in one row
    [[2, 7, 8, 3, 9, 10, 11, 3, 0, 0]]
    """
    if pair_mode not in PAIR_MODES:
        raise ValueError(f"pair_mode must be one of {PAIR_MODES}, got {pair_mode!r}")
    if max_seq_length < 5:
        raise ValueError(f"max_seq_length must be >= 5, got {max_seq_length}")
    T = int(max_seq_length)
    pieces = tf.cast(pieces, tf.int32)  # (P,)
    word_starts = tf.cast(word_starts, tf.int32)  # (P,)
    splits = tf.cast(splits, tf.int32)  # (S + 1,)
    doc_splits = tf.cast(doc_splits, tf.int32)  # (D + 1,)
    seed = tf.cast(seed, tf.int64)
    if pair_mode == "none":
        rows, stream, starts = _full_sentences(splits, doc_splits, seed, T - 2, short_seq_prob,
                                               sep_id, pieces, word_starts)
        has_b = False
    else:
        rows = _pairs(splits, doc_splits, seed, T - 3, short_seq_prob, pair_mode)
        stream, starts, has_b = pieces, word_starts, True
    a_lo, la, b_lo, lb = (rows[:, k:k + 1] for k in range(1, 5))  # (N, 1) each
    t = tf.range(T)[None, :]  # (1, T)
    in_a = (t >= 1) & (t <= la)  # (N, T)
    in_b = has_b & (t >= la + 2) & (t < la + 2 + lb)
    length = la + 2 + (lb + 1 if has_b else 0)  # (N, 1)
    index = tf.where(in_a, a_lo + t - 1, tf.where(in_b, b_lo + t - la - 2, 0))  # (N, T)
    token = tf.gather(stream, index)
    is_sep = (t == la + 1) | (has_b & (t == length - 1))
    ids = tf.where(t == 0, cls_id, tf.where(in_a | in_b, token, tf.where(is_sep, sep_id, pad_id)))
    ws = tf.where(in_a | in_b, tf.gather(starts, index), 0)
    if has_b:  # a trimmed or cut segment still starts a word
        ws = tf.where((t == 1) | (t == la + 2), 1, ws)
    return {
        "input_ids": ids,
        "input_mask": tf.cast(t < length, tf.int32),
        "segment_ids": tf.cast(has_b & (t >= la + 2) & (t < length), tf.int32),
        "word_starts": ws,
        "next_sentence_labels": rows[:, 5],
        "source": rows[:, 6:],
    }
