"""In-graph helpers of the serving functions (core TF ops only, so TF Serving runs them).

Shape legend: B batch, K offsets per text.
"""

import tensorflow as tf


def byte_to_char(texts, byte_offsets, inside="next"):
    """Byte offsets [B, K] into texts [B] -> character offsets (invalid bytes count as one
    character each, as the tokenizer's U+FFFD replacement does). An offset inside a
    character's bytes (a byte-level BPE piece may end there) maps to the next character, or
    with `inside="containing"` to that character (as `spans.span_features` maps offsets for
    span QA); the text's end maps to its length either way.

    >>> text = tf.constant(["héllo"])
    >>> byte_to_char(text, tf.constant([[2, 3]])).numpy().tolist()
    [[2, 2]]
    >>> byte_to_char(text, tf.constant([[2, 6]]), inside="containing").numpy().tolist()
    [[1, 5]]
    """
    _, starts = tf.strings.unicode_decode_with_offsets(
        texts, "UTF-8", errors="replace", replacement_char=0xFFFD)
    starts = tf.cast(starts, tf.int32).to_tensor(tf.int32.max)  # (B, chars)
    if inside == "next":
        return tf.searchsorted(starts, byte_offsets, side="left")
    containing = tf.searchsorted(starts, byte_offsets, side="right") - 1
    at_end = byte_offsets >= tf.strings.length(texts)[:, None]
    return tf.where(at_end, tf.searchsorted(starts, byte_offsets, side="left"), containing)


def rows(values, row_ids, nrows):
    """Flat values with their row ids (sorted, each < `nrows`, as the graphs make them) -> a
    ragged tensor of `nrows` rows. Unvalidated: each validation is an Assert whose branch
    functions every export carries and every server sets up (~220 in a tagging export)."""
    return tf.RaggedTensor.from_value_rowids(values, tf.cast(row_ids, tf.int64),
                                             nrows=tf.cast(nrows, tf.int64), validate=False)


def word_rows(pieces, first_pieces, word_splits, room, max_rows):
    """Which words start a row when the words of each text are cut into rows of at most
    `room` pieces the way `tasks.tagging.featurizer.tagging_features` continues a long
    sentence: a row starts at a word (with its `first_pieces`, the pieces it has at the start
    of a text) and holds the following words (with their `pieces`) while their first piece
    fits; the next row starts at the first word whose first piece did not fit, so a word cut
    at the end of a row keeps only the pieces that fit, and a word longer than a row fills
    one alone. Vectorised: each word's next row start is one search over the running piece
    counts, and the rows of a text are followed from its first word by pointer doubling
    (log2(max_rows) gathers), no loop.

    Args:
      pieces, first_pieces: int32 [N], each word's pieces (N: the words of all texts, text
        by text), after another word and at the start of a row (both >= 1).
      word_splits: int [B + 1], the row splits of the words by text.
      room: the pieces a row holds (>= 1).
      max_rows: a Python int, the most rows a text may take.

    Returns (starts bool [N]: the word starts a row, count int32 [B]: each text's rows, up
    to max_rows + 1, which means more than max_rows).

    >>> pieces = tf.constant([2, 2, 9, 1, 1, 3])  # texts of 5, 0 and 1 words
    >>> starts, count = word_rows(pieces, pieces, tf.constant([0, 5, 5, 6]), room=4, max_rows=8)
    >>> starts.numpy().astype(int).tolist(), count.numpy().tolist()
    ([1, 0, 1, 1, 0, 1], [3, 0, 1])
    """
    pieces, first_pieces = tf.cast(pieces, tf.int32), tf.cast(first_pieces, tf.int32)
    word_splits = tf.cast(word_splits, tf.int32)
    n = tf.size(pieces)
    word = tf.range(n)
    text = tf.repeat(tf.range(tf.size(word_splits) - 1), word_splits[1:] - word_splits[:-1])
    text_end = tf.gather(word_splits[1:], text)  # (N,) one past the text's last word
    before = tf.concat([[0], tf.cumsum(pieces)], 0)  # (N + 1,) pieces before each word
    # A row starting at word i holds word k > i iff first_pieces[i] + before[k] - before[i+1]
    # < room: the words before the first k where before[k] >= before[i+1] + room - first_pieces[i].
    limit = tf.gather(before, word + 1) + room - first_pieces
    fits = tf.searchsorted(before[None], limit[None], side="left", out_type=tf.int32)[0]
    last = tf.minimum(tf.maximum(fits - 1, word), text_end - 1)  # at least the word itself
    sink = n  # "no more rows": a node that points at itself
    jump = tf.concat([tf.where(last + 1 < text_end, last + 1, sink), [sink]], 0)  # (N + 1,)
    first = tf.where(word_splits[:-1] < word_splits[1:], word_splits[:-1], sink)  # (B,)
    max_rows = int(max_rows)
    at = tf.tile(first[:, None], [1, max_rows + 1])  # (B, max_rows + 1): column k, k jumps
    for bit in range(max(1, max_rows.bit_length())):  # over the bits of k, not over data
        column_jumps = tf.constant([[k >> bit & 1 == 1 for k in range(max_rows + 1)]])
        at = tf.where(column_jumps, tf.gather(jump, at), at)
        jump = tf.gather(jump, jump)  # 2 ** (bit + 1) jumps
    count = tf.reduce_sum(tf.cast(at != sink, tf.int32), axis=1)  # (B,)
    hits = tf.scatter_nd(tf.reshape(at, [-1, 1]), tf.ones([tf.size(at)], tf.int32), [n + 1])
    return hits[:n] > 0, count
