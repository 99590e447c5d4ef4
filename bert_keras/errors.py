"""The one error type for unusable user input (a file, a text, a flag): the tools print its
message and exit with status 1, without a traceback (tracebacks are for bugs).

>>> raise InputError("vocab.txt has 197 entries but the embedding has 7,887 rows")
Traceback (most recent call last):
...
bert_keras.errors.InputError: vocab.txt has 197 entries but the embedding has 7,887 rows

A write that the machine refuses (a full disk, a file larger than the file system or
`ulimit -f` allows, a quota, a read-only file system, no permission) is not a bug either:
`WriteError` names the output and the problem, and the tools print it the same way.

>>> print(write_error(OSError(28, "No space left on device"), "out/vocab.txt"))
out/vocab.txt: cannot write it: No space left on device (free some space, or write elsewhere)
>>> write_error(ValueError("a bug"), "out/vocab.txt") is None
True
"""

import errno

# What a write refused by the machine says: OSError's errno, or the text of TensorFlow's
# file-system errors (which carry no errno), e.g. "out.tfrecord.tmp12; File too large".
WRITE_ERRNOS = {errno.ENOSPC: "No space left on device", errno.EFBIG: "File too large",
                errno.EDQUOT: "Disk quota exceeded", errno.EROFS: "Read-only file system",
                errno.EACCES: "Permission denied", errno.EPERM: "Operation not permitted"}


class InputError(ValueError):
    """A file, text or flag the user gave cannot be used; the message names it and the problem."""


class WriteError(InputError):
    """An output cannot be written (disk full, file too large, quota, read-only file system, no
    permission): the message names the output path and the problem. `problem` is the
    system's words, e.g. "No space left on device"."""

    def __init__(self, path, problem):
        hint = _HINTS.get(problem, "")
        super().__init__(f"{path}: cannot write it: {problem}{hint}")
        self.path, self.problem = path, problem


_HINTS = {"No space left on device": " (free some space, or write elsewhere)",
          "File too large": " (larger than the file system, or `ulimit -f`, allows one file to be)"}


def write_problem(error):
    """The system's words for a write refused by the machine ("File too large", ...), from an
    OSError or a TensorFlow error (or anything with that text); None for any other error."""
    if isinstance(error, WriteError):
        return error.problem
    if isinstance(error, OSError) and error.errno in WRITE_ERRNOS:
        return error.strerror or WRITE_ERRNOS[error.errno]
    if isinstance(error, OSError) and error.errno is not None:
        return None
    text = str(getattr(error, "message", None) or error)
    return next((words for words in WRITE_ERRNOS.values() if words in text), None)


def write_error(error, path):
    """A WriteError naming `path` for a write that the machine refused, else None."""
    if isinstance(error, WriteError):
        return error
    problem = write_problem(error)
    return None if problem is None else WriteError(path, problem)


__all__ = ["InputError", "WriteError", "write_error", "write_problem"]
