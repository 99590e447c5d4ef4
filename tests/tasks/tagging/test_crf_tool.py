"""tools/finetune.py --task=tagging --crf: the run trains a CRF tagger, keeps it in its task
directory and predicts its Viterbi path; training tags that --crf_constraints forbid, and
constraints without --crf, are refused in one line."""

import json
import os
import pathlib
import sys

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "finetune.py"
DATA = ROOT / "bert_keras" / "assets"
CHECKPOINT = ROOT / "tests" / "fixtures" / "families" / "bert_tagger"


def run_tool(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    return tool_runner.run([sys.executable, str(TOOL), *args], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)


def _common(out):
    return [f"--init_checkpoint={CHECKPOINT}", f"--output_dir={out}", "--task=tagging",
            "--max_seq_length=32", "--train_batch_size=16", "--eval_batch_size=16",
            "--num_train_epochs=1", "--learning_rate=1e-3", "--verbose=0"]


def test_a_crf_run_keeps_its_crf_and_predicts_its_viterbi_path(tmp_path):
    import bert_keras as bk

    out = tmp_path / "run"
    result = run_tool(*_common(out), "--crf", "--crf_constraints=bio",
                      f"--train_file={DATA / 'bible_ner.train.conll.gz'}",
                      f"--eval_file={DATA / 'bible_ner.dev.conll.gz'}",
                      "--max_train_examples=32", "--max_eval_examples=12")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((out / "flags.json").read_text())["crf"] is True
    tagger = bk.BertTokenClassifier.from_pretrained(str(out / "best"))
    assert (tagger.crf, tagger.crf_constraints) == (True, "bio")
    assert abs(tagger.crf_layer.transitions.numpy()).max() > 0  # trained
    rows = [json.loads(line) for line in (out / "eval_predictions.jsonl").open()]
    assert len(rows) == 12
    assert [r["predictions"] for r in rows] == tagger.tag([r["words"] for r in rows])


def test_forbidden_training_tags_and_constraints_without_crf_are_refused(tmp_path):
    iob1 = tmp_path / "iob1.conll"
    iob1.write_text("Paul I-PER\nwent O\n\nto O\nRome I-LOC\n\n")
    result = run_tool(*_common(tmp_path / "a"), "--crf", "--crf_constraints=bio",
                      f"--train_file={iob1}")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert "the training data: tag 'I-PER' of word 0 of sentence 0 comes first, which " \
           "crf_constraints='bio' forbids" in lines[-1], result.stderr[-2000:]
    result = run_tool(*_common(tmp_path / "b"), "--crf_constraints=bio",
                      f"--train_file={iob1}")
    assert result.returncode != 0
    assert "--crf_constraints=bio needs --crf." in result.stderr, result.stderr[-2000:]
