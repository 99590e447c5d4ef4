"""File helpers every layer uses: glob expansion, JSON reads and atomic writes.

A final output is written to a temporary name beside it and renamed when complete
(`atomic_path`, `write_text`), so a reader (or a rerun after a crash) never sees half a file
at the final path. A directory (a task directory, an encoder) is built in a temporary sibling
and swapped in the same way (`write_directory`). A write that fails removes the temporary,
and one that the machine refuses (full disk, file too large, quota, read-only, no
permission) raises `errors.WriteError` naming the final path (`writing`).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "out.json")
>>> write_json(path, {"a": 1})
>>> expand_patterns(path) == [path]
True
"""

import contextlib
import json
import os
import re
import shutil

import tensorflow as tf
from absl import logging

from bert_keras.errors import InputError, write_error


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


_JSON_KINDS = {dict: "a JSON object", list: "a JSON list", str: "a JSON string",
               int: "a JSON number", float: "a JSON number", bool: "true or false",
               type(None): "null"}


def read_json(path, expect=dict):
    """The JSON value of file `path` (a config.json, vocab.json, task.json, ...): an InputError
    naming the file and the problem for one that is not UTF-8 JSON (e.g. cut short by an
    interrupted download: the message gives where it breaks off) or whose top-level value is
    not `expect` (dict, list, or None for any).

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "config.json")
    >>> write_text(path, '{"hidden_size": 8, "num_')
    >>> read_json(path)  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    bert_keras.errors.InputError: .../config.json: not valid JSON
    (it breaks off at line 1 column 20...
    """
    with tf.io.gfile.GFile(os.fspath(path), "rb") as f:
        return parse_json(f.read(), path, expect)


def parse_json(data, path, expect=dict):
    """`read_json` of the bytes `data` of file `path` (named in errors)."""
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark is harmless
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text, so not JSON ({e.reason} at byte "
                         f"{e.start}).") from None
    if not text.strip():
        raise InputError(f"{path}: empty, not JSON (an interrupted download or copy?).")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON ({_json_problem(e, text)}).") from None
    if expect is not None and not isinstance(value, expect):
        raise InputError(f"{path}: holds {_JSON_KINDS[type(value)]}, not {_JSON_KINDS[expect]}.")
    return value


def _json_problem(error, text):
    """Where and why JSON parsing stopped; a text that breaks off early says so."""
    where = f"line {error.lineno} column {error.colno}"
    if error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string"):
        return f"it breaks off at {where}: cut short by an interrupted download or copy?"
    return f"{error.msg} at {where}, char {error.pos}"


@contextlib.contextmanager
def writing(path):
    """Runs the block that writes `path`; a write the machine refuses (OSError or TensorFlow
    error: no space, file too large, quota, read-only, no permission) becomes a
    `errors.WriteError` naming `path` (the tools print it in one line). Other errors pass."""
    try:
        yield
    except Exception as e:
        error = write_error(e, path)
        if error is None or error is e:
            raise
        raise error from e


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path` for the block to write; renames it to `path` when
    the block completes, removes it otherwise (under `writing(path)`).

    >>> import tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> with atomic_path(target) as tmp:
    ...     with open(tmp, "w") as f:
    ...         _ = f.write("[PAD]\\n")
    >>> os.listdir(os.path.dirname(target))
    ['vocab.txt']
    """
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with writing(path):
            yield tmp
            os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            _remove(tmp)


def write_text(path, text):
    """Writes `text` (UTF-8) to `path` atomically."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def write_json(path, obj):
    """`obj` as indented JSON at `path`, atomically (numpy scalars become floats)."""
    write_text(path, json.dumps(obj, indent=2, default=float) + "\n")


def write_jsonl(path, rows):
    """One JSON object per line at `path`, atomically."""
    write_text(path, "".join(json.dumps(row, ensure_ascii=False, default=float) + "\n"
                             for row in rows))


_CHECKPOINT_TEMP = re.compile(r".+-\d+_temp")


def remove_checkpoint_leftovers(directory):
    """Removes the `PREFIX-N_temp` directories that TensorFlow's checkpoint writer leaves in
    `directory` when it is killed between writing a checkpoint's shards there and merging them
    into `PREFIX-N.index` / `.data-*` (that checkpoint never became complete: the `checkpoint`
    index file still names the previous one). Only directories holding nothing but the
    writer's `part-*` files are removed.

    Call it when a run takes `directory` over (starts or resumes there): a run owns its
    directory (one run per directory at a time), so no live process is writing them.
    Returns the paths removed; logs one warning naming them."""
    if not os.path.isdir(directory):
        return []
    removed = []
    for entry in sorted(os.listdir(directory)):
        path = os.path.join(directory, entry)
        if (_CHECKPOINT_TEMP.fullmatch(entry) and os.path.isdir(path) and not os.path.islink(path)
                and all(name.startswith("part-") for name in os.listdir(path))):
            shutil.rmtree(path)
            removed.append(path)
    if removed:
        logging.warning("Removed %d unfinished checkpoint(s) of a killed run: %s", len(removed),
                        ", ".join(removed))
    return removed


def _siblings(path):
    """The temporary siblings `write_directory(path)` makes: {kind: [paths]}, kind "tmp"
    (being built) or "old" (the previous directory while the new one is moved in)."""
    parent, name = os.path.split(path)
    pattern = re.compile(rf"\.{re.escape(name)}\.(tmp|old)-\d+")
    found = {"tmp": [], "old": []}
    for entry in sorted(os.listdir(parent)) if os.path.isdir(parent) else []:
        match = pattern.fullmatch(entry)
        if match:
            found[match.group(1)].append(os.path.join(parent, entry))
    return found


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def recover_directory(path):
    """Cleans up after a `write_directory(path, ...)` that was killed: puts the previous
    directory back if the kill fell between the swap's two renames, and removes temporary
    siblings. Returns the paths removed or restored."""
    path = os.path.realpath(path)  # through a symlink: the directory it names
    found = _siblings(path)
    touched = []
    if found["old"] and not os.path.lexists(path):
        os.rename(found["old"].pop(), path)  # the previous complete directory
        touched.append(path)
    for leftover in found["tmp"] + found["old"]:
        _remove(leftover)
        touched.append(leftover)
    return touched


def _check_replaceable(path, marker):
    """FileExistsError unless `path` is absent, an empty directory or a directory this
    writer made before (it holds `marker`): never swap away a directory of other files."""
    if not os.path.lexists(path):
        return
    cwd = os.getcwd()
    if os.path.commonpath([path, cwd]) == path:
        raise FileExistsError(f"{path} is the working directory or holds it; write to another "
                              "directory.")
    if not os.path.isdir(path):
        raise FileExistsError(f"{path} exists and is not a directory; refusing to replace it.")
    if os.listdir(path) and not os.path.exists(os.path.join(path, marker)):
        raise FileExistsError(
            f"{path} exists and holds files but no {marker}, so it was not written here; refusing "
            "to replace it: write to a new or empty directory.")


def write_directory(path, write, marker):
    """Calls `write(tmp)` to fill a new temporary sibling of directory `path`, then swaps it in
    for `path`, replacing any earlier directory there (and so its old files).

    A kill or an error (a full disk) at any moment leaves at `path` either the previous complete
    directory or the new one, never a mix; the next call (or `recover_directory`) removes
    the leftovers. An existing non-empty `path` is replaced only if it holds `marker` (the file
    this writer puts in every directory it makes), so a directory of other files is never lost.
    One writer per path at a time. Returns the real path written.

    >>> import tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "model")
    >>> def write(directory, text="v1"):
    ...     write_text(os.path.join(directory, "info.txt"), text)
    >>> path = write_directory(target, write, marker="info.txt")
    >>> path = write_directory(target, lambda d: write(d, "v2"), marker="info.txt")
    >>> sorted(os.listdir(os.path.dirname(target))), open(os.path.join(target, "info.txt")).read()
    (['model'], 'v2')
    """
    path = os.path.realpath(path)  # through a symlink: the directory it names
    recover_directory(path)
    _check_replaceable(path, marker)
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{name}.tmp-{os.getpid()}")
    os.makedirs(tmp)
    try:
        with writing(path):
            write(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if os.path.lexists(path):
        old = os.path.join(parent, f".{name}.old-{os.getpid()}")
        os.rename(path, old)
        os.rename(tmp, path)  # killed before this line: recover_directory puts `old` back
        _remove(old)
    else:
        os.rename(tmp, path)
    return path
