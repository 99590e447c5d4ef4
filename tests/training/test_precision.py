"""--dtype=auto: bfloat16 where the hardware computes it natively (AMX, AVX512-BF16), float32
elsewhere; an explicit dtype always wins; the tools say which they chose and why."""

import os
import sys

import keras
import pytest

from bert_keras.training import precision

import tool_runner  # tests/support: tools forked without their imports

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def cpu_with(monkeypatch):
    """Pretend this (GPU-less) machine's CPU has exactly the given flags."""
    def pretend(*flags):
        monkeypatch.setattr(precision, "cpu_flags", lambda: set(flags))
        precision.bfloat16_hardware.cache_clear()
    yield pretend
    precision.bfloat16_hardware.cache_clear()


@pytest.mark.parametrize("flags, expected, words", [
    (("avx2", "amx_bf16", "avx512_bf16"), "mixed_bfloat16", "AMX and AVX512-BF16"),
    (("avx2", "avx512f", "avx512_bf16"), "mixed_bfloat16", "AVX512-BF16"),
    (("avx2", "avx512f", "avx512_vnni"), "float32", "neither AMX nor AVX512-BF16"),
    ((), "float32", "neither AMX nor AVX512-BF16"),
])
def test_auto_follows_the_cpu_flags(cpu_with, flags, expected, words):
    cpu_with(*flags)
    dtype, why = precision.resolve_dtype("auto")
    assert dtype == expected and words in why
    assert precision.resolve_dtype("auto", bfloat16="bfloat16")[0] == expected.replace("mixed_", "")
    with precision.dtype_policy("auto"):
        assert keras.config.dtype_policy().name == expected
    assert f"dtype {expected} (--dtype=auto: " in precision.describe("auto")


def test_an_explicit_dtype_wins(cpu_with):
    cpu_with("amx_bf16")
    assert precision.resolve_dtype("float32") == ("float32", "--dtype=float32 as given")
    cpu_with()
    assert precision.resolve_dtype("mixed_bfloat16")[0] == "mixed_bfloat16"
    assert precision.describe("float32") == "dtype float32 (--dtype)"
    with pytest.raises(ValueError, match="'float64'"):
        precision.dtype_policy("float64")


def test_this_machine_is_read_from_proc_cpuinfo():
    if not os.path.exists("/proc/cpuinfo"):
        pytest.skip("no /proc/cpuinfo")
    text = open("/proc/cpuinfo").read()
    native, why = precision.bfloat16_hardware()
    assert native == (" amx_bf16" in text or " avx512_bf16" in text), why


def test_an_isa_cap_hides_the_flags_the_kernels_cannot_use(monkeypatch):
    """ONEDNN_MAX_CPU_ISA=AVX2 makes TensorFlow's kernels those of an AVX2 CPU: `auto` must
    then see no bfloat16 hardware either."""
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    capped = precision.cpu_flags()
    assert not capped & {"avx512f", "avx512_bf16", "amx_bf16"}
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx512_core_bf16")
    assert "amx_bf16" not in precision.cpu_flags() and capped <= precision.cpu_flags()
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    assert capped <= precision.cpu_flags()


def test_the_export_tool_exports_float32_whatever_the_cpu(tmp_path, tiny_encoder):
    """An export answers the same on any machine: float32 unless --dtype=bfloat16 is given
    (--dtype=auto is for training only), said in one line."""
    from bert_keras.data.pretraining import pipeline
    from bert_keras.text.tokenizer import BertTokenizer

    tokenizer = BertTokenizer(pipeline.default_vocab_file())
    encoder = tiny_encoder(vocab_size=tokenizer.vocab_size)
    encoder.save_pretrained(str(tmp_path / "encoder"), tokenizer)
    env = dict(os.environ)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    command = [sys.executable, os.path.join(ROOT, "tools", "export.py"),
               f"--encoder_dir={tmp_path / 'encoder'}", f"--export_dir_base={tmp_path / 'saved'}",
               "--seq_length=16"]
    proc = tool_runner.run(command, capture_output=True, text=True, cwd=ROOT, env=env,
                           timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("export.py: dtype")]
    assert lines == ["export.py: dtype float32 (--dtype)"]
    assert "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1" in proc.stderr  # the model server's setting
    from bert_keras.serving import export

    assert export.read_metadata(proc.stdout.splitlines()[0])["dtype"] == "float32"
    refused = tool_runner.run(command + ["--dtype=auto"], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=600)
    assert refused.returncode != 0 and "--dtype" in refused.stderr
    assert "Traceback" not in refused.stderr
