"""Served tagging reads a whole text: the export cuts a long text into rows in the graph as
`featurizer.tagging_features` continues a long sentence, so every word is tagged as
`BertTokenClassifier.predict(words)` tags it; checked for families with different
tokenizers: BERT's export served in a process without the project, RoBERTa's and ALBERT's
serving functions (the same graph code; their tokenizers' SavedModels are served so in
tests/families/test_families.py) run in this process."""

import collections
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.metrics.entities import get_entities
from bert_keras.serving import export
from bert_keras.serving.signatures import ServingFunctions
from bert_keras.serving.warmup import EXAMPLES
from bert_keras.tasks import graph_ops
from bert_keras.tasks.tagging import serving as tagging_serving
from bert_keras.tasks.task_serving import WindowOptions

from export_harness import _enc, _outputs, run_client

FAMILIES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "families"

SEQ = 16  # 14 pieces a row: the long texts below are many rows long
EXPORTED = "bert_tagger"  # conftest.tagger_export's, shared with tests/tools/test_predict_tool.py
IN_PROCESS = ["roberta_tagger", "albert_tagger"]
NAMES = [EXPORTED, *IN_PROCESS]
# Words that each tokenizer gives back as they are, joined by single spaces (no "LORD'S").
WORDS = ("In the beginning God created the heaven and the earth . Jesus wept in Bethany , "
         "Judea Café naïve résumé ! supercalifragilistic").split(" ")
GIANT = "supercalifragilisticexpialidocious" * 2  # more pieces than a row, in every family
LONG = " ".join(WORDS * 4)
MIXED = " ".join(WORDS[:12] + [GIANT] + WORDS * 2 + [GIANT])
BATCH = [LONG, "", "   ", "Amen", GIANT, MIXED]
TOO_LONG = "word " * 1000  # more than the default 64 rows of 14 pieces


# Pre-split words as CoNLL files hold them ("Mr.", "Bumble's": one word each), a long
# sentence, a word of control characters only (no pieces: no tag), and none.
GIVEN_WORDS = [["Mr.", "Bumble's", "letter", "went", "to", "Jerusalem", "."],
               WORDS * 4, ["\x07", "Paul", "wept"], []]


def _padded(words):
    width = max(len(w) for w in words)
    return np.array([w + [""] * (width - len(w)) for w in words], object)


# What a request answered: its outputs ({name: numpy}, None if refused) and, if refused,
# {runtime: error}: "tf1" and "tf2" (the loaders of the served export) or "in_process".
Answer = collections.namedtuple("Answer", "outputs errors")


def _requests():
    """[(signature, {input: numpy})]: the requests every family answers, in this order."""
    requests = [("serving_default", {"text": np.array(t, object)})
                for t in (BATCH, [], ["Amen", TOO_LONG], ["Jesus wept"])]
    requests.append(("tag_words", {"words": _padded(GIVEN_WORDS)}))
    requests.append(("tag_words", {"words": np.array(["a", "b"], object)}))
    return requests


def _served_answer(result):
    """The Answer of a request served by the client (both loaders agreeing if answered)."""
    if "tf1" in result or "tf2" in result:
        return Answer(_outputs(result), {})
    return Answer(None, {runtime: result.get(f"{runtime}_error", "") for runtime in ("tf1", "tf2")})


def _in_process_answers(model):
    """The Answers of `_requests()` by the serving functions an export of `model` traces,
    run in this process."""
    tokenizer = model.preprocessor.tokenizer
    info = dict(task="tagging", labels=model.labels, seq_length=SEQ,
                lower_case=tokenizer.lower_case, text_fields=["text"])
    fns = export.serving_functions(model, tokenizer, info)
    answers = []
    for signature, inputs in _requests():
        inputs = {k: tf.constant(v, tf.string) for k, v in inputs.items()}
        try:
            out = (fns.serve(inputs["text"]) if signature == "serving_default"
                   else fns.serve_extra(signature, inputs))
            answers.append(Answer({k: v.numpy() for k, v in out.items()}, {}))
        except tf.errors.InvalidArgumentError as e:
            answers.append(Answer(None, {"in_process": f"{type(e).__name__}: {e}"}))
    return answers


@pytest.fixture(scope="module")
def served(tmp_path_factory, tagger_export):
    """{name: (model, [Answer of each of `_requests()`])}: EXPORTED's export
    (conftest.tagger_export: `bk.export_model` at SEQ tokens a row, op audit) served by the
    client, its warmup requests each answered; IN_PROCESS's serving functions in this
    process."""
    assert SEQ == 16  # tagger_export's rows
    model, path = tagger_export(EXPORTED)
    assert model.preprocessor.seq_length == SEQ and list(model.preprocessor.text_fields) == [
        "text"]
    requests = [[signature, {k: _enc(v) for k, v in inputs.items()}]
                for signature, inputs in _requests()]
    report = run_client(tmp_path_factory.mktemp("tagging_client"), [path], {path: requests})
    results = report["exports"][path]
    for r in results:
        if r["warmup"]:
            _outputs(r)
    served = {EXPORTED: (model, [_served_answer(r) for r in results if not r["warmup"]])}
    for name in IN_PROCESS:
        model = bk.BertTokenClassifier.from_pretrained(str(FAMILIES / name), seq_length=SEQ)
        served[name] = model, _in_process_answers(model)
    return served


def _words(out, b):
    valid = out["tag_ids"][b] >= 0
    assert not (out["tag_ids"][b][valid.sum():] >= 0).any()  # words first, then padding
    return [w.decode() for w in out["tokens"][b][valid]], valid


@pytest.mark.parametrize("name", NAMES)
def test_long_texts_are_tagged_whole_as_predict_on_words(served, name):
    model, answers = served[name]
    out = answers[0].outputs
    tokenizer = model.preprocessor.tokenizer
    pieces = tokenizer.tokenize(tf.constant([LONG, GIANT])).row_lengths().numpy()
    assert pieces[0] > 8 * (SEQ - 2) and pieces[1] > SEQ - 2  # many rows; a word past a row
    nonblank = [b for b, text in enumerate(BATCH) if text.strip()]  # one predict for all
    predicted = dict(zip(nonblank, model.predict([_words(out, b)[0] for b in nonblank])))
    for b, text in enumerate(BATCH):
        words, valid = _words(out, b)
        if not text.strip():
            continue
        assert " ".join(words) == text  # every word, in order, none dropped
        starts, ends = out["token_starts"][b][valid], out["token_ends"][b][valid]
        assert [text[s:e] for s, e in zip(starts, ends)] == words  # character offsets
        logits = predicted[b].numpy()
        probs = tf.nn.softmax(logits).numpy()
        np.testing.assert_allclose(out["tag_scores"][b][valid], probs.max(-1), atol=1e-5)
        clear = np.sort(probs, -1)[:, -1] - np.sort(probs, -1)[:, -2] > 1e-4
        got = out["tag_ids"][b][valid]
        np.testing.assert_array_equal(got[clear], probs.argmax(-1)[clear])
        assert [t.decode() for t in out["tags"][b][valid]] == [model.labels[i] for i in got]


def test_blank_texts_and_an_empty_batch(served):
    for name, (model, answers) in served.items():
        out = answers[0].outputs
        assert _words(out, 1)[0] == []  # ""
        blank, _ = _words(out, 2)  # "   ": RoBERTa's whitespace word, an empty word elsewhere
        assert all(not w.strip() for w in blank)
        assert _words(out, 4)[0] == [GIANT]
        empty = answers[1].outputs
        for key, value in empty.items():
            assert value.shape[0] == 0, (name, key, value.shape)


def test_a_text_over_max_windows_is_refused_and_the_next_request_answered(served):
    for name, (model, answers) in served.items():
        refused, following = answers[2:4]
        assert refused.outputs is None and refused.errors, (name, refused)
        for error in refused.errors.values():  # each loader's, or this process's
            assert "InvalidArgument" in error and "max_windows=64" in error, (name, refused)
        out = following.outputs
        assert _words(out, 0)[0] == ["Jesus", "wept"]


def test_max_windows_is_an_export_option():
    model = bk.BertTokenClassifier.from_pretrained(str(FAMILIES / "bert_tagger"), seq_length=SEQ)
    tokenizer = model.preprocessor.tokenizer
    info = dict(task="tagging", labels=model.labels, seq_length=SEQ, text_fields=["text"])
    fns = ServingFunctions(model, tokenizer, info, options=WindowOptions(max_windows=3))
    three, four = "word " * 42, "word " * 43  # 14 pieces a row
    cut = tagging_serving.cut_rows(fns, tf.constant([three, four]), 3)
    assert cut.count.numpy().tolist() == [3, 4]
    assert fns.task.export_metadata(fns) == {"max_windows": 3}

    def serve(texts):  # eagerly: the graph's refusal is the served export's (max_windows=64)
        return {k: v.numpy() for k, v in fns.serve(tf.constant(texts)).items()}

    assert _words(serve([three]), 0)[0] == ["word"] * 42
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_windows=3 rows"):
        serve([three, four])
    # The warmup requests' long text runs the cutting within the limit.
    longest = fns.task.warmup_longest(fns, "text", EXAMPLES["text"][0])
    rows = tagging_serving.cut_rows(fns, tf.constant([longest]), 3).count.numpy()[0]
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


@pytest.mark.parametrize("name", NAMES)
def test_given_words_are_tagged_as_predict_on_words(served, name):
    model, answers = served[name]
    out = answers[4].outputs
    logits = model.predict(GIVEN_WORDS)
    for b, words in enumerate(GIVEN_WORDS):
        n = len(words)
        assert [w.decode() for w in out["tokens"][b][:n]] == words
        assert (out["token_starts"][b][n:] == -1).all()
        probs = tf.nn.softmax(logits[b]).numpy()  # (words, tags); NaN: a word with no piece
        tagged = np.isfinite(probs).all(-1)
        assert (out["tag_ids"][b][:n][~tagged] == -1).all()
        np.testing.assert_allclose(out["tag_scores"][b][:n][tagged], probs[tagged].max(-1),
                                   atol=1e-5)
        np.testing.assert_array_equal(out["tag_ids"][b][:n][tagged], probs[tagged].argmax(-1))
    if name == "bert_tagger":  # WordPiece drops control characters: "\x07" has no piece
        assert out["tag_ids"][2][0] == -1 and out["tags"][2][0] == b""
    # A rank-1 words input is refused, naming it (TF1's loader refuses its feed by shape).
    refused = answers[5]
    errors = [e for runtime, e in refused.errors.items() if runtime != "tf1"]
    assert refused.outputs is None and errors, refused
    assert all("words must be a rank-2 string tensor" in e for e in errors), refused


def test_served_entities_are_the_chunks_of_the_served_tags(served):
    for name, (model, answers) in served.items():
        for out in (answers[0].outputs, answers[4].outputs):
            for b in range(out["tags"].shape[0]):
                valid = out["token_starts"][b] >= 0
                tags = [t.decode() or "O" for t in out["tags"][b][valid]]
                starts, ends = out["token_starts"][b][valid], out["token_ends"][b][valid]
                want = [(kind, starts[i], ends[j]) for kind, i, j in get_entities(tags)]
                got = [(t.decode(), s, e) for t, s, e in zip(
                    out["entity_types"][b], out["entity_starts"][b], out["entity_ends"][b])
                    if s >= 0]
                assert got == want, (name, b)


class _Labels:
    """What `tagging_serving._entities` reads of the serving functions."""

    def __init__(self, labels):
        self.labels = labels


@pytest.mark.parametrize("labels", [
    ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],  # IOB2
    ["O", "I-PER", "I-LOC", "B-LOC"],  # IOB1
    ["O", "B-X", "I-X", "E-X", "S-X", "S-Y", "E-Y"],  # IOBES
    ["PER", "LOC", "O"],  # no prefixes
])
def test_entity_chunks_equal_seqeval_on_every_tag_sequence(labels):
    """Every sequence of up to 4 tags (brute force), and texts side by side in one batch:
    the in-graph chunks are `get_entities`' (seqeval's) chunks."""
    import itertools

    sequences = [list(s) for n in range(5) for s in itertools.product(range(len(labels)), repeat=n)]
    sequences = sequences[:600] + [[-1, 0, -1]]  # -1: a word with no tag ("O")
    words = [" ".join("w" * len(s)) for s in sequences]  # word k at character 2k
    tag_ids = np.concatenate([np.array(s, np.int32) for s in sequences])
    word_text = np.repeat(np.arange(len(sequences)), [len(s) for s in sequences]).astype(np.int32)
    position = np.concatenate([np.arange(len(s)) for s in sequences]).astype(np.int32)
    tagged = tagging_serving.Tagged(word_text, 2 * position, 2 * position + 1, None, tag_ids,
                                    np.linspace(0.1, 0.9, len(tag_ids)).astype(np.float32))
    out = tagging_serving._entities(_Labels(labels), tf.constant(words), tagged,
                                    len(sequences))
    for b, seq in enumerate(sequences):
        tags = [labels[i] if i >= 0 else "O" for i in seq]
        want = [(kind, 2 * i, 2 * j + 1) for kind, i, j in get_entities(tags)] if seq else []
        got = [(t.decode(), s, e) for t, s, e in zip(out["entity_types"][b].numpy(),
               out["entity_starts"][b].numpy(), out["entity_ends"][b].numpy()) if s >= 0]
        assert got == want, (tags, got, want)
