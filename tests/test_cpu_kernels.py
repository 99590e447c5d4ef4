"""bert_keras turns TensorFlow's oneDNN kernels on before TensorFlow loads (x86-64), unless the
user chose, or TensorFlow was imported first; and XLA's faster compiles of the fused training
kernels on before XLA compiles, with the default's results to rounding."""

import base64
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_keras import cpu_kernels

x86_64_only = pytest.mark.skipif(not cpu_kernels.is_x86_64(),
                                 reason="the default is for x86-64 CPUs")


@x86_64_only
def test_importing_bert_keras_loads_tensorflow_with_onednn_on_and_fast_xla_compiles():
    env = {k: v for k, v in os.environ.items()
           if k not in (cpu_kernels.ONEDNN_VARIABLE, cpu_kernels.XLA_FLAGS_VARIABLE)}
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"  # TensorFlow then says which kernels it loaded
    done = subprocess.run(
        [sys.executable, "-c", "import os, bert_keras; print(os.environ['TF_ENABLE_ONEDNN_OPTS']);"
         "print(os.environ['XLA_FLAGS'])"],
        capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["1", cpu_kernels.FAST_XLA_COMPILES]
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


@x86_64_only
@pytest.mark.parametrize("given,expected", [
    ("--xla_cpu_max_isa=AVX2", f"--xla_cpu_max_isa=AVX2 {cpu_kernels.FAST_XLA_COMPILES}"),
    ("--xla_cpu_use_fusion_emitters=true", "--xla_cpu_use_fusion_emitters=true")])
def test_the_users_xla_flags_are_kept(monkeypatch, given, expected):
    monkeypatch.setenv(cpu_kernels.XLA_FLAGS_VARIABLE, given)
    assert cpu_kernels.prefer_fast_xla_compiles() == expected


@x86_64_only
def test_another_tensorflow_gets_no_xla_flag(monkeypatch):
    import tensorflow as tf

    monkeypatch.delenv(cpu_kernels.XLA_FLAGS_VARIABLE, raising=False)
    monkeypatch.setattr(tf, "__version__", "2.22.0")  # its XLA may not know the option
    assert cpu_kernels.prefer_fast_xla_compiles() is None


# The fused training kernels forward and backward (the residual norm with dropout, GELU, the
# masked LM's cross entropy), float32 and bfloat16: each output as its dtype's name and bytes.
FUSED_KERNELS = """
import base64
import bert_keras  # noqa: F401  (first, as a user imports it)
import tensorflow as tf
from bert_keras.models.layers.activations import training_activation
from bert_keras.models.layers.residual_norm import residual_dropout_norm
from bert_keras.models.objectives.losses import _weighted_cross_entropy_sum

outputs = []
for dtype in (tf.float32, tf.bfloat16):
    x, h = (tf.cast(tf.random.stateless_normal([40, 24], [i, 9]), dtype) for i in (1, 2))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, h])
        y = training_activation("gelu")(residual_dropout_norm(
            x, h, tf.constant([3, 4]), 0.1, tf.ones(24), tf.zeros(24), 1e-12))
        logits = tf.reshape(tf.cast(y, tf.float32), [4, 10, 24])  # (B, P, V), as masked LM's
        tape.watch(logits)
        loss = _weighted_cross_entropy_sum(tf.reshape(tf.range(40) % 24, [4, 10]), logits,
                                           tf.ones([4, 10]))
    outputs += [y, loss, *tape.gradient(y, [x, h]), tape.gradient(loss, logits)]
for output in outputs:
    print(output.dtype.name, base64.b64encode(output.numpy().tobytes()).decode())
"""


@x86_64_only
def test_fast_xla_compiles_give_the_fused_kernels_results_to_rounding():
    """The fused kernels compiled as this process compiles them (bert_keras' XLA_FLAGS) and
    with XLA's default emitters, in a fresh interpreter: the forward outputs the same bits,
    the backward's float32 row sums (summed in another order) within float32 rounding."""
    import tensorflow as tf

    assert cpu_kernels.FAST_XLA_COMPILES in os.environ.get(cpu_kernels.XLA_FLAGS_VARIABLE, "")
    env = dict(os.environ, XLA_FLAGS=cpu_kernels.DEFAULT_XLA_COMPILES, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", FUSED_KERNELS], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ours = []
    exec(compile(FUSED_KERNELS, "FUSED_KERNELS", "exec"), {"print": lambda *a: ours.append(a)})
    theirs = [line.split() for line in done.stdout.splitlines()]
    assert len(ours) == len(theirs) == 10
    dtypes = {"float32": np.float32, "bfloat16": tf.bfloat16.as_numpy_dtype}
    for i, ((name, mine), (_, default)) in enumerate(zip(ours, theirs)):
        mine, default = (np.frombuffer(base64.b64decode(b), dtypes[name]).astype(np.float64)
                         for b in (mine, default))
        if i % 5 in (0, 1):  # y and the loss
            np.testing.assert_array_equal(mine, default)
        else:
            np.testing.assert_allclose(mine, default, rtol=2e-6 if name == "float32" else 1e-2,
                                       atol=1e-6 if name == "float32" else 1e-2)
    assert np.frombuffer(base64.b64decode(ours[1][1]), np.float32)[0] > 1  # a real loss
