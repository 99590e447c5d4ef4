"""The int8 export (--dtype=int8): served without the project, it answers as float32 does."""

import gzip
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras import assets
from bert_keras.serving import export, op_audit
from bert_keras.tasks.classification import BertClassifier

import tool_runner  # tests/support: tools forked without their imports
from export_harness import (  # noqa: F401  (fixtures too)
    SEQ,
    _enc,
    _keras_inputs,
    _outputs,
    run_client,
    tokenizer,
)


def _topics(split):
    """(label ids, texts, label names) of the bundled topic task's `split`."""
    with gzip.open(assets.path(f"wordnet_topics.{split}.tsv.gz"), "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    names = sorted({r[0] for r in rows}) if split == "train" else _topics("train")[2]
    return np.array([names.index(r[0]) for r in rows]), [r[1] for r in rows], names


@pytest.fixture(scope="module")
def trained(tokenizer):  # noqa: F811
    """A 2-layer classifier fit for a few seconds on the bundled topic task (45 classes):
    enough to tell topics apart, small enough for a test."""
    labels, texts, _ = _topics("train")
    model = _classifier(tokenizer)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit(_keras_inputs(tokenizer, texts[:4096]), labels[:4096], batch_size=64, epochs=3,
              verbose=0)
    return model


def _classifier(tokenizer):  # noqa: F811
    keras.utils.set_random_seed(3)
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=2, hidden_size=64,
                             num_heads=2, intermediate_size=128, max_positions=64)
    names = _topics("train")[2]
    return BertClassifier(encoder, num_classes=len(names), labels=names, pooling="mean")


def _task_dir(directory, tokenizer, model):  # noqa: F811
    from bert_keras.tasks.task_io import save_task

    save_task(str(directory), model, tokenizer, task="classification", seq_length=SEQ,
              labels=model.labels)
    return directory


def _variables_bytes(path):
    folder = os.path.join(path, "variables")
    return sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder))


def test_tools_int8_export_agrees_with_float32_served_without_project(tmp_path, tokenizer,  # noqa: F811
                                                               trained, int8_export):
    int8_path = int8_export
    labels, texts, _ = _topics("test")
    want = tf.nn.softmax(trained(_keras_inputs(tokenizer, texts), training=False)).numpy()
    assert len(set(want.argmax(-1))) > 10  # a model that tells topics apart
    assert (want.argmax(-1) == labels).mean() > 0.3  # the majority class has 10%

    requests = {int8_path: [["serving_default", {"text": _enc(np.array(texts, dtype=object))}]]}
    report = run_client(tmp_path, [int8_path], requests)
    served = [r for r in report["exports"][int8_path] if not r["warmup"]]
    out = _outputs(served[0])
    agreement = (out["label_ids"] == want.argmax(-1)).mean()
    assert agreement >= 0.99, agreement
    np.testing.assert_allclose(out["probabilities"], want, atol=0.05)
    assert not np.allclose(out["probabilities"], want, atol=1e-6)  # it is not the float32 model

    metadata = export.read_metadata(int8_path)
    assert metadata["dtype"] == "int8"
    # tools/export.py's own check of the int8 export on --calibration_file.
    check = metadata["int8_check"]
    assert check["examples"] == 300
    assert check["agreement"]["label_ids"] >= 0.99, check
    assert 0 < check["max_abs_difference"]["probabilities"] < 0.05, check
    reader = tf.train.load_checkpoint(os.path.join(int8_path, "variables", "variables"))
    assert "int8" in {d.name for d in reader.get_variable_to_dtype_map().values()}
    op_audit.audit_saved_model(int8_path)  # only ops stock TF Serving has
    # Tiny: the position and segment tables and heads weigh more here than in BERT-base
    # (BENCHMARKS.md has that one's ratio).
    float32_bytes = sum(w.numpy().nbytes for w in trained.weights)
    assert _variables_bytes(int8_path) < 0.45 * float32_bytes


@pytest.fixture(scope="module")
def int8_export(tmp_path_factory, tokenizer, trained):  # noqa: F811
    """The version dir of `tools/export.py --dtype=int8` of `trained`'s task directory, checked
    against float32 on 300 dev definitions (--calibration_file)."""
    tmp = tmp_path_factory.mktemp("int8")
    task_dir = _task_dir(tmp / "topics" / "best", tokenizer, trained)
    _, texts, _ = _topics("dev")
    calibration = tmp / "calibration.txt"
    calibration.write_text("\n".join(texts[:300]) + "\n")
    proc = tool_runner.run_tool("export", f"--task_dir={task_dir}", "--dtype=int8",
                                f"--calibration_file={calibration}",
                                f"--export_dir_base={tmp / 'saved'}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()[0]


@pytest.fixture(scope="module")
def untrained_task_dir(tmp_path_factory, tokenizer):  # noqa: F811
    """A task directory of `trained`'s model before its fit: what the refusals of a bad
    calibration file need (not `trained`, so its fit runs in one test only)."""
    return _task_dir(tmp_path_factory.mktemp("runs") / "topics" / "best", tokenizer,
                     _classifier(tokenizer))


@pytest.mark.parametrize("content, flags, message", [
    (None, ["--dtype=int8"], "no such file"),
    (b"", ["--dtype=int8"], "no examples"),
    (b"\x00\x01\x02PK\x03\x04" * 200, ["--dtype=int8"], "not text"),
    (b"a definition\nanother\tone\n", ["--dtype=int8"],
     "line 2: 2 tab-separated fields, expected 1 (text"),
    (b"a definition\n", ["--dtype=float32"], "--calibration_file checks an int8 export"),
])
def test_bad_calibration_file_is_refused_in_one_line(tmp_path, untrained_task_dir, content, flags,
                                                     message):
    path = tmp_path / "calibration.txt"
    if content is not None:
        path.write_bytes(content)
    base = tmp_path / "saved"
    proc = tool_runner.run_tool("export", f"--task_dir={untrained_task_dir}", *flags,
                                f"--calibration_file={path}", f"--export_dir_base={base}")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if message in line]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "--calibration_file" in lines[0]
    assert not base.exists() or not any(base.rglob("saved_model.pb"))
