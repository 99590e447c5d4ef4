"""Tests for bert_keras.task_features: packing, first-piece tagging labels, QA windows."""

import unicodedata

import numpy as np
import pytest

import bert_keras as bk
from bert_keras import finetuning_data as fd
from bert_keras import task_features as tfe
from bert_keras.data.finetuning import batching
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.tasks.span_qa import featurizer as spans
from bert_keras.text.preprocessor import BertPreprocessor
from bert_keras.text.tokenizer import BertTokenizer


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return BertTokenizer.from_pretrained(minilm_dir)


# --- classification ------------------------------------------------------------------------


def test_pairs_packed_like_the_preprocessor(tokenizer):
    examples = fd.load_bundled_task("bible_paraphrase", "dev")[:40]
    labels = LabelMap.from_examples(examples)
    feats = tfe.classification_features(examples, tokenizer, seq_length=48, label_map=labels)
    ref = BertPreprocessor(tokenizer, seq_length=48)(
        [e.text_a for e in examples], [e.text_b for e in examples])
    for i, ex in enumerate(examples):
        ids, types = feats["input_word_ids"][i], feats["input_type_ids"][i]
        n = int(ref["input_mask"][i].numpy().sum())
        np.testing.assert_array_equal(ids, ref["input_word_ids"][i, :n].numpy())
        np.testing.assert_array_equal(types, ref["input_type_ids"][i, :n].numpy())
        # [CLS] A [SEP] B [SEP]: two SEPs, B's type ids are 1 from after the first SEP.
        seps = np.flatnonzero(ids == tokenizer.sep_id)
        assert ids[0] == tokenizer.cls_id and len(seps) == 2 and seps[1] == len(ids) - 1
        assert (types[:seps[0] + 1] == 0).all() and (types[seps[0] + 1:] == 1).all()
        assert len(ids) <= 48
    # Short pairs are kept whole: A's pieces are exactly the tokenized text_a.
    short = [i for i, e in enumerate(examples) if len(feats["input_word_ids"][i]) < 48]
    assert short
    i = short[0]
    a = tokenizer.tokenize(examples[i].text_a).numpy().tolist()
    b = tokenizer.tokenize(examples[i].text_b).numpy().tolist()
    expected = [tokenizer.cls_id] + a + [tokenizer.sep_id] + b + [tokenizer.sep_id]
    assert feats["input_word_ids"][i].tolist() == expected
    np.testing.assert_array_equal(feats["labels"], labels.encode(examples))


def test_single_sentences_multilabel_regression_and_unseen_label(tokenizer):
    ex = [fd.ClassificationExample("a cat", None, ["x", "y"], source="f:1"),
          fd.ClassificationExample("a dog barks", None, ["y"], source="f:2")]
    m = LabelMap.from_examples(ex)
    feats = tfe.classification_features(ex, tokenizer, 16, label_map=m, label_type="multi")
    assert feats["labels"].tolist() == [[1.0, 1.0], [0.0, 1.0]]
    assert all((t == 0).all() for t in feats["input_type_ids"])
    reg = [fd.ClassificationExample("a", None, 0.5), fd.ClassificationExample("b", None, 4.0)]
    reg_feats = tfe.classification_features(reg, tokenizer, 8, label_type="regression")
    assert reg_feats["labels"].tolist() == [0.5, 4.0]
    train = [fd.ClassificationExample("a", None, "pos"), fd.ClassificationExample("b", None, "neg")]
    bad = [fd.ClassificationExample("c", None, "neutral", source="dev.tsv:7")]
    with pytest.raises(ValueError, match=r"'neutral' in dev.tsv:7"):
        tfe.classification_features(bad, tokenizer, 8, label_map=LabelMap.from_examples(train))
    unlabeled = tfe.classification_features(
        [fd.ClassificationExample("c", None, None)], tokenizer, 8, label_map=LabelMap(["a"]))
    assert "labels" not in unlabeled
    with pytest.raises(ValueError, match="mix single sentences and pairs"):
        tfe.classification_features(
            [fd.ClassificationExample("a", "b", "x"), fd.ClassificationExample("a", None, "x")],
            tokenizer, 8, label_map=LabelMap(["x"]))


# --- tagging -------------------------------------------------------------------------------


def test_tagging_labels_on_first_piece_and_mapped_back(tokenizer):
    examples = fd.load_bundled_task("bible_ner", "dev")[:60]
    examples.append(fd.TaggingExample(["Ashchenaz", "went", "to", "Jerusalem", "."],
                                      ["B-PER", "O", "O", "B-LOC", "O"]))
    m = LabelMap(["O", "B-PER", "B-LOC"])
    feats = tfe.tagging_features(examples, tokenizer, seq_length=128, label_map=m)
    all_words = [w for ex in examples for w in ex.words]
    word_pieces = iter(tokenizer.tokenize(all_words).to_list())
    multi_piece_words = 0
    for i, ex in enumerate(examples):
        ids, labels, index = (feats[k][i] for k in ("input_word_ids", "labels", "word_index"))
        assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
        first = np.flatnonzero(index >= 0)
        # One labeled position per word, in word order, carrying that word's tag.
        assert index[first].tolist() == list(range(len(ex.words)))
        assert m.decode(labels[first]) == ex.tags
        others = np.setdiff1d(np.arange(len(ids)), first)
        assert (labels[others] == bk.IGNORE_LABEL).all()
        # The pieces between two first pieces are the word's own pieces.
        bounds = list(first) + [len(ids) - 1]
        for w, word in enumerate(ex.words):
            pieces = next(word_pieces)
            assert ids[bounds[w]:bounds[w + 1]].tolist() == pieces
            multi_piece_words += len(pieces) > 1
        words_back = tfe.word_predictions([labels], [index], [len(ex.words)])[0]
        assert m.decode(words_back) == ex.tags
    assert multi_piece_words > 10  # the test exercised non-first pieces


def test_a_sentence_longer_than_seq_length_goes_on_in_rows_of_its_own(tokenizer):
    ex = fd.TaggingExample(["Jerusalem"] * 5 + ["Ashchenaz"] * 3, ["B-LOC"] * 5 + ["B-PER"] * 3)
    m = LabelMap(["O", "B-PER", "B-LOC"])
    feats = tfe.tagging_features([ex, ex], tokenizer, seq_length=8, label_map=m)
    # Each sentence's first row holds 5 words and the 6th's first piece (the last slot); its
    # next row starts at the 7th word, packed as the text of the words left.
    assert feats["example_index"].tolist() == [0, 1, 0, 1]
    assert feats["num_words"].tolist() == [8] * 4
    assert [len(r) for r in feats["input_word_ids"][:2]] == [8, 8]
    rest = tfe.tagging_features([fd.TaggingExample(ex.words[6:], ex.tags[6:])], tokenizer, 8, m)
    assert feats["input_word_ids"][2].tolist() == rest["input_word_ids"][0].tolist()
    assert feats["word_index"][2].tolist() == [i + 6 if i >= 0 else -1
                                               for i in rest["word_index"][0]]
    back = tfe.word_predictions(feats["labels"], feats["word_index"], feats["num_words"],
                                default=0, example_index=feats["example_index"])
    assert [m.decode(b) for b in back] == [ex.tags, ex.tags]
    first_rows = tfe.word_predictions(feats["labels"][:1], feats["word_index"][:1], [8])[0]
    assert m.decode(first_rows) == ["B-LOC"] * 5 + ["B-PER"] + ["O"] * 2  # rows on their own
    probs = np.eye(3, dtype=np.float32)[np.maximum(feats["labels"][0], 0)]  # (T, C) token values
    assert tfe.word_predictions([probs], feats["word_index"], [8])[0].shape == (8, 3)


# --- span QA -------------------------------------------------------------------------------


def _normalize(text):
    """Uncased BERT normalization of one piece's text (strip accents, lower-case)."""
    text = unicodedata.normalize("NFD", text)
    return "".join(c for c in text if unicodedata.category(c) != "Mn").lower()


def _long_examples():
    """Real QA rows joined into long contexts, the answer of each at a different place."""
    rows = fd.load_bundled_task("wordnet_qa", "dev")[:120]
    examples = []
    for k in range(0, 120, 6):
        group = rows[k:k + 6]
        for j, ex in enumerate(group):
            prefix = " ".join(g.context for g in group[:j]) + (" " if j else "")
            context = prefix + " ".join(g.context for g in group[j:])
            text, start = ex.answers[0]
            examples.append(fd.SpanExample(f"q{k}-{j}", ex.question, context,
                                           [(text, start + len(prefix))]))
    examples.append(fd.SpanExample("none", "Which word means nothing?", rows[0].context, [],
                                   is_impossible=True))
    examples.append(fd.SpanExample("unicode", "Who came?", "Señor “Naïve” Zoë came to Zürich.",
                                   [("Zoë", 14)]))
    return examples


def test_span_windows_hold_their_answers_and_offsets_give_the_text(tokenizer):
    examples = _long_examples()
    feats = spans.span_features(examples, tokenizer, seq_length=48, doc_stride=12,
                                max_query_length=16)
    n = tfe.num_features(feats)
    assert n > 2 * len(examples)  # long contexts really were split
    found = set()
    for f in range(n):
        ex = examples[feats["example_index"][f]]
        ids, types, offsets = (feats[k][f]
                               for k in ("input_word_ids", "input_type_ids", "token_offsets"))
        assert len(ids) <= 48 and ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
        context_pos = np.flatnonzero(offsets[:, 0] >= 0)
        assert (types[context_pos] == 1).all() and (offsets[types == 0] == -1).all()
        # Each context token's offsets select exactly the (normalized) text of its piece.
        for p in context_pos:
            piece = tokenizer.id_to_token(int(ids[p])).removeprefix("##")
            assert piece == "[UNK]" or piece == _normalize(ex.context[offsets[p, 0]:offsets[p, 1]])
        s, e = feats["start_positions"][f], feats["end_positions"][f]
        if s == 0:
            assert e == 0
            continue
        assert context_pos[0] <= s <= e <= context_pos[-1]
        assert ex.context[int(offsets[s][0]):int(offsets[e][1])] == ex.answers[0][0]
        found.add(ex.qid)
    answerable = {ex.qid for ex in examples if ex.answers}
    assert found == answerable
    # Windows start every doc_stride tokens and together cover the context; every context
    # token is the "max context" token of exactly one window.
    num_tokens = tokenizer.tokenize([ex.context for ex in examples]).row_lengths().numpy()
    for i, ex in enumerate(examples):
        rows = np.flatnonzero(feats["example_index"] == i)
        starts = [int(feats["token_offsets"][f][feats["input_type_ids"][f] == 1][0, 0])
                  for f in rows]
        assert len(set(starts)) == len(rows)
        max_ctx = sum(int(feats["token_is_max_context"][f].sum()) for f in rows)
        assert max_ctx == num_tokens[i]


def test_span_answer_outside_window_and_bad_answer(tokenizer):
    context = " ".join(f"word{i}" for i in range(60)) + " target"
    ex = fd.SpanExample("q", "where?", context, [("target", context.index("target"))])
    feats = spans.span_features([ex], tokenizer, seq_length=32, doc_stride=16, max_query_length=8)
    pos = feats["start_positions"]
    assert (pos[:-1] == 0).all() and pos[-1] > 0
    bad = fd.SpanExample("q", "where?", "a b c", [("zzz", 0)], source="qa.jsonl:3")
    with pytest.raises(ValueError, match="qa.jsonl:3"):
        spans.span_features([bad], tokenizer, seq_length=32)


# --- batching ------------------------------------------------------------------------------


def test_make_dataset_pads_per_batch_and_covers_every_feature(tokenizer):
    examples = fd.load_bundled_task("bible_ner", "dev")[:50]
    m = LabelMap.from_examples(examples)
    feats = tfe.tagging_features(examples, tokenizer, 64, label_map=m)
    ds = batching.make_dataset(feats, batch_size=8, label_keys="labels", shuffle=True, seed=1,
                          pad_id=tokenizer.pad_id)
    epochs = []
    for _ in range(2):
        seen = []
        for x, y in ds:
            ids, mask = x["input_word_ids"].numpy(), x["input_mask"].numpy()
            t = ids.shape[1]
            assert t % 8 == 0 and t - 8 < mask.sum(1).max() <= t  # padded to longest, rounded to 8
            assert (y.numpy()[mask == 0] == bk.IGNORE_LABEL).all()
            assert (ids[mask == 0] == tokenizer.pad_id).all()
            for row, n in zip(ids, mask.sum(1)):
                seen.append(tuple(row[:n]))
        epochs.append(seen)
    expected = sorted(tuple(r) for r in feats["input_word_ids"])
    assert sorted(epochs[0]) == expected and sorted(epochs[1]) == expected
    assert epochs[0] != epochs[1]  # reshuffled each epoch
    qa = spans.span_features(fd.load_bundled_task("wordnet_qa", "dev")[:10], tokenizer, 64)
    x, y = next(iter(batching.make_dataset(qa, 4, label_keys=("start_positions", "end_positions"))))
    assert sorted(y) == ["end_positions", "start_positions"] and y["start_positions"].shape == (4,)


class _SumModel:
    """predict_on_batch: per-row sum of ids (B,) and per-token ids * 2 (B, T)."""

    def predict_on_batch(self, x):
        ids = x["input_word_ids"]
        return {"sum": ids.sum(1), "tokens": ids * 2}


def test_predict_restores_feature_order_and_trims(tokenizer):
    examples = fd.load_bundled_task("wordnet_topics", "dev")[:37]
    feats = tfe.classification_features(examples, tokenizer, 64, LabelMap.from_examples(examples))
    out = batching.predict(_SumModel(), feats, batch_size=5, token_outputs=("tokens",))
    for i, row in enumerate(feats["input_word_ids"]):
        assert out["sum"][i] == row.sum()
        np.testing.assert_array_equal(out["tokens"][i], row * 2)


def test_predict_traces_a_keras_model_once_for_every_batch_shape(tokenizer):
    import keras

    examples = fd.load_bundled_task("wordnet_topics", "dev")[:37]
    feats = tfe.classification_features(examples, tokenizer, 64, LabelMap.from_examples(examples))
    inputs = {k: keras.Input((None,), dtype="int32", name=k)
              for k in ("input_word_ids", "input_mask", "input_type_ids")}
    summed = keras.layers.Lambda(lambda x: keras.ops.sum(x[0] * x[1], axis=1))(
        [inputs["input_word_ids"], inputs["input_mask"]])
    model = keras.Model(inputs, summed)
    out = batching.predict(model, feats, batch_size=5)  # 8 batches: lengths vary, last has 2
    assert [int(v) for v in out] == [int(row.sum()) for row in feats["input_word_ids"]]
    # One graph for every batch shape (Keras alone traces again for each new kind of shape).
    assert model.predict_function.experimental_get_tracing_count() == 1
