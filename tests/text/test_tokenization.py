"""BertTokenizer against the reference `tokenizers` BERT tokenizer, in eager/graph/tf.data."""

import json
import shutil
import sys
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
import tokenizers
from tokenizers import decoders

import bert_keras as bk
from bert_keras import assets
from bert_keras.text.tokenizer import BertTokenizer

HARD_CASES = [
    "café naïve Ångström résumé",
    "中文字符 and 日本語のテキスト 한국어",
    "emoji 😀 👍🏽 ok🎉yes",
    "wait!!!...??? (yes) [no] {x} --- a/b\\c @#$%^&*",
    "3.14159 1,000,000 42nd 10:30pm",
    "a" * 120 + " short " + "é" * 101 + " " + "ж" * 60 + " " + "ж" * 101,
    "Hello World MiXeD CaSe iPhone McDonald's",
    "tab\there\nnewline\r\nend\x0bvt\x0cff",
    "ab\x00cd\x07ef\u200bgh\x7fij\u0085kl\ue000mn",
    "nbsp\u00a0here\u3000ideographic\u2009thin",
    "straße ﬁne x² İstanbul ΣΑΣ ΌΣΟΣ",
    "x\ufffdy e\u0301 \u0301alone",
    "don't can't won’t “quoted” «guillemets» — dash",
    "",
    "   \t\n  ",
    # every Unicode space separator between words (our whitespace class lists them explicitly)
    "".join(f"w{i}{chr(c)}" for i, c in enumerate(
        c for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in ("Zs", "Zl", "Zp"))),
]


def _reference(vocab_file, lower_case):
    return tokenizers.BertWordPieceTokenizer(str(vocab_file), lowercase=lower_case,
                                             strip_accents=lower_case)


@pytest.fixture(scope="module")
def vocab_file(minilm_dir):
    return minilm_dir / "vocab.txt"


@pytest.fixture(scope="module")
def uncased(minilm_dir):
    return BertTokenizer.from_pretrained(minilm_dir)


@pytest.fixture(scope="module")
def cased(vocab_file):
    return BertTokenizer(vocab_file, lower_case=False)


@pytest.fixture(scope="module")
def texts(corpus_sentences):
    return corpus_sentences[:300] + HARD_CASES


def test_special_ids_and_casing_from_minilm(uncased):
    assert uncased.lower_case  # tokenizer_config.json: do_lower_case true
    assert (uncased.pad_id, uncased.unk_id, uncased.cls_id, uncased.sep_id, uncased.mask_id) == (
        0, 100, 101, 102, 103)
    assert uncased.vocab_size == 30522 == len(uncased.vocab)
    assert uncased.token_to_id("hello") == 7592
    with pytest.raises(KeyError, match="not-a-token"):
        uncased.token_to_id("not-a-token")


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_ids_match_reference(lower_case, uncased, cased, vocab_file, texts):
    tok = uncased if lower_case else cased
    ref = _reference(vocab_file, lower_case)
    got = tok.tokenize(texts).to_list()
    for text, ids in zip(texts, got):
        assert ids == ref.encode(text, add_special_tokens=False).ids, text


def test_cased_differs_from_uncased(uncased, cased):
    assert uncased.tokenize(["Café"]).to_list() != cased.tokenize(["Café"]).to_list()
    assert uncased.tokenize(["café"]).to_list() == uncased.tokenize(["cafe"]).to_list()
    assert cased.tokenize(["café"]).to_list() != cased.tokenize(["cafe"]).to_list()


def test_words_match_reference_word_ids(uncased, vocab_file, texts):
    ref = _reference(vocab_file, True)
    words = uncased.tokenize_words(texts).to_list()
    for text, got in zip(texts, words):
        enc = ref.encode(text, add_special_tokens=False)
        expected = {}
        for token_id, word in zip(enc.ids, enc.word_ids):
            expected.setdefault(word, []).append(token_id)
        assert got == list(expected.values()), text


def test_offsets_match_reference(uncased, vocab_file, texts):
    ref = _reference(vocab_file, True)
    ids, starts, ends = uncased.tokenize_with_offsets(texts)
    assert ids.to_list() == uncased.tokenize(texts).to_list()
    for text, s, e in zip(texts, starts.to_list(), ends.to_list()):
        raw = text.encode("utf-8")
        char_offsets = [(len(raw[:a].decode()), len(raw[:b].decode())) for a, b in zip(s, e)]
        assert char_offsets == ref.encode(text, add_special_tokens=False).offsets, text


def test_detokenize_matches_reference_decoder(uncased, vocab_file, texts):
    ref = _reference(vocab_file, True)
    ref.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    ids = uncased.tokenize(texts)
    got = [s.decode("utf-8") for s in uncased.detokenize(ids).numpy()]
    assert got == [ref.decode(row, skip_special_tokens=False) for row in ids.to_list()]
    padded = ids.to_tensor(0)  # dense with [PAD]s and lists give the same
    assert uncased.detokenize(padded).numpy().tolist() == uncased.detokenize(ids).numpy().tolist()
    assert uncased.detokenize([[101, 7592, 102]]).numpy().tolist() == [b"hello"]


def test_eager_tf_function_and_dataset_agree(uncased, corpus_sentences):
    texts = corpus_sentences[:64] + HARD_CASES
    eager = uncased.tokenize(texts).to_list()
    graph = tf.function(uncased.tokenize)(tf.constant(texts)).to_list()
    ds = tf.data.Dataset.from_tensor_slices(texts)
    per_example = [t.numpy().tolist() for t in ds.map(uncased.tokenize)]
    batched = [r for b in ds.batch(16).map(uncased.tokenize) for r in b.to_list()]
    assert eager == graph == per_example == batched
    words = uncased.tokenize_words(texts).to_list()
    words_ds = [w.to_list() for w in ds.map(uncased.tokenize_words)]
    assert words == words_ds
    offs = [x.to_list() for x in uncased.tokenize_with_offsets(texts)]
    offs_fn = [x.to_list() for x in tf.function(uncased.tokenize_with_offsets)(tf.constant(texts))]
    assert offs == offs_fn


def test_scalar_and_python_str_inputs(uncased):
    assert uncased.tokenize("Hello world").numpy().tolist() == [7592, 2088]
    assert uncased.tokenize_words("Hello unaffable").to_list() == [[7592], [14477, 20961, 3468]]
    with pytest.raises(ValueError, match="shape"):
        uncased.tokenize([["a"], ["b"]])


def test_empty_whitespace_and_control_only_give_empty_rows(uncased):
    assert uncased.tokenize(["", " ", "\t\n\r ", "\x00\x01\u200b"]).to_list() == [[], [], [], []]
    assert uncased.tokenize(tf.constant([], tf.string)).to_list() == []


def test_control_chars_are_removed_not_split(uncased):
    assert (uncased.tokenize(["hel\x00lo wor\u200bld"]).to_list()
            == uncased.tokenize(["hello world"]).to_list())


def test_long_text_and_long_words(uncased):
    text = "word " * 20000  # 100,000 characters
    assert uncased.tokenize([text]).row_lengths().numpy().tolist() == [20000]
    assert uncased.tokenize(["x" * 100_000]).to_list() == [[100]]
    assert uncased.tokenize(["a" * 100, "a" * 101]).to_list()[1] == [100]
    assert uncased.tokenize(["a" * 100]).to_list()[0] != [100]


def test_invalid_utf8_is_replaced_and_dropped(uncased):
    # Documented choice: bad bytes -> U+FFFD -> removed, like the reference's clean_text.
    bad = tf.constant([b"ab\xffcd ok", b"\xc3\x28 x", b"\xe2\x82"])
    got = uncased.tokenize(bad).to_list()
    assert got == uncased.tokenize(["abcd ok", "( x", ""]).to_list()
    ids, starts, ends = uncased.tokenize_with_offsets(bad)
    assert ids.to_list() == got
    assert starts.to_list()[0] == [0, 4, 6] and ends.to_list()[0] == [4, 5, 8]  # abc ##d ok


def test_vocab_without_specials_is_rejected(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[MASK]\nhello\n")
    with pytest.raises(ValueError, match=r"\[CLS\].*\[SEP\]") as err:
        BertTokenizer(path)
    assert str(path) in str(err.value)


def test_from_pretrained_casing_sources(tmp_path, vocab_file):
    shutil.copy(vocab_file, tmp_path / "vocab.txt")
    assert BertTokenizer.from_pretrained(tmp_path).lower_case  # guessed: no upper-case tokens
    (tmp_path / "bert_keras.json").write_text(json.dumps({"lower_case": False}))
    assert not BertTokenizer.from_pretrained(tmp_path).lower_case
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    assert BertTokenizer.from_pretrained(tmp_path).lower_case  # HF config wins
    cased_dir = tmp_path / "cased"
    cased_dir.mkdir()
    (cased_dir / "vocab.txt").write_text("\n".join(bk.SPECIAL_TOKENS + ("Hello",)))
    assert not BertTokenizer.from_pretrained(cased_dir).lower_case
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        BertTokenizer.from_pretrained(tmp_path / "missing")


def test_learn_vocab_small(corpus_sentences, tmp_path):
    vocab = bk.learn_vocab(corpus_sentences, vocab_size=300, min_count=2)
    assert vocab[:5] == list(bk.SPECIAL_TOKENS)
    assert len(vocab) == len(set(vocab)) and 200 < len(vocab) < 400
    assert all(t == t.lower() for t in vocab[5:])
    path = tmp_path / "vocab.txt"
    bk.save_vocab(vocab, path)
    tok = BertTokenizer(path)
    assert bk.load_vocab(path) == vocab
    ids = tok.tokenize(corpus_sentences[:50]).flat_values.numpy()
    assert np.mean(ids == tok.unk_id) < 0.01


def test_bundled_vocab(corpus_sentences):
    path = assets.path("vocab.txt")
    tok = BertTokenizer(path)
    assert tok.vocab[:5] == list(bk.SPECIAL_TOKENS)
    assert 7600 <= tok.vocab_size <= 8400
    ids = tok.tokenize(corpus_sentences).flat_values.numpy()
    assert np.mean(ids == tok.unk_id) < 0.001
    assert np.mean(tok.tokenize(corpus_sentences).row_lengths().numpy()) < 40


def test_keep_values_equals_ragged_boolean_mask():
    from bert_keras.text.packing import keep_values

    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 6, 50)
    ragged = tf.RaggedTensor.from_row_lengths(np.arange(lengths.sum(), dtype=np.int32), lengths)
    keep = rng.random(lengths.sum()) > 0.3
    want = tf.ragged.boolean_mask(ragged, ragged.with_flat_values(keep))
    got = keep_values(ragged, tf.constant(keep))
    assert got.to_list() == want.to_list()


def test_keep_first_keeps_the_first_items_of_each_row():
    from bert_keras.text.packing import keep_first

    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 7, 40)
    ragged = tf.RaggedTensor.from_row_lengths(np.arange(lengths.sum(), dtype=np.int64), lengths)
    counts = rng.integers(0, 9, 40).astype(np.int32)  # below, at and past each row's length
    got = keep_first(ragged, tf.constant(counts))
    assert got.to_list() == [row[:n] for row, n in zip(ragged.to_list(), counts)]
