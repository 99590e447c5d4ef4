"""tools/finetune.py --task=tagging --crf: training tags that --crf_constraints forbid, and
constraints without --crf, are refused in one line. (A CRF run end to end:
tests/tools/test_finetune_tool.py::test_tagging_with_a_crf_end_to_end.)"""

import os
import pathlib
import sys

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "finetune.py"
CHECKPOINT = ROOT / "tests" / "fixtures" / "families" / "bert_tagger"


def run_tool(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    return tool_runner.run([sys.executable, str(TOOL), *args], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)


def _common(out):
    return [f"--init_checkpoint={CHECKPOINT}", f"--output_dir={out}", "--task=tagging",
            "--max_seq_length=32", "--train_batch_size=16", "--eval_batch_size=16",
            "--num_train_epochs=1", "--learning_rate=1e-3", "--verbose=0"]


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
