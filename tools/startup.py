"""Imported first by every tool (before TensorFlow): a quiet start and clean user errors.

- TensorFlow's start-up chatter (CUDA probes such as "failed call to cuInit", oneDNN notices,
  absl's pre-init warning) reads as failure to a new user: unless TF_CPP_MIN_LOG_LEVEL is
  set, it is silenced while TensorFlow loads and probes for GPUs, and the tool says in one
  line (on stderr) which devices it runs on. With TF_CPP_MIN_LOG_LEVEL set, nothing changes.
- `run(main)` is `absl.app.run(main)` that turns a `bert_keras.errors.InputError` (a bad
  file, text or flag; `ConfigError` included) or a missing file into its message and exit
  status 1, without a traceback.

Example (the first import of a tool):
    from bert_keras_tools import startup  # noqa: F401  (first: quiets TensorFlow's start-up)
"""

import os
import sys
import tempfile


def _load_tensorflow_quietly():
    """Imports TensorFlow and lists the GPUs (the CUDA probe) with stderr sent to a temporary
    file, which is replayed if the import fails. Listing physical devices leaves threading and
    virtual-device settings open for the tool."""
    if "TF_CPP_MIN_LOG_LEVEL" in os.environ:
        return None
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"  # also for the tool's own subprocesses
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as chatter:
        os.dup2(chatter.fileno(), 2)
        try:
            import tensorflow as tf
            gpus = tf.config.list_physical_devices("GPU")
        except BaseException:
            os.dup2(saved, 2)
            chatter.seek(0)
            sys.stderr.write(chatter.read().decode("utf-8", "replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    return gpus


def _device_line(gpus):
    if gpus:
        return f"{len(gpus)} GPU(s): " + ", ".join(g.name for g in gpus)
    return f"CPU ({os.cpu_count()} logical CPUs)"


_GPUS = _load_tensorflow_quietly()
if _GPUS is not None:
    print(f"{os.path.basename(sys.argv[0])}: running on {_device_line(_GPUS)}", file=sys.stderr)


def run(main):
    """absl.app.run(main), with InputError as a one-line message and exit status 1."""
    from absl import app

    from bert_keras.errors import InputError

    def guarded(argv):
        try:
            return main(argv)
        except (InputError, FileNotFoundError, FileExistsError) as e:  # a user's path or flag
            sys.exit(f"{os.path.basename(sys.argv[0])}: {e}")

    app.run(guarded)
