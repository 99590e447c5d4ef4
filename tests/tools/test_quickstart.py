"""The README's main job, end to end at a reduced size: every stage runs as its own tool,
quietly (tools/startup.py): run as a user runs it, without TF_CPP_MIN_LOG_LEVEL, no tool
prints TensorFlow's chatter that reads as failure (CUDA probes, oneDNN notices such as
"oneDNN supports DT_INT64 only on platforms with AVX-512" from fine-tuning's ragged concat of
pairs, absl's pre-init warning, the checkpoint saver's "Sharding callback duration"), and
each says which devices it runs on, once (create_pretraining_data's spawned worker
imports the tool again, without a device line)."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
NOISE = ["I0000", "E0000", "oneDNN", "cuInit", "cudart", "cuda drivers", "absl::InitializeLog",
         "Sharding callback duration", "rebuild TensorFlow"]
# The tools the first run starts, in order; each one's first line on stderr says its devices.
TOOLS = ["create_pretraining_data", "pretrain", "finetune", "export", "predict"]


@pytest.mark.slow
def test_quickstart_reduced_runs_every_stage_quietly_and_reuses_them(tmp_path):
    command = [sys.executable, str(REPO / "tools" / "quickstart.py"), "--reduced",
               f"--run_dir={tmp_path / 'run'}", f"--export_dir_base={tmp_path / 'saved'}",
               "--num_examples=3"]
    # As a user runs it: without TF_CPP_MIN_LOG_LEVEL, which would turn the tools' own
    # quieting of TensorFlow's start-up off.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    first = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900,
                           env=env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    noisy = [line for line in (first.stdout + first.stderr).splitlines()
             if any(word in line for word in NOISE)]
    assert not noisy, noisy
    devices = re.findall(r"^(\w+)\.py: running on (?:CPU|GPU)", first.stderr, re.M)
    assert devices == TOOLS, first.stderr[-3000:]  # once each, the workers' imports silent
    assert first.stderr.startswith("create_pretraining_data.py: running on "), first.stderr[:500]
    for stage in ("1/6 vocab", "2/6 pretraining data", "3/6 pretraining", "4/6 fine-tuning",
                  "5/6 export", "6/6 predictions"):
        assert stage in first.stdout
    assert "masked-LM accuracy" in first.stdout and "majority-class baseline" in first.stdout
    assert first.stdout.count("p(same verse)=") == 3
    run = tmp_path / "run"
    assert (run / "pretrain" / "encoder" / "bert_keras.json").exists()
    assert (run / "pretrain" / "final" / "task.json").exists()
    assert list((run / "pretrain" / "checkpoints").glob("*.index"))  # the saver ran, quietly
    assert len(list((run / "pretrain_data").glob("train.tfrecord*"))) == 2  # by two processes
    metrics = json.loads((run / "paraphrase" / "metrics.json").read_text())
    assert 0.0 <= metrics["eval"]["accuracy"] <= 1.0
    assert metrics["train_examples"] == 256  # pairs: featurized by a ragged concat
    task = json.loads((run / "paraphrase" / "best" / "task.json").read_text())
    assert task["text_fields"] == ["text_a", "text_b"]
    assert (tmp_path / "saved" / "paraphrase" / "1" / "saved_model.pb").exists()

    # Rerunning reuses every finished stage and exports nothing new.
    second = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert second.stdout.count("reusing ") == 4  # data, pretrain, finetune, export
    assert not (tmp_path / "saved" / "paraphrase" / "2").exists()
