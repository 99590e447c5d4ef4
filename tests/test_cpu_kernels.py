"""bert_keras turns TensorFlow's oneDNN kernels on before TensorFlow loads (x86-64), unless the
user chose, or TensorFlow was imported first."""

import os
import subprocess
import sys

import pytest

from bert_keras import cpu_kernels

x86_64_only = pytest.mark.skipif(not cpu_kernels.is_x86_64(),
                                 reason="the default is for x86-64 CPUs")


@x86_64_only
def test_importing_bert_keras_loads_tensorflow_with_onednn_on():
    env = {k: v for k, v in os.environ.items() if k != cpu_kernels.ONEDNN_VARIABLE}
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"  # TensorFlow then says which kernels it loaded
    done = subprocess.run(
        [sys.executable, "-c", "import os, bert_keras; print(os.environ['TF_ENABLE_ONEDNN_OPTS'])"],
        capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert "oneDNN custom operations are on" in done.stderr


@x86_64_only
def test_the_users_choice_stands(monkeypatch):
    monkeypatch.delitem(sys.modules, "tensorflow")
    monkeypatch.setenv(cpu_kernels.ONEDNN_VARIABLE, "0")
    assert cpu_kernels.prefer_onednn() == "0"


@x86_64_only
@pytest.mark.parametrize("flags,warned", [
    ({"avx2"}, True), ({"avx2", "avx512f"}, True),  # Skylake-SP: AVX-512 without VNNI
    ({"avx2", "avx512_vnni"}, False), ({"avx2", "avx_vnni"}, False)])
def test_once_tensorflow_is_loaded_nothing_changes_and_eigen_is_named(monkeypatch, caplog,
                                                                       flags, warned):
    import tensorflow  # noqa: F401

    monkeypatch.delenv(cpu_kernels.ONEDNN_VARIABLE, raising=False)
    monkeypatch.setattr(cpu_kernels, "cpu_flags", lambda capped=True: flags)
    with caplog.at_level("WARNING"):
        assert cpu_kernels.prefer_onednn() is None
    assert cpu_kernels.ONEDNN_VARIABLE not in os.environ
    assert ("import bert_keras first" in caplog.text) == warned, caplog.text
