"""Fine-tuned transformers checkpoints of the eight families reach TF Serving: a
`*ForSequenceClassification`, `*ForTokenClassification` or `*ForQuestionAnswering` directory
exports with `tools/export.py --task_dir=DIR` and default flags, and answers what
transformers makes of the same checkpoint: tagging words, char offsets, tags and tag
probabilities, QA spans and scores, class probabilities (fixtures and answers:
tests/fixtures/make_family_references.py tasks / classifiers, make_xlm_roberta_references.py,
make_modernbert_references.py, make_deberta_references.py). Of the 23 checkpoints, one per
task type and tokenizer kind as SavedModels loaded in a process without this project, the
others through the export's serving function in this process."""

import gzip
import json
import pathlib
import sys

import numpy as np
import pytest

import bert_keras as bk
from bert_keras.serving import export
from bert_keras.tasks import registry

import tool_runner  # tests/support: tools forked without their imports
from export_harness import _enc, _outputs, run_client

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAMILIES = ROOT / "tests" / "fixtures" / "families"
NAMES = ["bert", "roberta", "albert", "distilbert", "electra", "xlm_roberta", "modernbert",
         "deberta_v3"]
# BERT's classifier: test_checkpoints
CLASSIFIERS = ["roberta", "albert", "distilbert", "electra", "xlm_roberta", "modernbert",
               "deberta_v3"]
SINGLES = json.loads((FAMILIES / "texts.json").read_text(encoding="utf-8"))["singles"]


def answers(name):
    return json.loads((FAMILIES / name / "answers.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name,task", [("roberta_tagger", "tagging"), ("albert_qa", "span_qa"),
                                       ("electra_classifier", "classification")])
def test_the_task_type_comes_from_the_checkpoint(name, task):
    model, tokenizer, info = registry.load_task(str(FAMILIES / name))
    assert info["task"] == task
    if task == "tagging":
        assert info["labels"] == ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def test_fine_tuning_keeps_a_fine_tuned_head_only_when_the_tags_agree():
    """--init_checkpoint=<a *ForTokenClassification dir>: its head when the run's tags are
    the checkpoint's id2label, in order; a new head otherwise."""
    from bert_keras.data.finetuning.label_map import LabelMap
    from bert_keras.tasks.registry import get_task

    path = str(FAMILIES / "electra_tagger")
    task = get_task("tagging")
    same = task.build_model(bk.BertEncoder.from_pretrained(path),
                            LabelMap(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]), checkpoint=path)
    other = task.build_model(bk.BertEncoder.from_pretrained(path),
                             LabelMap(["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]), checkpoint=path)
    model, _, _ = registry.load_task(path)
    want = model.token_classification_head.get_weights()
    for got, expected in zip(same.token_classification_head.get_weights(), want):
        np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(other.token_classification_head.get_weights()[0], want[0])


def test_a_head_that_is_not_exported_is_one_line(tmp_path):
    directory = tmp_path / "mlm"
    directory.mkdir()
    for source in (FAMILIES / "roberta").iterdir():
        (directory / source.name).write_bytes(source.read_bytes())
    result = tool_runner.run([sys.executable, "tools/export.py", f"--task_dir={directory}",
                              f"--export_dir_base={tmp_path / 'saved'}"], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "RobertaForMaskedLM" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "saved").exists() or not any((tmp_path / "saved").rglob("*.pb"))


TASK_CHECKPOINTS = ([f"{n}_tagger" for n in NAMES] + [f"{n}_qa" for n in NAMES]
                    + [f"{n}_classifier" for n in CLASSIFIERS])
# One per task type and tokenizer kind, exported and served in a process without this project.
SERVED = ["roberta_tagger", "albert_qa", "electra_classifier"]


def request(name):
    """The serving_default inputs (numpy strings) that answers.json was made from."""
    if name.endswith("_tagger"):
        return {"text": np.array([a["text"] for a in answers(name)], object)}
    if name.endswith("_qa"):
        return {key: np.array([a[key] for a in answers(name)], object)
                for key in ("question", "context")}
    return {"text": np.array(SINGLES, object)}


def assert_answers_as_transformers(name, out):
    """`out` (serving_default's outputs as numpy) is what transformers makes of checkpoint
    `name`: tagging words, char offsets, tags and scores; QA spans and scores; probabilities."""
    if name.endswith("_tagger"):
        for i, want in enumerate(answers(name)):
            n = len(want["tokens"])
            assert [t.decode() for t in out["tokens"][i][:n]] == want["tokens"], name
            assert all(t == b"" for t in out["tokens"][i][n:]), name
            assert [t.decode() for t in out["tags"][i][:n]] == want["tags"], name
            for key in ("token_starts", "token_ends"):
                assert out[key][i][:n].tolist() == want[key], (name, key, want["text"])
            np.testing.assert_allclose(out["tag_scores"][i][:n], want["tag_scores"],
                                       atol=1e-4, err_msg=name)
    elif name.endswith("_qa"):
        for i, want in enumerate(answers(name)):
            assert out["answer"][i].decode() == want["answer"], (name, want["question"])
            assert (out["answer_start"][i], out["answer_end"][i]) == (
                want["answer_start"], want["answer_end"]), name
            np.testing.assert_allclose(out["score"][i], want["score"], atol=1e-4)
    else:
        logits = np.load(FAMILIES / name / "reference.npz")["singles_logits"]
        probabilities = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        np.testing.assert_allclose(out["probabilities"], probabilities, atol=1e-4, err_msg=name)


@pytest.mark.slow
def test_every_fine_tuned_checkpoint_answers_as_transformers():
    """23 checkpoints (8 families x tagger / QA, 7 classifiers), loaded as tools/export.py
    loads them: the export's serving_default computation (float32), run in this process; the
    SERVED three through their SavedModels (the next test), not again here."""
    import tensorflow as tf

    for name in (name for name in TASK_CHECKPOINTS if name not in SERVED):
        model, tokenizer, info = registry.load_task(str(FAMILIES / name))
        info = dict(info, seq_length=64)  # the fixtures' position table
        functions = export.serving_functions(model, tokenizer, info)
        inputs = request(name)
        out = functions.serve(*(tf.constant(list(inputs[field]))
                                for field in functions.text_fields))
        assert_answers_as_transformers(name, {k: v.numpy() for k, v in out.items()})


@pytest.mark.slow
def test_exports_answer_as_transformers_in_a_process_without_this_project(tmp_path):
    """One checkpoint per task type and tokenizer kind (byte-level BPE tagging, SentencePiece
    QA, WordPiece classification), exported float32 with the tool's defaults, served by the
    TF1 and TF2 loaders in `python -I -S`."""
    names = SERVED
    # One through the tool itself, the rest through the same library call in this process.
    tool = tool_runner.run([sys.executable, "tools/export.py", f"--task_dir={FAMILIES / names[0]}",
                            "--seq_length=64", f"--export_dir_base={tmp_path / 'saved'}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert tool.returncode == 0, tool.stderr[-3000:]
    paths = {names[0]: tool.stdout.splitlines()[0]}
    for name in names[1:]:
        paths[name] = export.run_export(bk.ExportConfig(
            task_dir=str(FAMILIES / name), seq_length=64,  # the fixtures' position table
            export_dir_base=str(tmp_path / "saved")))
    requests = {path: [["serving_default", {key: _enc(value) for key, value in
                                            request(name).items()}]]
                for name, path in paths.items()}
    report = run_client(tmp_path, list(paths.values()), requests)
    for name, path in paths.items():
        assert export.read_metadata(path)["dtype"] == "float32"
        (result,) = [r for r in report["exports"][path] if not r["warmup"]]
        assert_answers_as_transformers(name, _outputs(result))


@pytest.mark.slow
@pytest.mark.parametrize("task,family", [("tagging", "roberta"), ("span_qa", "albert")])
def test_family_fine_tunes_tagging_and_span_qa_and_serves_them(tmp_path, family, task):
    """tools/finetune.py -> tools/export.py with the byte-level BPE and SentencePiece
    families (the WordPiece ones run BERT's paths), one task each (every family's served
    tagging and QA is checked in tests/tasks/tagging/ and span_qa/): the export's words are
    the tokenizer's, its character spans index the request text, and where the tokenizer's
    words are the CoNLL words the served tags are the tool's own eval predictions."""
    flagfile = {"tagging": "finetune_bible_ner", "span_qa": "finetune_wordnet_qa"}[task]
    run = lambda *args: tool_runner.run(  # noqa: E731
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    windows = ["--max_query_length=16", "--doc_stride=16"] if task == "span_qa" else []
    result = run("tools/finetune.py", f"--flagfile=flags/{flagfile}.flags",
                 f"--init_checkpoint={FAMILIES / family}", f"--output_dir={tmp_path / 'run'}",
                 "--max_train_examples=48", "--max_eval_examples=16", "--num_train_epochs=1",
                 "--max_seq_length=48", *windows, "--learning_rate=1e-3", "--verbose=0",
                 "--test_file=")  # the flagfile's test set: predictions this test never reads
    assert result.returncode == 0, result.stderr[-3000:]
    result = run("tools/export.py", f"--task_dir={tmp_path / 'run' / 'best'}",
                 f"--export_dir_base={tmp_path / 'saved'}")
    assert result.returncode == 0, result.stderr[-3000:]
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer ops of the SavedModel)

    serve = tf.saved_model.load(result.stdout.splitlines()[0]).signatures["serving_default"]
    rows = [json.loads(line) for line in
            (tmp_path / "run" / "eval_predictions.jsonl").read_text().splitlines()]
    if task == "tagging":
        texts = [" ".join(r["words"]) for r in rows]
        out = serve(text=tf.constant(texts))
        same_words = 0
        for i, (text, row) in enumerate(zip(texts, rows)):
            tokens = [t.decode() for t in out["tokens"][i].numpy() if t]
            starts, ends = out["token_starts"][i].numpy(), out["token_ends"][i].numpy()
            assert tokens and all(text[s:e] == t for t, s, e in zip(tokens, starts, ends))
            if tokens == row["words"]:
                same_words += 1
                assert [t.decode() for t in out["tags"][i].numpy()[:len(tokens)]] == \
                    row["predictions"], text
        assert same_words >= 1
    else:
        questions = [r["question"] for r in rows]
        with gzip.open(ROOT / "bert_keras" / "assets" / "wordnet_qa.dev.jsonl.gz", "rt") as f:
            contexts = [json.loads(line)["context"] for line, _ in zip(f, range(len(rows)))]
        out = serve(question=tf.constant(questions), context=tf.constant(contexts))
        for i, context in enumerate(contexts):
            answer, start, end = (out[k][i].numpy() for k in ("answer", "answer_start",
                                                               "answer_end"))
            assert start >= 0 and context[start:end] == answer.decode(), (context, answer)


@pytest.mark.parametrize("seq_length,words", [(5, "at least 6 tokens"),
                                              (100000, "position table (64 positions)")])
def test_seq_length_is_refused_not_clamped(tmp_path, seq_length, words):
    """RoBERTa packs question and context as <s> q </s></s> c </s>: 6 tokens at least; and
    no row may be longer than the position table."""
    result = tool_runner.run([sys.executable, "tools/export.py",
                              f"--task_dir={FAMILIES / 'roberta_qa'}", f"--seq_length={seq_length}",
                              f"--export_dir_base={tmp_path / 'saved'}"], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    assert result.returncode == 1 and words in result.stderr, result.stderr[-2000:]
    assert f"--seq_length={seq_length}" in result.stderr and "Traceback" not in result.stderr
    assert not any((tmp_path / "saved").rglob("saved_model.pb"))


def test_pair_classifiers_serve_pairs_as_transformers(tmp_path):
    """--pairs: text_a + text_b in, transformers' pair probabilities out (ALBERT, RoBERTa and
    XLM-R packed without token types, as transformers 5's tokenizers send none). ALBERT's
    through a SavedModel the tool's way; RoBERTa's and XLM-R's through the same serving
    functions in this process (the SavedModel adds nothing per family)."""
    import tensorflow as tf

    pairs = json.loads((FAMILIES / "texts.json").read_text(encoding="utf-8"))["pairs"]
    text_a, text_b = tf.constant([a for a, _ in pairs]), tf.constant([b for _, b in pairs])

    def assert_pair_probabilities(name, out):
        logits = np.load(FAMILIES / name / "reference.npz")["pairs_logits"]
        probabilities = np.exp(logits - logits.max(-1, keepdims=True))
        np.testing.assert_allclose(out["probabilities"].numpy(),
                                   probabilities / probabilities.sum(-1, keepdims=True),
                                   atol=1e-4, err_msg=name)

    path = export.run_export(bk.ExportConfig(
        task_dir=str(FAMILIES / "albert_classifier"), seq_length=64, pairs=True,
        export_dir_base=str(tmp_path)))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    assert_pair_probabilities("albert_classifier", serve(text_a=text_a, text_b=text_b))
    for name in ("roberta_classifier", "xlm_roberta_classifier"):
        model, tokenizer, info = registry.load_task(str(FAMILIES / name))
        info = dict(info, seq_length=64, text_fields=["text_a", "text_b"])
        functions = export.serving_functions(model, tokenizer, info)
        assert list(functions.text_fields) == ["text_a", "text_b"]
        assert_pair_probabilities(name, functions.serve(text_a, text_b))


def test_pairs_are_refused_for_a_model_that_takes_none(tmp_path):
    with pytest.raises(bk.InputError, match="--pairs"):
        export.run_export(bk.ExportConfig(task_dir=str(FAMILIES / "bert_tagger"), pairs=True,
                                          export_dir_base=str(tmp_path)))
