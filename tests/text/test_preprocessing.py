"""BertPreprocessor: packing, truncation and padding vs the reference `tokenizers` encodings."""

import numpy as np
import pytest
import tensorflow as tf
import tokenizers

from bert_keras.text.preprocessor import BertPreprocessor
from bert_keras.text.tokenizer import BertTokenizer

KEYS = ("input_word_ids", "input_mask", "input_type_ids")


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return BertTokenizer.from_pretrained(minilm_dir)


@pytest.fixture(scope="module")
def pairs(corpus_sentences):
    a = corpus_sentences[:120]
    b = corpus_sentences[1:121]
    b[::7] = ["Yes."] * len(b[::7])  # some short B segments
    a[3::11] = ["No!"] * len(a[3::11])  # some short A segments
    return a, b


def _reference(minilm_dir, seq_length):
    ref = tokenizers.BertWordPieceTokenizer(str(minilm_dir / "vocab.txt"), lowercase=True)
    ref.enable_truncation(max_length=seq_length, strategy="longest_first")
    ref.enable_padding(length=seq_length, pad_id=0, pad_token="[PAD]")
    return ref


def _as_numpy(out):
    assert set(out) == set(KEYS)
    for v in out.values():
        assert v.dtype == tf.int32
    return {k: out[k].numpy() for k in KEYS}


def _check_against(out, encodings):
    out = _as_numpy(out)
    np.testing.assert_array_equal(out["input_word_ids"], [e.ids for e in encodings])
    np.testing.assert_array_equal(out["input_mask"], [e.attention_mask for e in encodings])
    np.testing.assert_array_equal(out["input_type_ids"], [e.type_ids for e in encodings])


def test_single_matches_reference(minilm_dir, tokenizer, corpus_sentences):
    texts = corpus_sentences[:200] + ["", "   ", "a" * 150]
    pre = BertPreprocessor(tokenizer, seq_length=24)
    _check_against(pre(texts), _reference(minilm_dir, 24).encode_batch(texts))


def test_pair_matches_reference(minilm_dir, tokenizer, pairs):
    # Odd seq_length = even budget: round robin and HF longest_first agree exactly.
    pre = BertPreprocessor(tokenizer, seq_length=33)
    out = pre(*pairs)
    _check_against(out, _reference(minilm_dir, 33).encode_batch(list(zip(*pairs))))
    assert out["input_word_ids"].shape == (120, 33)
    np.testing.assert_array_equal(_as_numpy(pre(pairs))["input_word_ids"],
                                  out["input_word_ids"])  # one (texts, texts_b) argument


def _google_truncate_seq_pair(a, b, max_length):
    """Google BERT's create_pretraining_data / run_classifier rule (the reference)."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_length:
        (a if len(a) > len(b) else b).pop()
    return a, b


def test_pair_truncation_keeps_both_segments(tokenizer, pairs):
    seq_length = 20  # odd budget: A gets the extra token, as in Google BERT
    out = _as_numpy(BertPreprocessor(tokenizer, seq_length=seq_length)(*pairs))
    ids_a, ids_b = tokenizer.tokenize(pairs[0]).to_list(), tokenizer.tokenize(pairs[1]).to_list()
    for row, (a, b) in enumerate(zip(ids_a, ids_b)):
        ta, tb = _google_truncate_seq_pair(a, b, seq_length - 3)
        expected = [101] + ta + [102] + tb + [102]
        expected += [0] * (seq_length - len(expected))
        assert out["input_word_ids"][row].tolist() == expected
        n_a, n_b = len(ta) + 2, len(tb) + 1
        assert out["input_type_ids"][row].tolist() == [0] * n_a + [1] * n_b + [0] * (
            seq_length - n_a - n_b)
        assert ta and tb  # both segments survive
        if len(b) <= (seq_length - 3) // 2:
            assert tb == b  # a short segment is kept whole


def test_exact_packing_single_and_pair(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=8)
    out = _as_numpy(pre(["Hello world"], ["Hi"]))
    assert out["input_word_ids"].tolist() == [[101, 7592, 2088, 102, 7632, 102, 0, 0]]
    assert out["input_mask"].tolist() == [[1, 1, 1, 1, 1, 1, 0, 0]]
    assert out["input_type_ids"].tolist() == [[0, 0, 0, 0, 1, 1, 0, 0]]
    single = _as_numpy(pre("hello world"))  # scalar in, unbatched out
    assert single["input_word_ids"].tolist() == [101, 7592, 2088, 102, 0, 0, 0, 0]
    tiny = _as_numpy(BertPreprocessor(tokenizer, seq_length=3)(["a b"], ["c"]))
    assert tiny["input_word_ids"].tolist() == [[101, 102, 102]]


def test_pad_to_longest_is_capped(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=10, pad_to_longest=True)
    out = _as_numpy(pre(["hello world", "hi"]))
    assert out["input_word_ids"].tolist() == [[101, 7592, 2088, 102], [101, 7632, 102, 0]]
    assert out["input_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    long = _as_numpy(pre(["a b c d e f g h i j k l m", "hi"]))
    assert long["input_word_ids"].shape == (2, 10)
    fixed = _as_numpy(BertPreprocessor(tokenizer, seq_length=10)(["hello world", "hi"]))
    assert fixed["input_word_ids"].shape == (2, 10)
    np.testing.assert_array_equal(fixed["input_word_ids"][:, :4], out["input_word_ids"])


def test_pack_pretokenized_segments(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=9)
    a = tokenizer.tokenize_words(["hello unaffable world"])  # [B,(words),(pieces)]
    b = tf.ragged.constant([[7632]], dtype=tf.int32)
    out = _as_numpy(pre.pack([a, b]))
    assert out["input_word_ids"].tolist() == [[101, 7592, 14477, 20961, 3468, 2088, 102, 7632, 102]]
    np.testing.assert_array_equal(
        _as_numpy(pre(["hello unaffable world"], ["hi"]))["input_word_ids"], out["input_word_ids"])
    with pytest.raises(ValueError, match="1 or 2 segments"):
        pre.pack([b, b, b])


def test_bad_seq_length(tokenizer):
    with pytest.raises(ValueError, match=r"seq_length must be >= 2 .*got 1"):
        BertPreprocessor(tokenizer, seq_length=1)
    pre = BertPreprocessor(tokenizer, seq_length=2)
    assert _as_numpy(pre(["hello"]))["input_word_ids"].tolist() == [[101, 102]]
    with pytest.raises(ValueError, match="seq_length 2 is too short for 2 segment"):
        pre(["a"], ["b"])


def test_eager_function_and_dataset_agree(tokenizer, pairs):
    a, b = pairs[0][:32], pairs[1][:32]
    pre = BertPreprocessor(tokenizer, seq_length=24)
    eager = _as_numpy(pre(a, b))
    graph = _as_numpy(tf.function(pre)(tf.constant(a), tf.constant(b)))
    ds = tf.data.Dataset.from_tensor_slices((a, b))
    per_example = next(iter(ds.map(pre).batch(32)))
    batched = next(iter(ds.batch(32).map(pre)))
    for k in KEYS:
        np.testing.assert_array_equal(eager[k], graph[k])
        np.testing.assert_array_equal(eager[k], per_example[k].numpy())
        np.testing.assert_array_equal(eager[k], batched[k].numpy())


def test_saved_model_round_trip(minilm_dir, pairs, tmp_path):
    pre = BertPreprocessor.from_pretrained(minilm_dir, seq_length=24)

    class Export(tf.Module):
        def __init__(self, preprocessor):
            super().__init__()
            self.preprocessor = preprocessor

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
        def pair(self, a, b):
            return self.preprocessor(a, b)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def offsets(self, texts):
            ids, starts, ends = self.preprocessor.tokenizer.tokenize_with_offsets(texts)
            return {"ids": ids.to_tensor(-1), "starts": starts.to_tensor(-1)}

    module = Export(pre)
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    a, b = tf.constant(pairs[0][:16] + ["café\x00 中文"]), tf.constant(pairs[1][:16] + [""])
    got, want = loaded.pair(a, b), pre(a, b)
    for k in KEYS:
        np.testing.assert_array_equal(got[k].numpy(), want[k].numpy())
    got, want = loaded.offsets(a), module.offsets(a)
    for k in ("ids", "starts"):
        np.testing.assert_array_equal(got[k].numpy(), want[k].numpy())
