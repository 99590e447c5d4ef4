"""File helpers every layer uses: glob expansion and atomic writes.

A final output is written to a temporary name beside it and renamed when complete, so a
reader (or a rerun after a crash) never sees half a file at the final path.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "out.json")
>>> write_json(path, {"a": 1})
>>> expand_patterns(path) == [path]
True
"""

import json
import os

import tensorflow as tf


class NoMatchingFiles(FileNotFoundError):
    """A glob pattern matches no file; `pattern` is the pattern."""

    def __init__(self, pattern):
        super().__init__(f"no files match {pattern!r}")
        self.pattern = pattern


def expand_patterns(patterns):
    """Sorted files (directories skipped) of a glob, a comma-separated string of globs, or a
    list of globs (`tf.io.gfile`, so gs:// works); FileNotFoundError naming a pattern that
    matches no file."""
    if isinstance(patterns, (str, bytes, os.PathLike)):
        patterns = os.fsdecode(patterns).split(",")
    patterns = [os.fsdecode(p).strip() for p in patterns]
    patterns = [p for p in patterns if p]
    if not patterns:
        raise FileNotFoundError("no file pattern given")
    files = []
    for pattern in patterns:
        matches = [m for m in sorted(tf.io.gfile.glob(pattern)) if not tf.io.gfile.isdir(m)]
        if not matches:
            raise NoMatchingFiles(pattern)
        files.extend(matches)
    return files


def write_text(path, text):
    """Writes `text` (UTF-8) to `path` atomically."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json(path, obj):
    """`obj` as indented JSON at `path`, atomically (numpy scalars become floats)."""
    write_text(path, json.dumps(obj, indent=2, default=float) + "\n")


def write_jsonl(path, rows):
    """One JSON object per line at `path`, atomically."""
    write_text(path, "".join(json.dumps(row, ensure_ascii=False, default=float) + "\n"
                             for row in rows))
