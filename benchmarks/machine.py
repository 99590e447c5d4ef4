"""The machine a benchmark ran on: its CPU kind, a line describing it, the library versions.

The CPU kind names the bfloat16 hardware and the vector width, which decide most ratios
(bf16 is 4x float32 with AMX, 2x with AVX512-BF16, emulated and slower than float32 on AVX512
and AVX2 CPUs, which differ in vector width), so BENCHMARKS.md keeps one section per kind.

>>> cpu_kind({"avx2", "avx512_bf16"})
'AVX512-BF16'
>>> cpu_kind({"avx2", "avx512f"})
'AVX512'
>>> cpu_kind({"sse4_2"})
'other'
"""

import datetime
import os
import platform
import subprocess

# (the /proc/cpuinfo flag, the kind it makes), the best first.
CPU_KINDS = (("amx_bf16", "AMX"), ("avx512_bf16", "AVX512-BF16"), ("avx512f", "AVX512"),
             ("avx2", "AVX2"))
KIND_ORDER = tuple(kind for _, kind in CPU_KINDS) + ("other",)  # BENCHMARKS.md's section order


def cpu_kind(flags=None):
    """"AMX", "AVX512-BF16", "AVX512", "AVX2" or "other", from the CPU flags (default: this
    machine's, less those an ONEDNN_MAX_CPU_ISA cap hides)."""
    if flags is None:
        # Imported here: bert_keras imports TensorFlow, which the report's tests do without.
        from bert_keras.cpu_kernels import cpu_flags

        flags = cpu_flags()
    return next((kind for flag, kind in CPU_KINDS if flag in flags), "other")


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        out = ""
    return next((line.split(":", 1)[1].strip() for line in out.splitlines()
                 if line.startswith("Model name:")), platform.processor() or "unknown CPU")


# The documented instruction-set limits of oneDNN (TensorFlow's and PyTorch's kernels), MKL,
# PyTorch's own vectorized kernels and XLA's CPU code generator: one cap makes this CPU measure
# like an older one. AVX512 is AVX512_CORE (Skylake-SP): the VNNI of later AVX512 CPUs speeds
# up int8 only.
ISA_CAPS = {"AVX2": dict(ONEDNN_MAX_CPU_ISA="AVX2", MKL_ENABLE_INSTRUCTIONS="AVX2",
                         ATEN_CPU_CAPABILITY="avx2", XLA_FLAGS="--xla_cpu_max_isa=AVX2"),
            "AVX512": dict(ONEDNN_MAX_CPU_ISA="AVX512_CORE", MKL_ENABLE_INSTRUCTIONS="AVX512",
                           ATEN_CPU_CAPABILITY="avx512", XLA_FLAGS="--xla_cpu_max_isa=AVX512")}
ISA_CAP_VARIABLES = tuple(ISA_CAPS["AVX2"])
# Words of TensorFlow's rows that each cap cannot make those of the older CPU, so they are left
# out under it: XLA's CPU runtime picks its matmul kernels by cpuid, and TensorFlow sends
# bfloat16 to oneDNN by cpuid, which then aborts under the AVX2 cap (a real AVX2 CPU gets
# Eigen's emulated bfloat16 instead); under the AVX512 cap oneDNN emulates bfloat16, as on a
# real AVX512 CPU.
CAP_LEAVES_OUT = {"AVX2": ("bf16", "bfloat16", "XLA"), "AVX512": ("XLA",)}


def cap_isa(isa):
    """Caps TensorFlow, XLA and PyTorch alike at `isa` (a key of ISA_CAPS), in this process's
    environment, which the workers inherit (XLA_FLAGS keeps the flags already there)."""
    for name, value in ISA_CAPS[isa].items():
        if name == "XLA_FLAGS":
            value = f"{os.environ.get(name, '')} {value}".strip()
        os.environ[name] = value


def isa_cap_words():
    """How the instruction sets are capped, in words ("" when they are not)."""
    caps = [f"{name}={os.environ[name]}" for name in ISA_CAP_VARIABLES if os.environ.get(name)
            and (name != "XLA_FLAGS" or "max_isa" in os.environ[name])]
    return f" (capped: {', '.join(caps)})" if caps else ""


def machine_line(kind):
    """The CPU model, its cores and kind (and any instruction-set cap), TensorFlow's oneDNN
    setting where one is set, and the kernel."""
    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    onednn = f", TF_ENABLE_ONEDNN_OPTS={onednn}" if onednn else ""
    return (f"{cpu_model()}, {os.cpu_count()} CPU cores, CPU kind {kind}{isa_cap_words()}"
            f"{onednn}, Linux {platform.release()}")


def versions_line():
    import importlib.metadata as md

    parts = []
    for name in ("tensorflow", "keras", "keras-hub", "torch", "transformers"):
        try:
            parts.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(parts)


def describe_run(command, rounds):
    """The command and the machine of a run, as its section and --rows_json give them."""
    kind = cpu_kind()
    return dict(command=command, rounds=rounds, kind=kind, machine=machine_line(kind),
                date=datetime.date.today().isoformat(), versions=versions_line())
