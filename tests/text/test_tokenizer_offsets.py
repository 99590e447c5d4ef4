"""Every tokenizer gives offsets and words in the graph, as transformers' fast tokenizers do:
ids, character offsets (`offset_mapping`) and words (`word_ids()`) of WordPiece, byte-level
BPE and SentencePiece (ALBERT's and XLM-R's) against tests/fixtures/families/offsets.json (made
by tests/fixtures/make_family_references.py offsets, XLM-R's rows by
make_xlm_roberta_references.py) on text with accents, CJK, emoji, runs of spaces and
punctuation. The tokenizer's offsets are UTF-8 byte offsets into the text; the test converts
them to characters."""

import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf
from tokenizer_reference import char_of_byte

from bert_keras.text.tokenizers import load_tokenizer

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"
REFERENCE = json.loads((FAMILIES / "offsets.json").read_text(encoding="utf-8"))
TEXTS = REFERENCE["texts"]


@pytest.mark.parametrize("name", ["distilbert", "roberta", "albert", "xlm_roberta"])
def test_offsets_and_words_equal_transformers(name):
    tokenizer = load_tokenizer(str(FAMILIES / name))
    ids, starts, ends = tokenizer.tokenize_words_with_offsets(tf.constant(TEXTS))  # (B,(W),(P))
    flat_ids, _, _ = tokenizer.tokenize_with_offsets(tf.constant(TEXTS))
    for i, (text, ref) in enumerate(zip(TEXTS, REFERENCE[name])):
        got_ids = ids[i].to_list()
        words = [w for w, pieces in enumerate(got_ids) for _ in pieces]
        to_char = char_of_byte(text)
        offsets = np.stack([to_char[starts[i].flat_values.numpy()],
                            to_char[ends[i].flat_values.numpy()]], -1).reshape(-1, 2)
        assert sum(got_ids, []) == ref["ids"], repr(text)
        assert flat_ids[i].numpy().tolist() == ref["ids"], repr(text)
        assert offsets.tolist() == ref["offsets"], repr(text)
        assert words == ref["words"], repr(text)


@pytest.mark.parametrize("name", ["roberta", "albert", "xlm_roberta"])
def test_offsets_run_in_a_tf_function(name):
    tokenizer = load_tokenizer(str(FAMILIES / name))
    eager = tokenizer.tokenize_with_offsets(tf.constant(TEXTS[:4]))
    graph = tf.function(tokenizer.tokenize_with_offsets)(tf.constant(TEXTS[:4]))
    for a, b in zip(eager, graph):
        assert a.to_list() == b.to_list()
