"""Byte-level BPE ids equal the `tokenizers` library's (the Rust tokenizer transformers uses) on
real sentences and on the texts that stress the in-graph pipeline: pieces the regex rewrite
must not cut (NUL, private-use characters), words repeated within a batch (merged once each),
words that finish merging at different steps, batches with nothing to merge."""

import pathlib

import pytest
import tensorflow as tf
from tokenizers import ByteLevelBPETokenizer

from bert_keras.text.byte_bpe_tokenizer import ByteBpeTokenizer

ROBERTA = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families" / "roberta"

HOSTILE = ["", " ", "a", "a\x00b", "\x00", " \x00 x\x00\x00", "x\ue002y", "\ue003 q\ue0ff",
           "the the the then there the", "aaaaaaaaaaaaaaaaaaaaaaaaaaa", "x" * 300,
           "ééé\u00a0x\u2003 y", "a\tb\n\nc  ", "日本語のテキスト", "🙂🙂 ok", "I'M here's 'll",
           "runs   of  spaces\tand tabs", "   ", "\n"]


@pytest.fixture(scope="module")
def ours_and_reference():
    return (ByteBpeTokenizer.from_pretrained(str(ROBERTA)),
            ByteLevelBPETokenizer(str(ROBERTA / "vocab.json"), str(ROBERTA / "merges.txt")))


@pytest.mark.parametrize("batch", [1, 64])
def test_ids_equal_the_tokenizers_library(ours_and_reference, corpus_sentences, batch):
    ours, reference = ours_and_reference
    texts = HOSTILE + corpus_sentences
    tokenize = tf.function(ours.tokenize)
    for i in range(0, len(texts), batch):
        chunk = texts[i:i + batch]
        expected = [e.ids for e in reference.encode_batch(chunk)]
        assert tokenize(tf.constant(chunk)).to_list() == expected, chunk


def test_a_batch_with_nothing_to_merge(ours_and_reference):
    ours, reference = ours_and_reference
    texts = ["", "a b c", "\x00 . ,"]  # every piece one byte, or no piece
    assert ours.tokenize(texts).to_list() == [e.ids for e in reference.encode_batch(texts)]
    assert ours.tokenize(tf.constant([], tf.string)).to_list() == []
