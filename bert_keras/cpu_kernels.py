"""TensorFlow's oneDNN CPU kernels, turned on where TensorFlow leaves them off; XLA's CPU
compiles of the fused training kernels made faster.

TensorFlow's x86 build enables oneDNN by default on Linux only on CPUs with AVX512-VNNI,
AVX-VNNI, AVX512-BF16 or AMX; on other CPUs (AVX2-only servers, Skylake-SP Xeons) it runs
Eigen's kernels: on an AVX2-only EPYC a float32 2048² matmul ran
at 97 GFLOP/s against oneDNN's 156, and float32 train steps took 1.34-1.51x as long.
TensorFlow reads `TF_ENABLE_ONEDNN_OPTS` once, when it loads, so `import bert_keras` sets it
to 1 before importing TensorFlow, unless:

- the user set it (`TF_ENABLE_ONEDNN_OPTS=0` keeps Eigen), or
- TensorFlow was imported first (its choice stands; where that is Eigen, a warning says how
  to get oneDNN), or
- the machine is not x86-64 (TensorFlow's ARM builds choose per CPU).

oneDNN computes float32 in float32, only in another summation order: results agree with
Eigen's to rounding (the parity tests run either way).

The train steps' fused kernels (dropout masks, residual norms, activations, losses) are
XLA-compiled for each new batch shape, in every process: a tiny fine-tuning run spends a third
of its CPU there. XLA:CPU's LLVM IR emitters compile them 20-35% faster than its MLIR fusion
emitters (TensorFlow 2.21's default), into kernels as fast (within 3% at BERT-base shapes;
`python -m benchmarks.xla_compiles`, BENCHMARKS.md) whose results are the same bits forward
and agree to float32 rounding backward (row sums in another order; tests/test_cpu_kernels.py).
XLA reads `XLA_FLAGS` at its first compile, so `import bert_keras` adds
`--xla_cpu_use_fusion_emitters=false` to it unless the user's `XLA_FLAGS` names that option,
TensorFlow is not 2.21 (XLA aborts the process on a flag it does not know) or the machine is
not x86-64.

`cpu_flags()` is the one reader of the CPU's instruction sets (`--dtype=auto` and the
benchmark ask it too).

>>> import bert_keras  # on x86-64: TF_ENABLE_ONEDNN_OPTS=1 unless set or TensorFlow came first
>>> from bert_keras import cpu_kernels
>>> "avx512_vnni" in cpu_kernels.ISA_CAP_HIDES["AVX2"]  # hidden from cpu_flags() under that cap
True
"""

import os
import platform
import sys

from absl import logging

ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
XLA_FLAGS_VARIABLE = "XLA_FLAGS"
FAST_XLA_COMPILES = "--xla_cpu_use_fusion_emitters=false"
DEFAULT_XLA_COMPILES = "--xla_cpu_use_fusion_emitters=true"  # XLA's own, for comparisons
FAST_XLA_COMPILES_VERSION = "2.21."  # the TensorFlow whose XLA has that option
_X86_64 = ("x86_64", "amd64")
# TensorFlow turns oneDNN on by itself on CPUs with any of these (its DefaultOneDnnPolicy,
# tensorflow/core/util/port.cc).
ONEDNN_BY_DEFAULT_FLAGS = frozenset(("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile",
                                     "amx_int8", "amx_bf16"))


# oneDNN's documented ISA caps (ONEDNN_MAX_CPU_ISA) and the CPU flags each one hides: the
# kernels TensorFlow and PyTorch pick then are those of the older CPU.
_AMX = ("amx_bf16", "amx_tile", "amx_int8", "amx_fp16")
_AVX512 = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx512_vnni",
           "avx512_bf16", "avx512_fp16", "avx512ifma", "avx512vbmi", "avx512_vbmi2",
           "avx512_bitalg", "avx512_vpopcntdq", "avx512_vp2intersect") + _AMX
ISA_CAP_HIDES = {
    "SSE41": ("avx", "avx2", "fma", "avx_vnni") + _AVX512,
    "AVX": ("avx2", "fma", "avx_vnni") + _AVX512,
    "AVX2": _AVX512, "AVX2_VNNI": _AVX512, "AVX2_VNNI_2": _AVX512,
    "AVX512_CORE": ("avx512_vnni", "avx512_bf16", "avx512_fp16") + _AMX,
    "AVX512_CORE_VNNI": ("avx512_bf16", "avx512_fp16") + _AMX,
    "AVX512_CORE_BF16": ("avx512_fp16",) + _AMX,
    "AVX512_CORE_FP16": _AMX,
}


def cpu_flags(capped=True):
    """The instruction-set flags of this machine's CPU (Linux /proc/cpuinfo; empty elsewhere),
    less those that ONEDNN_MAX_CPU_ISA caps off unless `capped` is False (so `auto` and the
    benchmark see the CPU the kernels see; TensorFlow's oneDNN default reads the real CPU)."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() if capped else ""
    return flags - set(ISA_CAP_HIDES.get(cap, ()))


def is_x86_64():
    """True on x86-64 machines, where this module's default applies."""
    return platform.machine().lower() in _X86_64


def prefer_onednn():
    """Sets TF_ENABLE_ONEDNN_OPTS=1 where it is unset, TensorFlow is not loaded yet and the CPU
    is x86-64; returns the value TensorFlow will see (None: TensorFlow decides)."""
    if not is_x86_64():
        return os.environ.get(ONEDNN_VARIABLE)
    if "tensorflow" not in sys.modules:
        os.environ.setdefault(ONEDNN_VARIABLE, "1")
    elif (ONEDNN_VARIABLE not in os.environ
          and ONEDNN_BY_DEFAULT_FLAGS.isdisjoint(cpu_flags(capped=False))):
        logging.warning(
            "TensorFlow was imported before bert_keras, so its oneDNN kernels stay off on this "
            "CPU (no AVX512-VNNI, AVX-VNNI, AVX512-BF16 or AMX) and train steps run 1.3-1.5x "
            "slower: import bert_keras first, or set %s=1 (=0 to keep TensorFlow's Eigen "
            "kernels and this quiet).", ONEDNN_VARIABLE)
    return os.environ.get(ONEDNN_VARIABLE)


def prefer_fast_xla_compiles():
    """Adds FAST_XLA_COMPILES to XLA_FLAGS where the user's XLA_FLAGS does not name its option,
    TensorFlow is 2.21 and the CPU is x86-64; returns XLA_FLAGS (None: unset). Called once
    TensorFlow is imported, before XLA's first compile."""
    import tensorflow as tf

    option = FAST_XLA_COMPILES.split("=")[0]
    flags = os.environ.get(XLA_FLAGS_VARIABLE, "")
    if (is_x86_64() and option not in flags
            and tf.__version__.startswith(FAST_XLA_COMPILES_VERSION)):
        os.environ[XLA_FLAGS_VARIABLE] = f"{flags} {FAST_XLA_COMPILES}".strip()
    return os.environ.get(XLA_FLAGS_VARIABLE)
