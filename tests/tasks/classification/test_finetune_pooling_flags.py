"""tools/finetune.py --pooling / --head_hidden_layers / --head_hidden_size / --head_activation:
the run's best/ model is the classifier they ask for; a bad value is refused in one line."""

import json
import os
import pathlib
import sys

import pytest

import bert_keras as bk

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[3]
DATA = ROOT / "bert_keras" / "assets"
TOOL = ROOT / "tools" / "finetune.py"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A random 1-layer encoder with the bundled vocab, saved with save_pretrained."""
    tokenizer = bk.BertTokenizer(str(DATA / "vocab.txt"))
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=32)
    path = tmp_path_factory.mktemp("tiny_encoder")
    encoder.save_pretrained(str(path), tokenizer=tokenizer)
    return path


def run_tool(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    return tool_runner.run([sys.executable, str(TOOL), *args], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)


def paraphrase_args(checkpoint, out):
    return [f"--init_checkpoint={checkpoint}", f"--output_dir={out}", "--task=classification",
            f"--train_file={DATA / 'bible_paraphrase.train.tsv.gz'}",
            f"--eval_file={DATA / 'bible_paraphrase.dev.tsv.gz'}", "--text_b_column=2",
            "--max_train_examples=32", "--max_eval_examples=16", "--max_seq_length=32",
            "--train_batch_size=16", "--eval_batch_size=16", "--num_train_epochs=1",
            "--verbose=0"]


def test_the_best_model_keeps_the_pooling_and_head(checkpoint, tmp_path):
    out = tmp_path / "run"
    proc = run_tool(*paraphrase_args(checkpoint, out), "--pooling=attention",
                    "--head_hidden_layers=2", "--head_hidden_size=8", "--head_activation=tanh")
    assert proc.returncode == 0, proc.stderr[-3000:]
    model, _, info = bk.load_task(str(out / "best"))
    assert info["task"] == "classification"
    assert (model.pooling, model.head_hidden_layers, model.head_hidden_size,
            model.head_activation) == ("attention", 2, 8, "tanh")
    assert [tuple(d.kernel.shape) for d in model.classification_head.hidden_stack] == [
        (16, 8), (8, 8)]
    assert model.pooling_layer.score.kernel.numpy().any()  # trained away from its zero start
    flags = json.loads((out / "flags.json").read_text())
    assert (flags["pooling"], flags["head_hidden_layers"]) == ("attention", 2)  # resumes so


@pytest.mark.parametrize("flag, message", [
    ("--pooling=sum", "--pooling=sum"),
    ("--head_hidden_layers=-1", "--head_hidden_layers must be >= 0, got -1."),
])
def test_a_bad_value_is_refused_in_one_line(checkpoint, tmp_path, flag, message):
    proc = run_tool(*paraphrase_args(checkpoint, tmp_path / "run"), flag)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len([line for line in proc.stderr.splitlines() if message in line]) == 1
    assert not (tmp_path / "run" / "best").exists()
