"""XLM-RoBERTa's tokenizer (SentencePiece with fairseq's ids) against transformers on held-out
multilingual text: tests/fixtures/families/xlm_roberta/multilingual.json (made by
tests/fixtures/make_xlm_roberta_references.py) holds, for texts in a dozen scripts with
characters the model never saw, NFKC's compatibility forms, decomposed accents, Unicode spaces
and zero-width characters, the ids, char offsets and `word_ids()` of transformers 5's
`XLMRobertaTokenizer` and the ids of transformers 4's sentencepiece-backed "slow" tokenizer."""

import json
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow as tf
from tokenizer_reference import char_of_byte

import bert_keras as bk
from bert_keras.errors import InputError
from bert_keras.text.tokenizers import load_tokenizer
from bert_keras.text.xlm_roberta_tokenizer import MODEL_FILE, XlmRobertaTokenizer

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"
FIXTURE = FAMILIES / "xlm_roberta"
REFERENCE = json.loads((FIXTURE / "multilingual.json").read_text(encoding="utf-8"))
TEXTS, ROWS = REFERENCE["texts"], REFERENCE["rows"]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(str(FIXTURE))


def test_ids_offsets_and_words_equal_transformers(tokenizer):
    assert type(tokenizer) is XlmRobertaTokenizer
    ids = tokenizer.tokenize(tf.constant(TEXTS)).to_list()
    words, starts, ends = tokenizer.tokenize_words_with_offsets(tf.constant(TEXTS))
    unknown = 0
    for i, (text, row) in enumerate(zip(TEXTS, ROWS)):
        assert row["slow_ids"] == row["ids"], repr(text)  # transformers 4's slow tokenizer too
        assert ids[i] == row["ids"], repr(text)
        pieces = words[i].to_list()
        assert sum(pieces, []) == row["ids"], repr(text)
        assert [w for w, p in enumerate(pieces) for _ in p] == row["words"], repr(text)
        to_char = char_of_byte(text)
        offsets = np.stack([to_char[starts[i].flat_values.numpy()],
                            to_char[ends[i].flat_values.numpy()]], -1).reshape(-1, 2)
        assert offsets.tolist() == row["offsets"], repr(text)
        unknown += row["ids"].count(tokenizer.unk_id)
    assert unknown > 20  # the held-out text has characters the model never saw


def test_a_tf_function_gives_the_eager_ids_and_offsets(tokenizer):
    texts = tf.constant(TEXTS[-14:])
    for method in (tokenizer.tokenize_with_offsets, tokenizer.tokenize_words_with_offsets):
        for eager, graph in zip(method(texts), tf.function(method)(texts)):
            assert eager.to_list() == graph.to_list()


def test_fairseq_ids_and_packing(tokenizer):
    assert tokenizer.vocab[:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert (tokenizer.cls_id, tokenizer.pad_id, tokenizer.sep_id, tokenizer.unk_id) == (0, 1, 2, 3)
    assert tokenizer.mask_id == tokenizer.vocab_size - 1 == 1001
    assert tokenizer.vocab[tokenizer.mask_id] == "<mask>"
    assert (tokenizer.separators_between, tokenizer.pair_type_ids) == (2, False)
    packed = bk.BertPreprocessor(tokenizer, seq_length=16)(["Jesus wept."], ["🙂"])
    ids = packed["input_word_ids"].numpy()[0].tolist()
    a, b = (tokenizer.tokenize([t]).to_list()[0] for t in ("Jesus wept.", "🙂"))
    assert ids == [0, *a, 2, 2, *b, 2] + [1] * (16 - len(a) - len(b) - 4)
    assert set(packed["input_type_ids"].numpy().ravel()) == {0}


def test_detokenize_inverts_tokenize_of_normalized_text(tokenizer):
    texts = ["Die Größe der Brücke", "  runs   of  spaces ", "東京 天地", "ＡＢＣ ﬁne"]
    ids = tokenizer.tokenize(texts)
    packed = tf.concat([tf.fill([4, 1], tokenizer.cls_id), ids.to_tensor(tokenizer.pad_id)], 1)
    assert [t.decode() for t in tokenizer.detokenize(packed).numpy()] == [
        "Die Größe der Brücke", "runs of spaces", "東京 天地", "ABC fine"]
    assert tokenizer.detokenize([[tokenizer.unk_id]]).numpy()[0].decode().strip() == "⁇"


def test_save_and_load_without_config_json(tokenizer, tmp_path):
    tokenizer.save(str(tmp_path))
    again = load_tokenizer(str(tmp_path))
    assert type(again) is XlmRobertaTokenizer and again.vocab == tokenizer.vocab
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "XLMRobertaTokenizer"
    assert again.tokenize(TEXTS[:12]).to_list() == [r["ids"] for r in ROWS[:12]]


def test_another_sentencepiece_model_is_refused(tmp_path):
    shutil.copy(FAMILIES / "albert" / "spiece.model", tmp_path / MODEL_FILE)
    with pytest.raises(InputError, match=r"first pieces of XLM-RoBERTa's .* not \['<pad>'"):
        XlmRobertaTokenizer.from_pretrained(str(tmp_path))


def _normalizer_charsmap(model):
    """The precompiled charsmap of a serialized SentencePiece ModelProto (normalizer_spec = 3,
    its precompiled_charsmap = 2)."""
    def fields(data):
        position = 0
        while position < len(data):
            tag, position = _varint(data, position)
            if tag & 7 == 2:
                size, position = _varint(data, position)
                yield tag >> 3, data[position:position + size]
                position += size
            elif tag & 7 == 0:
                _, position = _varint(data, position)
            else:
                position += 4 if tag & 7 == 5 else 8

    spec = next(value for number, value in fields(model) if number == 3)
    return next(value for number, value in fields(spec) if number == 2)


def _varint(data, position):
    value, shift = 0, 0
    while True:
        byte = data[position]
        value, shift, position = value | (byte & 0x7F) << shift, shift + 7, position + 1
        if byte < 0x80:
            return value, position


def test_a_directory_with_only_tokenizer_json_is_converted(tmp_path):
    """transformers 5 saves an XLM-R tokenizer as tokenizer.json alone (no
    sentencepiece.bpe.model): its pieces, scores and charsmap give the same tokenizer."""
    import base64

    spec = json.loads((FAMILIES.parent / "xlm_roberta_tokenizer_without_charsmap.json")
                      .read_text(encoding="utf-8"))
    charsmap = _normalizer_charsmap((FIXTURE / MODEL_FILE).read_bytes())
    spec["normalizer"]["precompiled_charsmap"] = base64.b64encode(charsmap).decode()
    for name in ("config.json", "tokenizer_config.json"):
        shutil.copy(FIXTURE / name, tmp_path)
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    tokenizer = load_tokenizer(str(tmp_path))
    assert type(tokenizer) is XlmRobertaTokenizer
    assert tokenizer.vocab == load_tokenizer(str(FIXTURE)).vocab
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(TEXTS))
    for i, (text, row) in enumerate(zip(TEXTS, ROWS)):
        assert ids[i].numpy().tolist() == row["ids"], repr(text)
        to_char = char_of_byte(text)
        offsets = np.stack([to_char[starts[i].numpy()], to_char[ends[i].numpy()]], -1)
        assert offsets.reshape(-1, 2).tolist() == row["offsets"], repr(text)


def test_invalid_utf8_tokenizes_as_transformers_after_decoding_with_replace(tokenizer):
    """Bad bytes become U+FFFD (one per maximal bad sequence), which the model's charsmap reads
    as a space, as transformers does with the text decoded with errors="replace"."""
    invalid = REFERENCE["invalid_utf8"]
    texts = tf.constant([bytes.fromhex(h) for h in invalid["hex"]])
    assert tokenizer.tokenize(texts).to_list() == invalid["ids"]
    ids, starts, ends = (x.to_list() for x in tokenizer.tokenize_with_offsets(texts))
    assert ids == invalid["ids"]
    text = bytes.fromhex(invalid["hex"][2])  # b"mid\xffword ok"
    spans = [text[s:e] for s, e in zip(starts[2], ends[2])]
    assert b"\xff" not in b"".join(spans) and b"word" in spans  # ("▁": the span of "m")
