"""Checks of an in-graph tokenizer against reference rows that transformers made (ids, character
offsets, word_ids()), shared by the tokenizer tests."""

import numpy as np
import tensorflow as tf


def char_of_byte(text):
    """int [len(utf8) + 1]: the character index at each byte offset of `text`."""
    table = [i for i, ch in enumerate(text) for _ in ch.encode("utf-8")]
    return np.array(table + [len(text)])


def assert_tokenizes_as_reference(tokenizer, texts, rows):
    """`tokenizer` gives each row's `ids` (eagerly and inside tf.data), its `offsets`
    (character [start, end] per piece) and its pieces per word (`words`: transformers'
    word_ids())."""
    want = [row["ids"] for row in rows]
    assert tokenizer.tokenize(texts).to_list() == want
    batch = tf.data.Dataset.from_tensor_slices(texts).batch(len(texts)).map(tokenizer.tokenize)
    assert next(iter(batch)).to_list() == want  # in the graph of tf.data
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    assert ids.to_list() == want
    for i, (text, row) in enumerate(zip(texts, rows)):
        to_char = char_of_byte(text)
        offsets = np.stack([to_char[starts[i].numpy()], to_char[ends[i].numpy()]], -1)
        assert offsets.reshape(-1, 2).tolist() == row["offsets"], repr(text)
    words = tokenizer.tokenize_words_with_offsets(tf.constant(texts))[0]
    for i, (text, row) in enumerate(zip(texts, rows)):  # pieces per word of word_ids()
        want_words = [row["words"].count(w) for w in sorted(set(row["words"]))]
        assert words[i].row_lengths().numpy().tolist() == want_words, repr(text)
