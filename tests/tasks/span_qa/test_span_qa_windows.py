"""Served span QA reads a whole context: the export cuts it into windows in the graph and
answers over all of them, as `BertSpanQA.answer()` (and tools/finetune.py) do; checked for
every family's QA fixture through the export's serving function in this process, and for one
per tokenizer kind (each with other export options) served in a process without the
project."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

import bert_keras as bk
from bert_keras.errors import InputError
from bert_keras.serving.export import export_saved_model, read_metadata, serving_functions
from bert_keras.serving.warmup import WARMUP_FILE
from bert_keras.tasks.span_qa import answer_inputs
from bert_keras.tasks.span_qa import featurizer as spans
from bert_keras.tasks.span_qa import windows as span_windows
from bert_keras.tasks.span_qa.reader import SpanExample

from export_harness import _enc, _outputs, run_client

FAMILIES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "families"

SEQ = 32
STORY = ("In the beginning, God created the heavens and the earth. The earth was formless and "
         "empty. Darkness was on the surface of the deep and God's Spirit was hovering over the "
         "surface of the waters. God said, Let there be light, and there was light. Café naïve "
         "résumé 🙂 Jesus wept. ")
# Short and long contexts in one batch (the long ones many 32-token windows), an empty one.
QUESTIONS = ["Who wept?", "What was empty?", "Who created the earth?", "", "What is naïve?"]
CONTEXTS = [STORY * 3, "Jesus wept.", STORY[:200], "", "Café naïve résumé! It is a word."]
NAMES = ["bert_qa", "roberta_qa", "albert_qa", "distilbert_qa", "electra_qa"]


def _export(model, base, name, **kwargs):
    pre = model.preprocessor
    info = dict(dict(task="span_qa", labels=None, seq_length=pre.seq_length,
                     lower_case=pre.tokenizer.lower_case, text_fields=["question", "context"]),
                **kwargs.pop("info", {}))
    return export_saved_model(model, pre.tokenizer, info, base, name, **kwargs)


def _check(served, want):
    assert [a.decode() for a in served["answer"]] == [a["text"] for a in want]
    assert served["answer_start"].tolist() == [a["start_char"] for a in want]
    assert served["answer_end"].tolist() == [a["end_char"] for a in want]
    found = [a["start_char"] >= 0 for a in want]
    np.testing.assert_allclose(served["score"][found], [a["score"] for a in want if a["text"]],
                               atol=1e-4)
    np.testing.assert_allclose(served["no_answer_score"], [a["null_score"] for a in want],
                               atol=1e-4)


def test_windows_are_the_featurizers():
    for num_tokens in (0, 1, 5, 9, 10, 11, 40):
        for room, stride in ((4, 3), (4, 8), (9, 2)):
            w = span_windows.windows(tf.constant([num_tokens]), tf.constant([room]), stride)
            want = spans._windows(num_tokens, room, stride)
            assert list(zip(w.start.numpy().tolist(), w.length.numpy().tolist())) == want
            first = tf.fill(tf.shape(w.start), 1)
            flags = span_windows.max_context(w, first, room + 2).numpy()
            for n, (start, length) in enumerate(want):
                expect = [spans._max_context(want, n, start + t) for t in range(length)]
                assert flags[n, 1:1 + length].tolist() == expect
                assert not flags[n, 0] and not flags[n, 1 + length:].any()


# Served by SavedModels, in one process without the project: one per tokenizer kind, each
# with other export options; every family through the same serving function in this process.
SERVED_DEFAULT, STRIDE_8, BOUNDED = "roberta_qa", "albert_qa", "bert_qa"
SHORT = [1, 3, 4]  # the contexts of one 32-token window


def _request(indices):
    return {"question": _enc(np.array([QUESTIONS[i] for i in indices], object)),
            "context": _enc(np.array([CONTEXTS[i] for i in indices], object))}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """{name: (model, version dir, served results)}: roberta_qa exported with the defaults,
    albert_qa with doc_stride=8, bert_qa bounded to 3 windows a context and decoding as SQuAD
    2.0 was trained (task.json's decoding); served in one process without the project."""
    tmp = tmp_path_factory.mktemp("span_exports")
    made, requests = {}, {}
    for name, options in ((SERVED_DEFAULT, {}), (STRIDE_8, dict(doc_stride=8)),
                          (BOUNDED, dict(max_windows=3, info=dict(decoding=dict(
                              allow_no_answer=True, null_score_diff_threshold=-0.1))))):
        model = bk.BertSpanQA.from_pretrained(str(FAMILIES / name), seq_length=SEQ)
        made[name] = model, _export(model, tmp / "exports", name, **options)
    requests = {made[name][1]: [["serving_default", _request(range(len(QUESTIONS)))]]
                for name in (SERVED_DEFAULT, STRIDE_8)}
    requests[made[BOUNDED][1]] = [
        ["serving_default", _request([0])],  # 13 windows of 32 tokens: refused
        ["serving_default", _request(SHORT)]]
    report = run_client(tmp, [path for _, path in made.values()], requests)
    return {name: (model, path, report["exports"][path]) for name, (model, path) in made.items()}


@pytest.mark.parametrize("name", NAMES)
def test_answers_are_answer_over_every_window(name):
    """The export's serving function, run in this process, answers as `answer()` does."""
    model = bk.BertSpanQA.from_pretrained(str(FAMILIES / name), seq_length=SEQ)
    pre = model.preprocessor
    info = dict(task="span_qa", labels=None, seq_length=SEQ, lower_case=pre.tokenizer.lower_case,
                text_fields=["question", "context"])
    functions = serving_functions(model, pre.tokenizer, info)
    assert functions.task.export_metadata(functions)["decoding"]["doc_stride"] == 128
    out = functions.serve(tf.constant(QUESTIONS), tf.constant(CONTEXTS))
    _check({k: v.numpy() for k, v in out.items()}, model.answer((QUESTIONS, CONTEXTS)))


def test_served_answers_are_answer_over_every_window(served):
    model, path, results = served[SERVED_DEFAULT]
    assert all("tf2" in r for r in results), [r for r in results if "tf2" not in r]
    _check(_outputs(results[-1]), model.answer((QUESTIONS, CONTEXTS)))
    assert read_metadata(path)["decoding"]["doc_stride"] == 128
    assert sum(r["warmup"] for r in results) >= 3


def test_served_answers_over_windows_of_another_stride(served):
    """--doc_stride=8: the served windows are the featurizer's windows of that stride."""
    model, path, results = served[STRIDE_8]
    assert read_metadata(path)["decoding"]["doc_stride"] == 8
    examples = [SpanExample(str(i), q, c, []) for i, (q, c) in enumerate(zip(QUESTIONS,
                                                                             CONTEXTS))]
    rows = spans.span_features(examples, model.preprocessor.tokenizer, SEQ, 8, SEQ // 2)
    want = answer_inputs.best_answers(model, rows, CONTEXTS)
    assert all("tf2" in r for r in results), [r for r in results if "tf2" not in r]
    _check(_outputs(results[-1]), want)
    # (another answer than stride 128's, or the stride would go untested)
    assert want != model.answer((QUESTIONS, CONTEXTS))


def test_a_bound_on_the_windows_and_squad_2_decoding_are_served(served):
    model, _, results = served[BOUNDED]
    want_v2 = model.answer(([QUESTIONS[i] for i in SHORT], [CONTEXTS[i] for i in SHORT]),
                           allow_no_answer=True, null_score_diff_threshold=-0.1)
    refused, answered = [r for r in results if not r["warmup"]]
    for loader in ("tf1_error", "tf2_error"):
        assert "InvalidArgumentError" in refused[loader]
        assert "max_windows=3" in refused[loader], refused[loader]
    _check(_outputs(answered), want_v2)
    assert "" in [a["text"] for a in want_v2]  # the no-answer rule decided one of them


def test_a_long_context_is_among_the_warmup_requests(served):
    model, path, _ = served[STRIDE_8]
    contexts = []
    for record in tf.data.TFRecordDataset(str(pathlib.Path(path) / WARMUP_FILE)):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        inputs = log.predict_log.request.inputs
        if "context" in inputs:
            contexts += tf.make_ndarray(inputs["context"]).tolist()
    tokens = model.preprocessor.tokenizer.tokenize(tf.constant(contexts)).row_lengths()
    # After a question of max_query_length (16) tokens, 13 context tokens fit a row.
    assert len(spans._windows(int(max(tokens)), 13, 8)) == 4


@pytest.mark.parametrize("seq_length", [5, 6])
def test_a_seq_length_with_no_room_for_the_context_is_refused(tmp_path, seq_length):
    model = bk.BertSpanQA.from_pretrained(str(FAMILIES / "albert_qa"), seq_length=32)
    with pytest.raises(InputError, match=f"--seq_length={seq_length} leaves no room"):
        _export(model, tmp_path, "qa", info=dict(seq_length=seq_length))
    assert not (tmp_path / "qa").exists()
