"""Served tagging reads a whole text: the export cuts a long text into rows in the graph as
`features.tagging_features` continues a long sentence, so every word is tagged as
`BertTokenClassifier.predict(words)` tags it; checked for families with different
tokenizers, served in a process without the project."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.serving.export import export_saved_model
from bert_keras.serving.signatures import ServingFunctions
from bert_keras.serving.warmup import EXAMPLES
from bert_keras.tasks import graph_ops, tagging

from export_harness import _enc, _outputs, run_client

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"

SEQ = 16  # 14 pieces a row: the long texts below are many rows long
NAMES = ["bert_tagger", "roberta_tagger", "albert_tagger"]
# Words that each tokenizer gives back as they are, joined by single spaces (no "LORD'S").
WORDS = ("In the beginning God created the heaven and the earth . Jesus wept in Bethany , "
         "Judea Café naïve résumé ! supercalifragilistic").split(" ")
GIANT = "supercalifragilisticexpialidocious" * 2  # more pieces than a row, in every family
LONG = " ".join(WORDS * 4)
MIXED = " ".join(WORDS[:12] + [GIANT] + WORDS * 2 + [GIANT])
BATCH = [LONG, "", "   ", "Amen", GIANT, MIXED]
TOO_LONG = "word " * 1000  # more than the default 64 rows of 14 pieces


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """{name: (model, report of its export's requests)}: one export per family, all served
    by one client process."""
    tmp = tmp_path_factory.mktemp("tagging_exports")
    models, requests = {}, {}
    for name in NAMES:
        model = bk.BertTokenClassifier.from_pretrained(str(FAMILIES / name), seq_length=SEQ)
        tokenizer = model.preprocessor.tokenizer
        info = dict(task="tagging", labels=model.labels, seq_length=SEQ,
                    lower_case=tokenizer.lower_case, text_fields=["text"])
        path = export_saved_model(model, tokenizer, info, tmp / "exports", name)  # op audit
        models[path] = name, model
        requests[path] = [["serving_default", {"text": _enc(np.array(t, object))}]
                          for t in (BATCH, [], ["Amen", TOO_LONG], ["Jesus wept"])]
    report = run_client(tmp, list(requests), requests)
    return {name: (model, report["exports"][path]) for path, (name, model) in models.items()}


def _requests(results):
    """The results of the extra requests (after the warmup ones), each warmup one answered."""
    for r in results:
        if r["warmup"]:
            _outputs(r)
    return [r for r in results if not r["warmup"]]


def _words(out, b):
    valid = out["tag_ids"][b] >= 0
    assert not (out["tag_ids"][b][valid.sum():] >= 0).any()  # words first, then padding
    return [w.decode() for w in out["tokens"][b][valid]], valid


@pytest.mark.parametrize("name", NAMES)
def test_long_texts_are_tagged_whole_as_predict_on_words(served, name):
    model, results = served[name]
    out = _outputs(_requests(results)[0])
    tokenizer = model.preprocessor.tokenizer
    pieces = tokenizer.tokenize(tf.constant([LONG, GIANT])).row_lengths().numpy()
    assert pieces[0] > 8 * (SEQ - 2) and pieces[1] > SEQ - 2  # many rows; a word past a row
    for b, text in enumerate(BATCH):
        words, valid = _words(out, b)
        if not text.strip():
            continue
        assert " ".join(words) == text  # every word, in order, none dropped
        starts, ends = out["token_starts"][b][valid], out["token_ends"][b][valid]
        assert [text[s:e] for s, e in zip(starts, ends)] == words  # character offsets
        logits = model.predict([words])[0].numpy()
        probs = tf.nn.softmax(logits).numpy()
        np.testing.assert_allclose(out["tag_scores"][b][valid], probs.max(-1), atol=1e-5)
        clear = np.sort(probs, -1)[:, -1] - np.sort(probs, -1)[:, -2] > 1e-4
        got = out["tag_ids"][b][valid]
        np.testing.assert_array_equal(got[clear], probs.argmax(-1)[clear])
        assert [t.decode() for t in out["tags"][b][valid]] == [model.labels[i] for i in got]


def test_blank_texts_and_an_empty_batch(served):
    for name, (model, results) in served.items():
        out = _outputs(_requests(results)[0])
        assert _words(out, 1)[0] == []  # ""
        blank, _ = _words(out, 2)  # "   ": RoBERTa's whitespace word, an empty word elsewhere
        assert all(not w.strip() for w in blank)
        assert _words(out, 4)[0] == [GIANT]
        empty = _outputs(_requests(results)[1])
        for key, value in empty.items():
            assert value.shape[0] == 0, (name, key, value.shape)


def test_a_text_over_max_windows_is_refused_and_the_next_request_answered(served):
    for name, (model, results) in served.items():
        refused, following = _requests(results)[2:]
        for runtime in ("tf1", "tf2"):
            error = refused.get(f"{runtime}_error", "")
            assert "InvalidArgument" in error and "max_windows=64" in error, (name, refused)
        out = _outputs(following)
        assert _words(out, 0)[0] == ["Jesus", "wept"]


def test_max_windows_is_an_export_option():
    model = bk.BertTokenClassifier.from_pretrained(str(FAMILIES / "bert_tagger"), seq_length=SEQ)
    tokenizer = model.preprocessor.tokenizer
    info = dict(task="tagging", labels=model.labels, seq_length=SEQ, text_fields=["text"])
    fns = ServingFunctions(model, tokenizer, info, max_windows=3)
    three, four = "word " * 42, "word " * 43  # 14 pieces a row
    assert tagging.cut_rows(fns, tf.constant([three, four]), 3).count.numpy().tolist() == [3, 4]
    assert fns.task.export_metadata(fns) == {"max_windows": 3}
    function = tf.function(fns.serve, autograph=False)

    def serve(texts):
        return {k: v.numpy() for k, v in function(tf.constant(texts)).items()}

    assert _words(serve([three]), 0)[0] == ["word"] * 42
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_windows=3 rows"):
        serve([three, four])
    # The warmup requests' long text runs the cutting within the limit.
    longest = fns.task.warmup_longest(fns, "text", EXAMPLES["text"][0])
    rows = tagging.cut_rows(fns, tf.constant([longest]), 3).count.numpy()[0]
    assert 2 <= rows <= 3


def _rows_as_tagging_features_cuts(pieces, first_pieces, room):
    """Each row's first word, as tagging_features' loop continues a sentence."""
    starts, first = [], 0
    while first < len(pieces):
        starts.append(first)
        used, last = first_pieces[first], first
        for k in range(first + 1, len(pieces)):
            if used >= room:
                break
            used, last = used + pieces[k], k  # word k's first piece is kept
        first = last + 1
    return starts


def test_word_rows_are_the_rows_tagging_features_makes():
    rng = np.random.default_rng(0)
    for _ in range(30):
        num_texts = int(rng.integers(0, 5))
        lengths = rng.integers(0, 40, num_texts)
        pieces = [rng.integers(1, 8, n) for n in lengths]
        first_pieces = [np.maximum(1, p + rng.integers(-1, 2, len(p))) for p in pieces]
        room = int(rng.integers(1, 12))
        splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        flat = lambda rows: np.concatenate(rows + [np.zeros(0, int)]).astype(np.int32)  # noqa: E731
        starts, count = graph_ops.word_rows(flat(pieces), flat(first_pieces), splits, room,
                                            max_rows=8)
        want = [_rows_as_tagging_features_cuts(p, f, room) for p, f in zip(pieces, first_pieces)]
        assert count.numpy().tolist() == [min(len(w), 9) for w in want]
        for b, w in enumerate(want):
            got = np.flatnonzero(starts.numpy()[splits[b]:splits[b + 1]]).tolist()
            assert got == w[:9]
