"""The served tagger's graph: texts (or pre-split words) cut into rows as
`featurizer.tagging_features` cuts a long sentence, a tag per word, and the entities of the tags
(seqeval's chunks), in core TF ops.

Shape legend: B batch, T tokens, C tags, W words of a text, N words of the batch, R rows of
the batch, P pieces of a word, E entities of a text, M entities of the batch.
"""

import collections

import tensorflow as tf

from bert_keras.tasks.graph_ops import byte_to_char, rows, word_rows
from bert_keras.tasks.tagging import decoding
from bert_keras.tasks.tagging.chunks import chunk_tables
from bert_keras.tasks.task_serving import max_windows
from bert_keras.text.packing import segment_starts
from bert_keras.text.words import group_words

Tagged = collections.namedtuple("Tagged", "word_text word_start word_end tokens tag_ids scores")


def tag_words(fns, text, words=None):
    """Texts [B] (and their words, see `cut_rows`) -> `Tagged`: each word's text, byte
    offsets into it, bytes, tag id and tag probability ([N] each; with a CRF, the Viterbi
    path over all the text's words and each word's marginal probability of its tag,
    `decoding`), every word of a text however long, at most `max_windows` rows a text (an
    export option), more refused (InvalidArgument)."""
    limit = max_windows(fns)
    cut = cut_rows(fns, text, limit, words)
    refused = tf.debugging.Assert(
        tf.reduce_all(cut.count <= limit),
        [f"A text needs more than max_windows={limit} rows of {fns.seq_length} tokens to "
         "be tagged whole (the export's limit); texts at batch positions",
         tf.where(cut.count > limit)[:, 0]], summarize=8)
    with tf.control_dependencies([refused]):
        row_start = tf.identity(cut.row_start)
    word_row = tf.cumsum(tf.cast(row_start, tf.int32)) - 1  # (N,) the row holding the word
    num_rows = tf.reduce_sum(tf.cast(row_start, tf.int32))
    n = tf.size(word_row)
    from_alone = row_start & tf.logical_not(cut.own)
    row_pieces = tf.gather(tf.concat([cut.pieces, cut.alone], 0),
                           tf.where(from_alone, n + tf.range(n), tf.range(n)))  # (N, (P))
    inputs, (kept,) = fns.pack([rows(row_pieces, word_row, num_rows).merge_dims(1, 2)])
    logits = tf.cast(fns.run(inputs), tf.float32)  # (R, T, C)
    in_row = tf.cast(row_pieces.row_starts(), tf.int32)  # (N,) flat, rows of all words
    row_base = tf.gather(tf.boolean_mask(in_row, row_start), word_row)
    position = in_row - row_base + tf.gather(segment_starts([kept])[0], word_row)
    word_logits = tf.gather_nd(logits, tf.stack([word_row, position], -1))  # (N, C)
    tag_ids, scores = decoding.tag_ids_and_scores(  # a CRF's chain: all the words of a text
        fns.model.crf_layer, word_logits, cut.word_text, tf.shape(text)[0])
    return Tagged(cut.word_text, cut.word_start, cut.word_end, cut.word_bytes, tag_ids, scores)


def serve_words(fns, words):
    """Pre-split words [B, W] ("" is padding) -> serving_default's outputs, a tag for each
    given word (transformers' is_split_into_words), as `BertTokenClassifier.predict(words)`
    tags them: the words joined by single spaces are the text, tokenized whole, and a piece
    belongs to the word its first byte is in. A word with no pieces (control characters
    only) gets no tag ("", -1, 0). Offsets count characters of the joined text."""
    given = tf.ragged.boolean_mask(words, tf.not_equal(words, ""))  # (B, (W))
    text = tf.strings.reduce_join(given, axis=1, separator=" ")  # (B,)
    ids, starts, ends = fns.tokenizer.tokenize_with_offsets(text)  # (B, (P))
    word_text = tf.cast(given.value_rowids(), tf.int32)  # (N,)
    length = tf.strings.length(given.flat_values)  # bytes
    before = tf.cumsum(length + 1, exclusive=True)  # bytes of the batch before each word
    text_first = tf.gather(tf.cast(given.row_starts(), tf.int32), word_text)  # (N,)
    word_start = before - tf.gather(before, text_first)  # bytes into its text
    word_end = word_start + length
    # The word of each piece: one search over (text, byte) keys of the whole batch.
    width = tf.cast(tf.reduce_max(tf.concat([tf.strings.length(text), [0]], 0)) + 1, tf.int64)
    word_key = tf.cast(word_text, tf.int64) * width + tf.cast(word_start, tf.int64)
    piece_key = (ids.value_rowids() * width
                 + tf.cast(starts.flat_values, tf.int64))
    piece_word = tf.searchsorted(word_key[None], piece_key[None], side="right",
                                 out_type=tf.int32)[0] - 1  # (all pieces,)
    first_piece = tf.concat([[True], piece_word[1:] != piece_word[:-1]], 0)
    grouped = group_words(ids.with_flat_values(first_piece), ids, starts, ends)
    group_word = tf.gather(piece_word, tf.cast(grouped[0].values.row_starts(), tf.int32))
    tagged = tag_words(fns, text, grouped)  # (groups,): the words with pieces
    shape = tf.size(word_text)[None]

    def per_word(values, pad):  # the groups' values at their words; `pad` for the others
        return tf.tensor_scatter_nd_update(tf.fill(shape, pad), group_word[:, None], values)

    return outputs(fns, text, Tagged(word_text, word_start, word_end, given.flat_values,
                                     per_word(tagged.tag_ids, -1), per_word(tagged.scores, 0.0)))


def outputs(fns, text, tagged):
    """serving_default's outputs of `Tagged` words of texts [B]: the words ([B, W]) and the
    entities of their tags ([B, E])."""
    batch = tf.shape(text, out_type=tf.int32)[0]
    word_text = tagged.word_text
    char_start = byte_to_char(text, rows(tagged.word_start, word_text, batch).to_tensor(0))
    char_end = byte_to_char(text, rows(tagged.word_end, word_text, batch).to_tensor(0))
    tokens = tf.strings.unicode_transcode(tagged.tokens, "UTF-8", "UTF-8", errors="replace")

    def dense(values, pad):
        return rows(values, word_text, batch).to_tensor(pad)  # (B, W)

    valid = dense(tf.ones_like(word_text, tf.bool), False)
    tagged_words = tagged.tag_ids >= 0
    out = {
        "tokens": dense(tokens, ""),
        "tags": dense(tf.gather(tf.concat([fns.label_names, [""]], 0),
                                tf.where(tagged_words, tagged.tag_ids,
                                         tf.size(fns.label_names))), ""),
        "tag_ids": dense(tagged.tag_ids, -1),
        "tag_scores": dense(tagged.scores, 0.0),
        "token_starts": tf.where(valid, char_start, -1),
        "token_ends": tf.where(valid, char_end, -1),
    }
    out.update(_entities(fns, text, tagged, batch))
    return out


def _entities(fns, text, tagged, batch):
    """The entities of each text's tags, chunked as seqeval chunks them
    (`metrics.entities.get_entities`: IOB1, IOB2, IOE, IOBES): type, text, character
    offsets and score (the mean tag probability of its words), [B, E] each. A word with no
    tag (no pieces) counts as "O"."""
    # Tag ids, then "O" for a word with no tag (id C), then a text's start or end (C + 1).
    starts_table, ends_table, types = chunk_tables(list(fns.labels) + ["O"])
    untagged = len(fns.labels)
    boundary = untagged + 1
    tag = tf.where(tagged.tag_ids >= 0, tagged.tag_ids, untagged)
    word = tf.range(tf.size(tag))
    text_of = tagged.word_text
    first = tf.concat([[True], text_of[1:] != text_of[:-1]], 0)  # the first word of its text
    last = tf.concat([text_of[1:] != text_of[:-1], [True]], 0)
    before = tf.where(first, boundary, tf.roll(tag, 1, 0))  # (N,)
    after = tf.where(last, boundary, tf.roll(tag, -1, 0))
    starts = _lookup(starts_table, before, tag)
    ends = _lookup(ends_table, tag, after)
    # A chunk ending at word j began at the last word <= j that started one, or at its
    # text's first word (`get_entities` starts from there).
    begins = tf.boolean_mask(word, starts | first)
    begin = tf.gather(begins, tf.searchsorted(begins[None], word[None], side="right")[0] - 1)
    end_word = tf.boolean_mask(word, ends)  # (M,)
    begin_word = tf.gather(begin, end_word)
    mean = _range_mean(tagged.scores, begin_word, end_word)
    entity_text = tf.gather(text_of, end_word)
    byte_s = tf.gather(tagged.word_start, begin_word)
    byte_e = tf.gather(tagged.word_end, end_word)
    pieces = tf.strings.substr(tf.gather(text, entity_text), byte_s, byte_e - byte_s)
    pieces = tf.strings.unicode_transcode(pieces, "UTF-8", "UTF-8", errors="replace")
    entity_type = tf.gather(tf.constant(types), tf.gather(tag, end_word))
    chars_s = byte_to_char(text, rows(byte_s, entity_text, batch).to_tensor(0))
    chars_e = byte_to_char(text, rows(byte_e, entity_text, batch).to_tensor(0))

    def dense(values, pad):
        return rows(values, entity_text, batch).to_tensor(pad)  # (B, E)

    valid = dense(tf.ones_like(entity_text, tf.bool), False)
    return {
        "entity_types": dense(entity_type, ""),
        "entity_texts": dense(pieces, ""),
        "entity_starts": tf.where(valid, chars_s, -1),
        "entity_ends": tf.where(valid, chars_e, -1),
        "entity_scores": dense(mean, 0.0),
    }


def _lookup(table, row, column):
    """table[row, column] of a numpy bool table, for id tensors [N]."""
    return tf.gather_nd(tf.constant(table), tf.stack([row, column], 1))


def _range_mean(values, first, last):
    """The mean of values[first..last] (inclusive) for each of M disjoint ascending ranges,
    summed over the range alone (so a text's scores never depend on its batch)."""
    index = tf.range(tf.size(values))
    entity = tf.searchsorted(last[None], index[None], side="left")[0]  # the range ending next
    inside = entity < tf.size(last)
    inside &= tf.gather(tf.concat([first, [0]], 0), entity) <= index  # [0]: no range at all
    return tf.math.unsorted_segment_mean(tf.boolean_mask(values, inside),
                                         tf.boolean_mask(entity, inside), tf.size(last))


Cut = collections.namedtuple(
    "Cut", "pieces alone own word_text word_start word_end word_bytes row_start count")


def cut_rows(fns, text, limit, words=None):
    """Texts [B] -> their words (N of the batch) and the rows they go in, in graph ops.

    Rows are `tagging_features`' rows of the text's words: the first row is the text's own
    pieces, each further row the text from its first word on tokenized again (as
    tagging_features tokenizes the remaining words): that word with the pieces it has alone
    (`alone`; RoBERTa's "the" for "Ġthe"), the words after it with their pieces in the text,
    which are the same. `own`: a word that starts a row with its pieces in the text (the
    first word of a text, and a word with no pieces alone, such as RoBERTa's "  ").

    `words`: the (ids, starts, ends) [B, (W), (P)] of the words to tag (default: the
    tokenizer's words of `text`), every word with at least one piece.

    Returns `Cut`: pieces and alone int32 ragged [N, (P)], own bool [N], word_text int32
    [N] (each word's text), word_start and word_end [N] (byte offsets into it), word_bytes
    string [N], row_start bool [N] (the word starts a row) and count int32 [B] (each text's
    rows, up to limit + 1: `graph_ops.word_rows`).
    """
    if words is None:
        words = fns.tokenizer.tokenize_words_with_offsets(text)
    words, starts, ends = words  # (B, (W), (P))
    pieces = tf.cast(words.values, tf.int32)  # (N, (P))
    word_text = tf.cast(words.value_rowids(), tf.int32)  # (N,)
    word_splits = tf.cast(words.row_splits, tf.int32)  # (B + 1,)
    first_piece = tf.cast(pieces.row_starts(), tf.int32)  # (N,) flat index
    word_start = tf.gather(starts.flat_values, first_piece)  # (N,) bytes into its text
    word_end = tf.gather(ends.flat_values, tf.cast(pieces.row_limits(), tf.int32) - 1)
    word_bytes = tf.strings.substr(tf.gather(text, word_text), word_start,
                                   tf.maximum(word_end - word_start, 0))
    room = fns.seq_length - 2  # [CLS] pieces [SEP]: pack_with's budget for one text
    text_pieces = tf.gather(tf.cast(pieces.row_splits, tf.int32), word_splits)  # (B + 1,)
    alone = tf.cond(  # (N, (P')); only a text longer than a row has a row that needs them
        tf.reduce_any(text_pieces[1:] - text_pieces[:-1] > room),
        lambda: tf.cast(fns.tokenizer.tokenize(word_bytes), tf.int32), lambda: pieces)
    text_first = tf.equal(tf.range(tf.size(word_text)), tf.gather(word_splits, word_text))
    own = text_first | tf.equal(alone.row_lengths(), 0)
    first_pieces = tf.where(own, pieces.row_lengths(), alone.row_lengths())
    row_start, count = word_rows(pieces.row_lengths(), first_pieces, word_splits, room, limit)
    return Cut(pieces, alone, own, word_text, word_start, word_end, word_bytes, row_start,
               count)
