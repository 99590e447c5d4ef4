"""A CRF tagger exported and served in a process without the project: its served `tags` are
the Viterbi path that the Python model decodes over each text's words (a long text's rows
decoded as one chain, not row by row), `tag_scores` each word's marginal probability of its
tag, for `serving_default` and `tag_words` alike."""

import pathlib

import numpy as np
import pytest

import bert_keras as bk
from bert_keras.data.finetuning import batching
from bert_keras.serving.export import export_saved_model
from bert_keras.tasks.tagging import word_inputs

from export_harness import _enc, _outputs, run_client

FAMILIES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "families"
SEQ = 16  # 14 pieces a row: the long text is several rows long
WORDS = ("In the beginning God created the heaven and the earth . Jesus wept in Bethany , "
         "Judea and Paul went to Jerusalem").split(" ")
LONG = WORDS * 3
TEXTS = [" ".join(LONG), "Amen", "", " ".join(WORDS[:6])]
GIVEN = [WORDS[:7], LONG, ["Paul"]]


def _padded(words):
    width = max(len(w) for w in words)
    return np.array([w + [""] * (width - len(w)) for w in words], object)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(model, served outputs of TEXTS, served outputs of GIVEN)."""
    tmp = tmp_path_factory.mktemp("crf_export")
    model = bk.BertTokenClassifier.from_pretrained(str(FAMILIES / "bert_tagger"),
                                                   seq_length=SEQ, crf=True,
                                                   crf_constraints="bio")
    rng = np.random.default_rng(0)  # transitions strong enough to overrule the emissions
    model.crf_layer.set_weights([rng.normal(0, 3, w.shape).astype("float32")
                                 / model.crf_learning_rate_multiplier
                                 for w in model.crf_layer.weights])
    tokenizer = model.preprocessor.tokenizer
    info = dict(task="tagging", labels=model.labels, seq_length=SEQ,
                lower_case=tokenizer.lower_case, text_fields=["text"])
    path = export_saved_model(model, tokenizer, info, tmp / "exports", "crf")  # op audit
    requests = [["serving_default", {"text": _enc(np.array(TEXTS, object))}],
                ["tag_words", {"words": _enc(_padded(GIVEN))}]]
    report = run_client(tmp, [path], {path: requests})
    results = [r for r in report["exports"][path] if not r["warmup"]]
    return model, _outputs(results[0]), _outputs(results[1])


def _check(model, out, sentences):
    logits = model.predict(sentences)
    path = model.word_tags(logits).to_list()
    for b, words in enumerate(sentences):
        n = len(words)
        assert [w.decode() for w in out["tokens"][b][:n]] == words
        assert out["tag_ids"][b][:n].tolist() == path[b]
        assert [t.decode() for t in out["tags"][b][:n]] == [model.labels[i] for i in path[b]]
        if n:
            marginals = model.crf_layer.marginals(logits[b:b + 1].to_tensor(),
                                                  np.ones((1, n), bool)).numpy()[0]
            np.testing.assert_allclose(out["tag_scores"][b][:n],
                                       marginals[np.arange(n), path[b]], atol=1e-4)
        assert (out["tag_ids"][b][n:] == -1).all()


def test_served_tags_are_the_viterbi_path_over_each_whole_text(served):
    model, texts, _ = served
    _check(model, texts, [t.split() for t in TEXTS])
    # The long text spans several rows, and decoding it row by row would tag it otherwise.
    rows = word_inputs.word_features(model.preprocessor, [LONG], None, model.labels, "test")
    assert len(rows["input_word_ids"]) >= 3
    logits = batching.predict(model, rows, 8, token_outputs=True)
    per_row = []
    for row, index in zip(logits, rows["word_index"]):
        index = np.asarray(index)
        path = model.crf_layer.decode(np.asarray(row)[None], (index >= 0)[None]).numpy()[0]
        per_row.extend(path[index >= 0].tolist())
    assert per_row != texts["tag_ids"][0][:len(LONG)].tolist()


def test_served_tag_words_are_the_viterbi_path_of_the_given_words(served):
    model, _, given = served
    _check(model, given, GIVEN)


def test_served_entities_are_the_chunks_of_the_viterbi_tags(served):
    _, texts, _ = served
    from bert_keras.metrics.entities import get_entities

    for b in range(len(TEXTS)):
        valid = texts["token_starts"][b] >= 0
        tags = [t.decode() for t in texts["tags"][b][valid]]
        assert not any(t.startswith("I-") and (k == 0 or tags[k - 1][2:] != t[2:])
                       for k, t in enumerate(tags))  # the BIO constraints hold
        want = [(kind, i, j) for kind, i, j in get_entities(tags)]
        starts = texts["token_starts"][b][valid]
        got = [(t.decode(), s) for t, s in zip(texts["entity_types"][b],
                                               texts["entity_starts"][b]) if s >= 0]
        assert got == [(kind, starts[i]) for kind, i, _ in want]
