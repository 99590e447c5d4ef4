"""The --input and --output of a tool that reads lines and writes lines (tools/predict.py):
each checked before the model loads, so a wrong path fails at once in one line; stdout
flushed with its write errors said in one line; a file written under a temporary name and
renamed only when complete, so a failed run leaves no partial output.
"""

import contextlib
import os
import sys

from bert_keras import files
from bert_keras.errors import InputError, WriteError, write_error


def check_input_flag(path):
    """InputError for an --input that cannot be read: closed stdin, a directory, no file.
    Checked before the model loads, so a wrong path fails at once in one line."""
    if path == "-":
        if sys.stdin is None:
            raise InputError("--input=- reads stdin, but stdin is closed: give --input=FILE, "
                             "or pipe the text in")
    elif files.isdir(path):
        raise InputError(f"--input={path} is a directory, not a text file")
    elif not files.exists(path):
        raise InputError(f"--input={path} does not exist")


def check_output_flag(path):
    """InputError for an --output that cannot be written: closed stdout, a directory, a
    missing parent directory. Checked before the model loads."""
    if path == "-":
        if sys.stdout is None:
            raise InputError("--output=- writes to stdout, but stdout is closed: give "
                             "--output=FILE")
        return
    if files.isdir(path):
        raise InputError(f"--output={path} is a directory: give the path of a file to write")
    if not files.is_local(path):
        return  # a bucket has no directories to check (output_sink makes a file:// one)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError(f"--output={path}: its directory {parent} does not exist")


def _silence_stdout():
    """Points fd 1 at /dev/null, so that the interpreter's last flush of what stdout still
    buffers cannot fail again (and print "Exception ignored ...") after our one line."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


@contextlib.contextmanager
def stdout_sink():
    """sys.stdout, flushed when the block completes; a write that fails (a full disk, a pipe
    whose reader has gone) becomes a WriteError naming stdout, not a traceback."""
    try:
        yield sys.stdout
        sys.stdout.flush()
    except OSError as e:
        error = write_error(e, "stdout")
        if error is None and not isinstance(e, BrokenPipeError):
            raise
        _silence_stdout()
        raise error or WriteError("stdout", "the reader closed the pipe") from None


@contextlib.contextmanager
def output_sink(path):
    """stdout for '-'; else a temporary file beside `path`, renamed to `path` only if the
    block completes, so a failed run leaves no partial output."""
    if path == "-":
        with stdout_sink() as sink:
            yield sink
        return
    if not files.is_local(path):
        files.makedirs(os.path.dirname(path))
    with files.atomic_path(path) as tmp, files.open_file(tmp, "w") as sink:
        yield sink
