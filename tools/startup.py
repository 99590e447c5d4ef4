"""Imported first by every tool (before TensorFlow): a quiet start and clean user errors.

- TensorFlow's start-up chatter (CUDA probes such as "failed call to cuInit", oneDNN notices,
  absl's pre-init warning) reads as failure to a new user: unless TF_CPP_MIN_LOG_LEVEL is
  set, it is silenced while TensorFlow loads and probes for GPUs, and the tool says in one
  line (on stderr) which devices it runs on. oneDNN's once-per-process "supports DT_INT64 only
  on platforms with AVX-512" error line, which the first integer Transpose would print later,
  is used up there too (on CPU-only machines). With TF_CPP_MIN_LOG_LEVEL set, nothing changes.
- It imports bert_keras before TensorFlow, so bert_keras/cpu_kernels.py's default (oneDNN
  kernels on AVX2-only CPUs too) holds for every tool, then freezes what the imports made for
  the garbage collector (`gc.freeze`): the ~1M objects of TensorFlow, Keras and the package
  live as long as the tool, and every full collection of the run (and the one at exit) would
  scan them again (the tiny flagfile's pretraining run: 790 collections, 6 of them full, in
  0.8-0.9 s of CPU; frozen, 147 and 1 in 0.3 s).
- `run(main)` is `absl.app.run(main)` (through `absl_main`: the tool's docstring as its help,
  --help exiting 0) that turns a `bert_keras.errors.InputError` (a bad
  file, text or flag; `ConfigError` included), an `app.UsageError` (absl would print the
  whole --help above it), a missing file, or a write the machine refused
  (a full disk, a file too large, a quota, a read-only file system, no permission:
  `errors.WriteError`, or an OSError / TensorFlow error saying so) into its message and exit
  status 1, without a traceback: none of them is a bug.

Example (the first import of a tool; `# isort: split` keeps `ruff check --fix` from sorting it
below the others):
    from bert_keras_tools import startup  # first: quiets TensorFlow's start-up

    # isort: split
"""

import gc
import multiprocessing
import os
import sys
import tempfile

_QUIET_CHILDREN = "BERT_KERAS_QUIET_START"


def _load_tensorflow_quietly():
    """Imports TensorFlow and lists the GPUs (the CUDA probe) with stderr sent to a temporary
    file, which is replayed if the import fails. Listing physical devices leaves threading and
    virtual-device settings open for the tool."""
    if "TF_CPP_MIN_LOG_LEVEL" in os.environ and _QUIET_CHILDREN not in os.environ:
        import bert_keras  # before the tool's own TensorFlow import: its oneDNN default
        return None
    # Level 2 for the tool's own subprocesses (create_pretraining_data's workers), which
    # import this module again: the marker tells them the level is ours, not the user's, so
    # they quiet their start-up too (the level alone lets absl's pre-init lines through).
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    os.environ[_QUIET_CHILDREN] = "1"
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as chatter:
        os.dup2(chatter.fileno(), 2)
        try:
            # isort: off
            import bert_keras  # noqa: F401  (sets its CPU-kernel default, then loads TensorFlow)
            import tensorflow as tf
            # isort: on

            gpus = tf.config.list_physical_devices("GPU")
            if not gpus:
                _consume_onednn_type_notice(tf)
        except BaseException:
            os.dup2(saved, 2)
            chatter.seek(0)
            sys.stderr.write(chatter.read().decode("utf-8", "replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    return gpus


def _consume_onednn_type_notice(tf):
    """TensorFlow logs "oneDNN supports DT_INT64 only on platforms with AVX-512. Falling back to
    the default Eigen-based implementation" (an ERROR line, on every CPU, AVX-512 ones
    included) the first time an integer op such as a Transpose (inside ragged concat: the
    packer) meets oneDNN, once per process. Running one int32 Transpose in a private graph and
    v1 Session here, while stderr is captured, uses up that once; unlike an eager op it leaves
    the eager context uninitialized (threading and virtual devices stay configurable)."""
    graph = tf.Graph()
    with graph.as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [2, 2])
        transposed = tf.transpose(ids)
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(transposed, {ids: [[0, 1], [2, 3]]})


def _device_line(gpus):
    if gpus:
        return f"{len(gpus)} GPU(s): " + ", ".join(g.name for g in gpus)
    return f"CPU ({os.cpu_count()} logical CPUs)"


def _tool():
    return os.path.basename(sys.argv[0])


def say(message):
    """Prints one line about the run on stderr, as "TOOL: message" (the device line's form)."""
    print(f"{_tool()}: {message}", file=sys.stderr, flush=True)


_GPUS = _load_tensorflow_quietly()
gc.freeze()
if _GPUS is not None and multiprocessing.current_process().name == "MainProcess":
    say(f"running on {_device_line(_GPUS)}")  # once: not again in each spawned worker


def run(main):
    """absl.app.run(main), with InputError, UsageError, a missing file and a refused write as a
    one-line message and exit status 1."""
    from absl import app
    from absl import logging as absl_logging

    from bert_keras.errors import InputError, write_problem
    from bert_keras_tools import absl_main

    def guarded(argv):
        # TF logs "Sharding callback duration" at INFO on every checkpoint: drop that chatter.
        absl_logging.get_absl_handler().addFilter(
            lambda record: "Sharding callback duration" not in record.getMessage())
        try:
            return main(argv)
        except (InputError, FileNotFoundError, FileExistsError) as e:  # a user's path or flag
            sys.exit(f"{_tool()}: {e}")
        except app.UsageError as e:  # a bad flag: its message, not absl's page of --help
            sys.exit(f"{_tool()}: {e} (--help lists the flags)")
        except Exception as e:  # a write refused where no writer named the output (TF's say)
            if write_problem(e) is None:
                raise
            message = str(getattr(e, "message", None) or e).strip().splitlines()[0]
            sys.exit(f"{_tool()}: {message}")

    absl_main.run(guarded, main.__globals__.get("__doc__"))
