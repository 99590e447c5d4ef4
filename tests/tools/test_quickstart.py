"""The README's main job, end to end at a reduced size: every stage runs as its own tool."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quickstart_reduced_runs_every_stage_and_reuses_them(tmp_path):
    command = [sys.executable, str(REPO / "tools" / "quickstart.py"), "--reduced",
               f"--run_dir={tmp_path / 'run'}", f"--export_dir_base={tmp_path / 'saved'}",
               "--num_examples=3"]
    # As a user runs it: without TF_CPP_MIN_LOG_LEVEL, which would turn the tools' own
    # quieting of TensorFlow's start-up off.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    first = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900,
                           env=env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    for chatter in ("I0000", "E0000", "absl::InitializeLog", "cuInit"):
        assert chatter not in first.stdout + first.stderr, chatter
    for stage in ("1/6 vocab", "2/6 pretraining data", "3/6 pretraining", "4/6 fine-tuning",
                  "5/6 export", "6/6 predictions"):
        assert stage in first.stdout
    assert "masked-LM accuracy" in first.stdout and "majority-class baseline" in first.stdout
    assert first.stdout.count("p(same verse)=") == 3
    run = tmp_path / "run"
    assert (run / "pretrain" / "encoder" / "bert_keras.json").exists()
    assert (run / "pretrain" / "final" / "task.json").exists()
    metrics = json.loads((run / "paraphrase" / "metrics.json").read_text())
    assert 0.0 <= metrics["eval"]["accuracy"] <= 1.0
    assert (tmp_path / "saved" / "paraphrase" / "1" / "saved_model.pb").exists()

    # Rerunning reuses every finished stage and exports nothing new.
    second = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert second.stdout.count("reusing ") == 4  # data, pretrain, finetune, export
    assert not (tmp_path / "saved" / "paraphrase" / "2").exists()
