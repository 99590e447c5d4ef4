"""Shared pieces of the export tests: a tiny encoder over the bundled vocab, request encoding,
and the client that loads exports in an interpreter without this project (one per test
process: serving_client.py --serve)."""

import atexit
import base64
import json
import os
import pathlib
import queue
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.serving.server_environment import SERVER_ENVIRONMENT
from bert_keras.text.preprocessor import BertPreprocessor
from bert_keras.text.tokenizer import BertTokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
VOCAB = ROOT / "bert_keras" / "assets" / "vocab.txt"
CLIENT = ROOT / "tests" / "support" / "serving_client.py"
SEQ = 24
LONG_TEXT = "word " * 20000  # 100,000 characters


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(str(VOCAB), lower_case=True)


@pytest.fixture(scope="module")
def encoder(tokenizer):
    keras.utils.set_random_seed(0)
    return bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                          num_heads=2, intermediate_size=32, max_positions=64)


def _info(task, **kw):
    return dict(dict(task=task, seq_length=SEQ, lower_case=True, labels=None,
                     text_fields=["text"]), **kw)


def _enc(array):
    array = np.asarray(array, dtype=object if np.asarray(array).dtype.kind in "OSU" else None)
    if array.dtype == object:
        return {"dtype": "string", "shape": list(array.shape),
                "b64": [base64.b64encode(v if isinstance(v, bytes) else v.encode()).decode()
                        for v in array.ravel().tolist()]}
    return {"dtype": array.dtype.name, "shape": list(array.shape), "values": array.ravel().tolist()}


def _dec(obj):
    if obj["dtype"] == "string":
        return np.array([base64.b64decode(v) for v in obj["b64"]],
                        dtype=object).reshape(obj["shape"])
    return np.array(obj["values"], dtype=obj["dtype"]).reshape(obj["shape"])


class _Client:
    """serving_client.py --serve in a `python -I -S` process (cwd elsewhere, clean
    environment), kept for the test process's life: one TensorFlow import per test process."""

    def __init__(self):
        self.home = home = tempfile.mkdtemp(prefix="serving_client_")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
               "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", **SERVER_ENVIRONMENT}
        self.stderr = open(os.path.join(home, "stderr.txt"), "w+")
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", str(CLIENT), "--serve"],
                                     cwd=home, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        atexit.register(self.stop)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)  # the process ended

    def stderr_tail(self):
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read()[-4000:]

    def serve(self, config, timeout):
        """The reply ({"ok": ..., "error": ...}) to one config, or None if the process died."""
        self.proc.stdin.write(f"{config}\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                return None
            if line.startswith(REPLY):
                return json.loads(line[len(REPLY):])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.stderr.close()
        shutil.rmtree(self.home, ignore_errors=True)


_client = None
_client_lock = threading.Lock()
REPLY = "serving_client:"  # serving_client.REPLY: the line that answers a config


def _serve(tmp_path, config):
    """Runs one config: in this test process's client (started on first use), or in a fresh
    process of its own with BERT_KERAS_TESTS_FRESH_CLIENT=1."""
    if os.environ.get("BERT_KERAS_TESTS_FRESH_CLIENT") == "1":
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
               "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", **SERVER_ENVIRONMENT}
        proc = subprocess.run([sys.executable, "-I", "-S", str(CLIENT), str(config)],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]
        return
    global _client
    with _client_lock:
        if _client is None or _client.proc.poll() is not None:
            _client = _Client()
        try:
            reply = _client.serve(config, timeout=600)
        except queue.Empty:
            _client.proc.kill()
            raise AssertionError("serving_client.py took over 600 s: "
                                 + _client.stderr_tail()) from None
        assert reply is not None, "serving_client.py died: " + _client.stderr_tail()
        assert reply["ok"], reply["error"]


def run_client(tmp_path, exports, requests=None):
    """Runs serving_client.py in a fresh `python -I -S` (cwd elsewhere, clean environment),
    set as docs/serving.md recommends for a model server (`SERVER_ENVIRONMENT`: oneDNN
    keeps each matmul's weights from their first use), so every answer the tests check also
    checks that none of them went stale. The process serves every run_client of this test
    process (its TensorFlow import paid once; see serving_client.py --serve): each run still
    checks that the project is not importable there and that tf.saved_model.load warned of
    nothing, and a request that kills it fails."""
    site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    out = tmp_path / "client_out.json"
    config = tmp_path / "client_config.json"
    config.write_text(json.dumps(dict(site=site, exports=[str(e) for e in exports],
                                      requests={str(k): v for k, v in (requests or {}).items()},
                                      out=str(out), cwd=str(tmp_path), home=str(tmp_path))))
    _serve(tmp_path, config)
    report = json.loads(out.read_text())
    assert report["bert_keras_importable"] is False
    project_dirs = {str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "support"),
                    str(ROOT / "bert_keras"), ""}
    assert not project_dirs & {p.rstrip("/") for p in report["sys_path"]}, report["sys_path"]
    # Nothing a user would read as failure, such as "ops with unsaved custom gradients".
    assert not any(report["load_warnings"].values()), report["load_warnings"]
    return report


def _outputs(result):
    """The tf1 and tf2 outputs of one request, checked equal to each other."""
    assert "tf1" in result and "tf2" in result, result.get("tf1_error") or result.get("tf2_error")
    tf1 = {k: _dec(v) for k, v in result["tf1"].items()}
    tf2 = {k: _dec(v) for k, v in result["tf2"].items()}
    assert sorted(tf1) == sorted(tf2)
    for key in tf1:
        if tf1[key].dtype == object:
            np.testing.assert_array_equal(tf1[key], tf2[key])
        else:
            np.testing.assert_allclose(tf1[key], tf2[key], rtol=1e-5, atol=1e-6)
    return tf2


def _texts(inputs, name):
    return [bytes(t) for t in _dec(inputs[name]).tolist()]


def _keras_inputs(tokenizer, *texts):
    pre = BertPreprocessor(tokenizer, seq_length=SEQ, pad_to_longest=True)
    return pre(*[tf.constant(t, tf.string) for t in texts])
