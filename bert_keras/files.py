"""The one file layer: every path a user gives (local, gs://, any tf.io.gfile scheme) goes
through these functions, plus glob expansion, JSON reads and atomic writes.

Local paths keep the operating system's calls (symlinks, atomic renames); a path with a scheme
(`is_local` is False: gs://, file://, ram://) goes through `tf.io.gfile`, so nothing meant for
a bucket ever lands in a local folder named "gs:".

The commit rule, so a reader never sees half a file: a file (`write_text`, `write_json`,
`atomic_path`) is written to a temporary name beside it and renamed to its final name when
complete (an object store copies the temporary object). A write that fails removes the
temporary, and one that the machine refuses (full disk, file too large, quota, read-only, no
permission) raises `errors.WriteError` naming the final path (`writing`). Directories written
whole (a task directory, an encoder, an export): `directories`.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "out.json")
>>> write_json(path, {"a": 1})
>>> expand_patterns(path) == [path]
True
>>> write_json("ram://files-doc/out.json", {"a": 1})
>>> listdir("ram://files-doc"), read_json("ram://files-doc/out.json")
(['out.json'], {'a': 1})
"""

import contextlib
import json
import os
import re
import shutil

import tensorflow as tf

from bert_keras.errors import InputError, write_error

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_local(path):
    """True for a path of this machine's file system (no scheme such as gs:// or file://)."""
    return not _SCHEME.match(os.fspath(path))


def join(*parts):
    """`parts` joined with "/" (os.path.join, which keeps a URL's scheme and bucket)."""
    return os.path.join(*(os.fspath(p) for p in parts))


def exists(path):
    """Whether file or directory `path` exists."""
    path = os.fspath(path)
    return os.path.exists(path) if is_local(path) else tf.io.gfile.exists(path)


def isdir(path):
    """Whether `path` is a directory."""
    path = os.fspath(path)
    return os.path.isdir(path) if is_local(path) else tf.io.gfile.isdir(path)


def makedirs(path):
    """Creates directory `path` and its parents; nothing if it exists."""
    path = os.fspath(path)
    if is_local(path):
        os.makedirs(path, exist_ok=True)
    else:
        tf.io.gfile.makedirs(path)


def listdir(path):
    """The sorted entry names of directory `path` (an object store's "name/" without "/")."""
    path = os.fspath(path)
    names = os.listdir(path) if is_local(path) else tf.io.gfile.listdir(path)
    return sorted({name.rstrip("/") for name in names})


def file_size(path):
    """The size in bytes of file `path`."""
    path = os.fspath(path)
    return os.path.getsize(path) if is_local(path) else tf.io.gfile.stat(path).length


def open_file(path, mode="r"):
    """`path` opened (tf.io.gfile.GFile: text modes read and write UTF-8 str)."""
    return tf.io.gfile.GFile(os.fspath(path), mode)


def remove_tree(path):
    """Removes file or directory `path` with everything in it; nothing if it is absent."""
    path = os.fspath(path)
    if is_local(path):
        if os.path.lexists(path):
            _remove(path)
    elif tf.io.gfile.isdir(path):
        tf.io.gfile.rmtree(path)
    elif tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def copy_tree(source, destination):
    """Copies directory `source` into `destination` (created; files there are overwritten),
    across file systems (a local directory to gs:// and back)."""
    source, destination = os.fspath(source), os.fspath(destination)
    makedirs(destination)
    for name in listdir(source):
        src, dst = join(source, name), join(destination, name)
        if isdir(src):
            copy_tree(src, dst)
        else:
            tf.io.gfile.copy(src, dst, overwrite=True)


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


class KnownDirectory(str):
    """A directory path that carries the JSON files already read from it ({name: value}), so
    that every reader it is handed down to (tokenizer, encoder, heads: `directory_json`) takes
    them instead of reading the file again: an export reads a transformers directory's
    config.json once. Anywhere else it is the plain path it equals.

    >>> path = KnownDirectory("ckpt", {"config.json": {"model_type": "bert"}})
    >>> directory_json(path, "config.json"), path == "ckpt", join(path, "x")
    ({'model_type': 'bert'}, True, 'ckpt/x')
    """

    def __new__(cls, path, json_files=None):
        known = super().__new__(cls, os.fspath(path))
        known.json_files = dict(json_files or {})
        return known


def directory_json(directory, name, expect=dict):
    """`read_json` of `directory`/`name`, or the value a `KnownDirectory` carries for it."""
    known = getattr(directory, "json_files", {})
    if name in known:
        return known[name]
    return read_json(join(directory, name), expect)


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
    """Yields a temporary path beside `path` for the block to write (with `open_file` where
    `path` may be a URL); renames it to `path` when the block completes, removes it otherwise
    (under `writing(path)`). At a URL the parent directory is made if missing.

    >>> import tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> with atomic_path(target) as tmp:
    ...     with open(tmp, "w") as f:
    ...         _ = f.write("[PAD]\\n")
    >>> os.listdir(os.path.dirname(target))
    ['vocab.txt']
    """
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with writing(path):
            if not is_local(path):  # a bucket needs no parent; file:// does
                makedirs(os.path.dirname(path))
            yield tmp
            if is_local(path):
                os.replace(tmp, path)
            else:
                tf.io.gfile.rename(tmp, path, overwrite=True)
    finally:
        if is_local(path) and os.path.lexists(tmp):
            _remove(tmp)
        elif not is_local(path) and tf.io.gfile.exists(tmp):
            tf.io.gfile.remove(tmp)


def write_text(path, text):
    """Writes `text` (UTF-8) to `path` atomically."""
    with atomic_path(path) as tmp, open_file(tmp, "wb") as f:
        f.write(text.encode("utf-8"))


def write_json(path, obj):
    """`obj` as indented JSON at `path`, atomically (numpy scalars become floats)."""
    write_text(path, json.dumps(obj, indent=2, default=float) + "\n")


def write_jsonl(path, rows):
    """One JSON object per line at `path`, atomically."""
    write_text(path, "".join(json.dumps(row, ensure_ascii=False, default=float) + "\n"
                             for row in rows))

