"""A token classifier fit, evaluated and predicting on pre-split words and one tag per word
(CoNLL-style), checked against the families' reference tokenizers (tokenizers'
tokenizer.json) and against what transformers answered for the fine-tuned fixtures."""

import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf
import tokenizers

import bert_keras as bk

FAMILIES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "families"
SENTENCES = ["In the beginning God created the heaven and the earth .",
             "Jesus wept in Bethany , Judea",
             "Café naïve résumé ! supercalifragilistic",
             "THE LORD'S HOUSE ( Jerusalem ) 12,000 shekels"]


def reference_rows(name, words, tags, seq_length):
    """Ids, mask and per-token labels of `words` by the family's reference tokenizer: the
    words joined by spaces, each word's tag on the first piece that starts in it."""
    tokenizer = tokenizers.Tokenizer.from_file(str(FAMILIES / name / "tokenizer.json"))
    rows, labels = [], []
    for sentence, sentence_tags in zip(words, tags):
        text = " ".join(sentence)
        word_starts = np.cumsum([0] + [len(w) + 1 for w in sentence[:-1]])
        encoding = tokenizer.encode(text)
        row_labels, seen = [], set()
        for (start, end), special in zip(encoding.offsets, encoding.special_tokens_mask):
            while start < len(text) and text[start] == " ":  # a piece's own leading space
                start += 1
            word = int(np.searchsorted(word_starts, start, "right")) - 1
            first = not special and word not in seen
            row_labels.append(sentence_tags[word] if first else bk.IGNORE_LABEL)
            if not special:
                seen.add(word)
        assert len(encoding.ids) <= seq_length
        rows.append(encoding.ids)
        labels.append(row_labels)
    width = max(len(r) for r in rows)
    pad = lambda r, v: list(r) + [v] * (width - len(r))  # noqa: E731
    ids = np.array([pad(r, 0) for r in rows], "int32")
    x = {"input_word_ids": ids, "input_mask": np.array([pad([1] * len(r), 0) for r in rows],
                                                       "int32"),
         "input_type_ids": np.zeros_like(ids)}
    return x, np.array([pad(label, bk.IGNORE_LABEL) for label in labels], "int32")


@pytest.mark.parametrize("name", ["bert_tagger", "roberta_tagger", "albert_tagger"])
def test_words_are_scored_as_the_reference_tokenizer_puts_each_tag_on_its_first_piece(name):
    model = bk.BertTokenClassifier.from_pretrained(str(FAMILIES / name), seq_length=64)
    words = [s.split(" ") for s in SENTENCES]
    ids = [[(len(w) + i) % model.num_classes for i, w in enumerate(s)] for s in words]
    names = [[model.labels[t] for t in row] for row in ids]
    x, y = reference_rows(name, words, ids, seq_length=64)
    rows = model._word_rows(words, ids)
    for i, (row_ids, labels) in enumerate(zip(rows["input_word_ids"], rows["labels"])):
        n = x["input_mask"][i].sum()
        assert row_ids.tolist() == x["input_word_ids"][i, :n].tolist()
        assert labels.tolist() == y[i, :n].tolist()
    want = model.evaluate(x, y, batch_size=len(words), verbose=0, return_dict=True)
    for tags in (ids, names):  # class ids or the model's label names
        got = model.evaluate(words, tags, batch_size=len(words), verbose=0, return_dict=True)
        assert got["loss"] == pytest.approx(want["loss"], rel=1e-5)
        assert got["accuracy"] == pytest.approx(want["accuracy"])


def test_predict_on_words_answers_what_transformers_scored_at_each_first_piece():
    answers = json.loads((FAMILIES / "roberta_tagger" / "answers.json").read_text("utf-8"))
    answers = [a for a in answers if " ".join(a["text"].split()) == a["text"]]
    assert len(answers) >= 2
    model = bk.BertTokenClassifier.from_pretrained(str(FAMILIES / "roberta_tagger"))
    words = [a["text"].split(" ") for a in answers]
    logits = model.predict(words + [["word"] * 200], batch_size=2)
    assert isinstance(logits, tf.RaggedTensor)
    assert logits.row_lengths().numpy().tolist() == [len(w) for w in words] + [200]
    column = np.empty(len(words), object)  # a DataFrame column of word lists
    column[:] = words
    for same in (tf.ragged.constant(words), column):
        np.testing.assert_allclose(model.predict(same).flat_values,
                                   logits[:-1].flat_values, atol=1e-5)
    for answer, sentence, row in zip(answers, words, logits[:-1]):
        starts = np.cumsum([0] + [len(w) + 1 for w in sentence[:-1]])
        first = [answer["token_starts"].index(s) for s in starts]  # transformers' first pieces
        probs = tf.nn.softmax(row).numpy()
        np.testing.assert_allclose(probs.max(-1), [answer["tag_scores"][k] for k in first],
                                   atol=1e-4)
        assert [model.labels[i] for i in probs.argmax(-1)] == [answer["tags"][k]
                                                                for k in first]
    # seq_length: 128, or the position table where shorter (the fixture's: 64 after
    # RoBERTa's offset); words past it have no token.
    assert model.preprocessor.seq_length == model.encoder.max_sequence_length == 64
    # A long sentence goes on in rows of its own, so every word has logits.
    long = logits[-1].numpy()
    rows = model._word_rows([["word"] * 200])
    fitted = int(np.max(rows["word_index"][0])) + 1  # the words of its first row
    assert len(rows["example_index"]) > 2 and 10 < fitted < 100 and np.isfinite(long).all()
    np.testing.assert_allclose(long[fitted:], model.predict([["word"] * (200 - fitted)])[0],
                               atol=1e-5)
    with pytest.raises(ValueError, match=r"seq_length=128 is longer than the encoder's "
                                         r"position table \(64 positions\)"):
        bk.BertTokenClassifier.from_pretrained(str(FAMILIES / "roberta_tagger"), seq_length=128)


def test_fit_on_words_with_validation_split_and_one_line_refusals():
    model = bk.BertTokenClassifier.from_pretrained(str(FAMILIES / "bert_tagger"), seq_length=32)
    words = [s.split(" ") for s in SENTENCES] * 2
    tags = [["B-PER" if w[:1].isupper() else "O" for w in s] for s in words]
    history = model.fit(words, tags, batch_size=2, epochs=2, validation_split=0.25, verbose=0)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert len(history.history["loss"]) == 2
    for bad_words, bad_tags, message in (
            ([["a", "b"]], [["O"]], "sentence 0 has 2 words but 1 tags"),
            ([["a"]], [["B-XYZ"]], "tag 'B-XYZ' of word 0 of sentence 0 is not one of its "
                                  "labels"),
            ([["a"]], [[7]], r"tag 7 of word 0 of sentence 0 is not a class id in \[0, 5\)"),
            ([["a"], [1]], [["O"], ["O"]], "Word 0 of sentence 1 is 1"),
            ([["a"]], [["O"], ["O"]], r"1 sentence\(s\) of words but 2 row\(s\) of tags"),
            (["a b"], [["O", "O"]], "labels cannot go with raw texts")):
        with pytest.raises(ValueError, match=message):
            model.fit(bad_words, bad_tags, verbose=0)
    logits = model.predict([["Jesus", "\x07", "wept"]])[0].numpy()  # a word without pieces
    assert np.isnan(logits[1]).all() and np.isfinite(logits[[0, 2]]).all()
    with pytest.raises(ValueError, match="sample_weight does not go with words"):
        model.fit(words, tags, sample_weight=np.ones(len(words)), verbose=0)
    with pytest.raises(ValueError, match="words need the model's tokenizer"):
        bk.BertTokenClassifier(model.encoder, num_classes=5).predict([["a"]])
