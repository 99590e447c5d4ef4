"""`import bert_keras` pauses the garbage collector while TensorFlow and the package load, and
leaves it as the process had it."""

import gc
import subprocess
import sys


def test_the_collector_is_on_after_the_import():
    import bert_keras  # noqa: F401  (conftest imported it already, the collector on)

    assert gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off():
    done = subprocess.run(
        [sys.executable, "-c", "import gc; gc.disable(); import bert_keras; print(gc.isenabled())"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "False"
