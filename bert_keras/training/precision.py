"""Keras dtype policies of a run: float32, or mixed precision (float16 / bfloat16 compute), and
`auto`, which picks bfloat16 where the hardware computes it natively and float32 elsewhere.

bfloat16 pays off only with bfloat16 instructions: on an AMX or AVX512-BF16 CPU (or an
Ampere+ GPU) its matmuls run 2-5x faster than float32; on an AVX2-only CPU it is emulated
and slower than float32 (BENCHMARKS.md). So `auto` decides from the hardware, and an
explicit dtype always wins.

>>> import keras
>>> with dtype_policy("mixed_bfloat16"):
...     keras.config.dtype_policy().name
'mixed_bfloat16'
>>> resolve_dtype("float32")
('float32', '--dtype=float32 as given')
"""

import functools

import keras
import tensorflow as tf

from bert_keras.cpu_kernels import cpu_flags

AUTO = "auto"
DTYPES = ("float32", "mixed_float16", "mixed_bfloat16")
# CPU flags (as /proc/cpuinfo names them) of native bfloat16 matmuls, and how to say them.
BFLOAT16_CPU_FLAGS = {"amx_bf16": "AMX", "avx512_bf16": "AVX512-BF16"}


@functools.lru_cache(maxsize=None)
def bfloat16_hardware():
    """(True if this machine computes bfloat16 natively, the reason in words): a GPU of compute
    capability 8.0+ (Ampere, Hopper), else a CPU with AMX or AVX512-BF16."""
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capability = details.get("compute_capability") or (0, 0)
        name = details.get("device_name", gpu.name)
        if tuple(capability) >= (8, 0):
            return True, (f"the GPU {name} has bfloat16 "
                          f"(compute capability {capability[0]}.{capability[1]})")
        return False, f"the GPU {name} has no fast bfloat16 (compute capability below 8.0)"
    found = [words for flag, words in BFLOAT16_CPU_FLAGS.items() if flag in cpu_flags()]
    if found:
        return True, f"this CPU has {' and '.join(found)}"
    return False, "this CPU has neither AMX nor AVX512-BF16 (bfloat16 would be emulated)"


def resolve_dtype(dtype, bfloat16="mixed_bfloat16"):
    """(the dtype to use, why): `dtype` itself unless it is "auto", which becomes `bfloat16`
    (the bfloat16 name of the caller: "mixed_bfloat16" for training, "bfloat16" for an export)
    on bfloat16 hardware and "float32" elsewhere."""
    if dtype != AUTO:
        return dtype, f"--dtype={dtype} as given"
    native, why = bfloat16_hardware()
    return (bfloat16 if native else "float32"), why


def describe(dtype, bfloat16="mixed_bfloat16"):
    """One line for a tool to print: which dtype it runs in and why."""
    resolved, why = resolve_dtype(dtype, bfloat16)
    if dtype != AUTO:
        return f"dtype {resolved} (--dtype)"
    return f"dtype {resolved} (--dtype=auto: {why}; --dtype overrides)"


class dtype_policy:  # lower-case: used as a context manager, like keras' own scopes
    """Sets Keras' global dtype policy inside the block ("auto" resolved) and restores the
    previous one after."""

    def __init__(self, dtype):
        if dtype != AUTO and dtype not in DTYPES:
            raise ValueError(f"Unknown dtype {dtype!r}; expected one of {(AUTO,) + DTYPES}.")
        self.dtype = resolve_dtype(dtype)[0]

    def __enter__(self):
        self.previous = keras.config.dtype_policy()
        keras.config.set_dtype_policy(self.dtype)

    def __exit__(self, *exc):
        keras.config.set_dtype_policy(self.previous)
