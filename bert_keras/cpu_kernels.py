"""TensorFlow's oneDNN CPU kernels, turned on where TensorFlow leaves them off.

TensorFlow's x86 build enables oneDNN by default only on CPUs with AVX-512; on an AVX2-only
CPU it runs Eigen's kernels, which measured 112 GFLOP/s on a float32 2048² matmul where
oneDNN reached 162, and made float32 train steps 34-51% slower (BENCHMARKS.md, "A real
AVX2-only CPU"). TensorFlow reads `TF_ENABLE_ONEDNN_OPTS` once, when it loads, so
`import bert_keras` sets it to 1 before importing TensorFlow, unless:

- the user set it (`TF_ENABLE_ONEDNN_OPTS=0` keeps Eigen), or
- TensorFlow was imported first (then its choice stands; nothing is changed), or
- the machine is not x86-64 (TensorFlow's ARM builds choose per CPU).

oneDNN computes float32 in float32, only in another summation order: results agree with
Eigen's to rounding (the parity tests run either way).

>>> import os
>>> os.environ.get("TF_ENABLE_ONEDNN_OPTS") in (None, "0", "1")
True
"""

import os
import platform
import sys

ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
_X86_64 = ("x86_64", "amd64")


def prefer_onednn():
    """Sets TF_ENABLE_ONEDNN_OPTS=1 where it is unset, TensorFlow is not loaded yet and the CPU
    is x86-64; returns the value TensorFlow will see (None: TensorFlow decides)."""
    already_loaded = "tensorflow" in sys.modules
    if not already_loaded and platform.machine().lower() in _X86_64:
        os.environ.setdefault(ONEDNN_VARIABLE, "1")
    return os.environ.get(ONEDNN_VARIABLE)
