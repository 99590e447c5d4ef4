"""Parent side of benchmarks/run.py: runs workers in subprocesses, interleaved.

Each measurement re-invokes benchmarks/run.py with --worker and a JSON spec, which prints one
RESULT line. Also the registry of sections beyond peak and encoder (`section_hook`) and the
--systems filter (reads the flags that benchmarks/run.py defines).
"""

import json
import os
import signal
import subprocess
import sys

from absl import flags, logging

from benchmarks.inputs import REPO
from benchmarks.machine import CAP_LEAVES_OUT

FLAGS = flags.FLAGS
# The command a worker subprocess runs (from the repository root): benchmarks/run.py.
WORKER_COMMAND = ("-m", "benchmarks.run")


# Section hooks for modules other engineers are writing: each returns rows or a reason.
SECTION_HOOKS = {}


def section_hook(name):
    def register(fn):
        SECTION_HOOKS[name] = fn
        return fn
    return register


def run_worker_subprocess(spec, timeout):
    """One measurement in a fresh process; `spec["env"]`, if any, adds to its environment
    (settings that TensorFlow reads once, at start)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO), **spec.get("env", {}))
    command = [sys.executable, *WORKER_COMMAND, "--worker", json.dumps(spec)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=str(REPO))
    except subprocess.TimeoutExpired:
        return dict(error=f"timed out after {timeout} s")
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    if done.returncode < 0:  # a crash prints pages of module lists, not a reason
        return dict(error=f"the worker crashed ({signal.Signals(-done.returncode).name})")
    return dict(error=(done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"])


def measure_rounds(specs, rounds, timeout):
    """Runs each (label, spec) `rounds` times, interleaved: {label: [result of each round]}."""
    results = {label: [] for label, _ in specs}
    for round_index in range(rounds):
        for label, spec in specs:
            result = run_worker_subprocess(spec, timeout)
            logging.info("round %d %s: %s", round_index, label, result)
            results[label].append(result)
    return results


def best_round(results, key, lowest=False):
    """The round of `results` (one label's) with the highest `key` (`lowest`: the lowest); the
    first error if every round failed."""
    found = [result for result in results if "error" not in result]
    if not found:
        return results[0]
    return (min if lowest else max)(found, key=lambda result: result[key])


def measure_interleaved(specs, rounds, timeout, key):
    """Runs each (label, spec) `rounds` times, interleaved; keeps each label's best round."""
    return {label: best_round(results, key)
            for label, results in measure_rounds(specs, rounds, timeout).items()}


def print_interleaved(specs, rounds, key, prefix, cells):
    """Measures `specs` (`measure_interleaved`) and prints one Markdown row per label:
    `cells(label, result, results)`, or `prefix`, the label and the error of a failed one."""
    results = measure_interleaved(specs, rounds, 1800, key)
    for label, _ in specs:
        result = results[label]
        row = ([*prefix, label, str(result["error"])] if "error" in result
               else cells(label, result, results))
        print("| " + " | ".join(row) + " |")


def capped_out(label, max_isa):
    """True for a TensorFlow system that the cap `max_isa` (--max_isa; "" for none) cannot
    reach (`machine.CAP_LEAVES_OUT`), so it is not run under it."""
    return bool(max_isa) and not label.startswith("HF") and any(
        word in label for word in CAP_LEAVES_OUT[max_isa])


def wanted(label):
    if capped_out(label, FLAGS.max_isa):
        return False
    return not FLAGS.systems or any(s in label for s in FLAGS.systems)
