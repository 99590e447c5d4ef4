"""Fine-tuned transformers checkpoints of the five families reach TF Serving: a
`*ForSequenceClassification`, `*ForTokenClassification` or `*ForQuestionAnswering` directory
exports with `tools/export.py --task_dir=DIR` and default flags, and the SavedModel, loaded
in a process without this project, answers what transformers makes of the same checkpoint:
tagging words, char offsets, tags and tag probabilities, QA spans and scores, class
probabilities (fixtures and answers: tests/make_family_references.py tasks / classifiers)."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import bert_keras as bk
from bert_keras.serving import export
from bert_keras.tasks import task_io
from export_harness import _enc, _outputs, run_client

ROOT = pathlib.Path(__file__).resolve().parents[1]
FAMILIES = ROOT / "tests" / "fixtures" / "families"
NAMES = ["bert", "roberta", "albert", "distilbert", "electra"]
CLASSIFIERS = ["roberta", "albert", "distilbert", "electra"]  # BERT's: test_checkpoints
SINGLES = json.loads((FAMILIES / "texts.json").read_text(encoding="utf-8"))["singles"]


def answers(name):
    return json.loads((FAMILIES / name / "answers.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name,task", [("roberta_tagger", "tagging"), ("albert_qa", "span_qa"),
                                       ("electra_classifier", "classification")])
def test_the_task_type_comes_from_the_checkpoint(name, task):
    model, tokenizer, info = task_io.load_task(str(FAMILIES / name))
    assert info["task"] == task
    if task == "tagging":
        assert info["labels"] == ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def test_a_head_that_is_not_exported_is_one_line(tmp_path):
    directory = tmp_path / "mlm"
    directory.mkdir()
    for source in (FAMILIES / "roberta").iterdir():
        (directory / source.name).write_bytes(source.read_bytes())
    result = subprocess.run([sys.executable, "tools/export.py", f"--task_dir={directory}",
                             f"--export_dir_base={tmp_path / 'saved'}"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "RobertaForMaskedLM" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "saved").exists() or not any((tmp_path / "saved").rglob("*.pb"))


@pytest.mark.slow
def test_exports_answer_as_transformers_in_a_process_without_this_project(tmp_path):
    """15 checkpoints (5 families x tagger / QA, 4 classifiers), exported float32 with the
    tool's defaults, served by the TF1 and TF2 loaders in `python -I -S`."""
    names = ([f"{n}_tagger" for n in NAMES] + [f"{n}_qa" for n in NAMES]
             + [f"{n}_classifier" for n in CLASSIFIERS])
    # One through the tool itself, the rest through the same library call in this process.
    tool = subprocess.run([sys.executable, "tools/export.py", f"--task_dir={FAMILIES / names[1]}",
                           "--seq_length=128", f"--export_dir_base={tmp_path / 'saved'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert tool.returncode == 0, tool.stderr[-3000:]
    paths = {names[1]: tool.stdout.splitlines()[0]}
    for name in names:
        paths.setdefault(name, export.run_export(bk.ExportConfig(
            task_dir=str(FAMILIES / name), seq_length=128,
            export_dir_base=str(tmp_path / "saved"))))
    requests = {}
    for name, path in paths.items():
        if name.endswith("_tagger"):
            inputs = {"text": _enc(np.array([a["text"] for a in answers(name)], object))}
        elif name.endswith("_qa"):
            inputs = {key: _enc(np.array([a[key] for a in answers(name)], object))
                      for key in ("question", "context")}
        else:
            inputs = {"text": _enc(np.array(SINGLES, object))}
        requests[path] = [["serving_default", inputs]]
    report = run_client(tmp_path, list(paths.values()), requests)
    for name, path in paths.items():
        assert export.read_metadata(path)["dtype"] == "float32"
        (result,) = [r for r in report["exports"][path] if not r["warmup"]]
        out = _outputs(result)
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
            np.testing.assert_allclose(out["probabilities"], probabilities, atol=1e-4,
                                       err_msg=name)
