"""The one file layer: every path a user gives (local, gs://, any tf.io.gfile scheme) goes
through these functions, plus glob expansion, JSON reads and atomic writes.

Local paths keep the operating system's calls (symlinks, atomic renames); a path with a scheme
(`is_local` is False: gs://, file://, ram://) goes through `tf.io.gfile`, so nothing meant for
a bucket ever lands in a local folder named "gs:".

The commit rule, so a reader never sees half a file or half a directory:
- A file (`write_text`, `write_json`, `atomic_path`) is written to a temporary name beside it
  and renamed to its final name when complete (an object store copies the temporary object).
- A directory (a task directory, an encoder: `write_directory`) locally is built in a temporary
  sibling and swapped in by two renames. An object store has no atomic directory rename, so
  there the directory is written in place, and its `marker` file (task.json, config.json), the
  file every reader needs, is removed first and written last: a directory is complete exactly
  when its marker exists (`is_complete`), and readers and resumes trust no other. While it is
  being rewritten, a `WRITING` file in it says so (a later write may then replace it).
A write that fails removes the temporary, and one that the machine refuses (full disk, file
too large, quota, read-only, no permission) raises `errors.WriteError` naming the final path
(`writing`).

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
from absl import logging

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


def move_directory(source, destination, marker):
    """Moves the finished directory `source` to `destination` (which must not exist) on the
    same file system: locally one atomic rename; at a URL (an object store renames object by
    object, in name order) the files are copied with `marker` (e.g. saved_model.pb) copied
    last, and `source` is removed after: a reader that waits for `marker` never sees a
    partial directory."""
    source, destination = os.fspath(source), os.fspath(destination)
    if is_local(destination):
        os.rename(source, destination)
        return
    marker_path = join(source, marker)
    held = join(os.path.dirname(source.rstrip("/")), f".{marker}.{os.getpid()}")
    tf.io.gfile.rename(marker_path, held, overwrite=True)
    copy_tree(source, destination)
    tf.io.gfile.copy(held, join(destination, marker), overwrite=True)
    tf.io.gfile.remove(held)
    remove_tree(source)


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
    directory = os.fspath(directory)
    if not isdir(directory):
        return []
    removed = []
    for entry in listdir(directory):
        path = join(directory, entry)
        if (_CHECKPOINT_TEMP.fullmatch(entry) and isdir(path)
                and not (is_local(path) and os.path.islink(path))
                and all(name.startswith("part-") for name in listdir(path))):
            remove_tree(path)
            removed.append(path)
    if removed:
        logging.warning("Removed %d unfinished checkpoint(s) of a killed run: %s", len(removed),
                        ", ".join(removed))
    return removed


WRITING = "WRITING"  # in a directory being rewritten in place (see the module docstring)


def is_complete(directory, marker):
    """Whether `write_directory(directory, ..., marker)` finished writing `directory`: its
    marker exists (written last) and no rewrite is under way. A reader or a resume trusts a
    directory only then.

    >>> write_directory("ram://is-complete/best", lambda d: write_text(join(d, "a.txt"), "1"),
    ...                 marker="a.txt")
    'ram://is-complete/best'
    >>> is_complete("ram://is-complete/best", "a.txt"), is_complete("ram://nothing", "a.txt")
    (True, False)
    """
    directory = os.fspath(directory)
    return exists(join(directory, marker)) and not exists(join(directory, WRITING))


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
    """Cleans up after a local `write_directory(path, ...)` that was killed: puts the previous
    directory back if the kill fell between the swap's two renames, and removes temporary
    siblings. Returns the paths removed or restored. (A URL directory has no siblings: a
    killed rewrite leaves it without its marker, so `is_complete` is False until the next
    write.)"""
    path = os.fspath(path)
    if not is_local(path):
        return []
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
    writer made before (it holds `marker`, or `WRITING` from a rewrite that was cut short):
    never replace a directory of other files."""
    if not exists(path):
        return
    if is_local(path) and os.path.commonpath([path, os.getcwd()]) == path:
        raise FileExistsError(f"{path} is the working directory or holds it; write to another "
                              "directory.")
    if not isdir(path):
        raise FileExistsError(f"{path} exists and is not a directory; refusing to replace it.")
    if listdir(path) and not (exists(join(path, marker)) or exists(join(path, WRITING))):
        raise FileExistsError(
            f"{path} exists and holds files but no {marker}, so it was not written here; refusing "
            "to replace it: write to a new or empty directory.")


def write_directory(path, write, marker):
    """Calls `write(directory)` to fill directory `path` anew, replacing any earlier directory
    there (and so its old files); `write` must write through this module or tf.io.gfile where
    `path` may be a URL.

    Locally `directory` is a new temporary sibling, swapped in for `path` when complete: a kill
    or an error (a full disk) at any moment leaves at `path` either the previous complete
    directory or the new one, never a mix; the next call (or `recover_directory`) removes
    the leftovers. At a URL (no atomic directory rename) `directory` is `path` itself, emptied
    first, with `marker` removed first and written last (`write` writes it; if it is written
    earlier, it is written again at the end), so `is_complete` is False from the start
    of the rewrite until it is complete, and a failed write leaves it False.
    An existing non-empty `path` is replaced only if it holds `marker` (the file this writer
    puts in every directory it makes) or `WRITING`, so a directory of other files is never
    lost. One writer per path at a time. Returns the path written (locally the real path).

    >>> import tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "model")
    >>> def write(directory, text="v1"):
    ...     write_text(os.path.join(directory, "info.txt"), text)
    >>> path = write_directory(target, write, marker="info.txt")
    >>> path = write_directory(target, lambda d: write(d, "v2"), marker="info.txt")
    >>> sorted(os.listdir(os.path.dirname(target))), open(os.path.join(target, "info.txt")).read()
    (['model'], 'v2')
    """
    path = os.fspath(path)
    if not is_local(path):
        return _write_in_place(path.rstrip("/"), write, marker)
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


def _write_in_place(path, write, marker):
    """`write_directory` at a URL: WRITING in, marker out, old files out, write, marker last
    (a copy of the one `write` wrote, moved aside while the rest is written), WRITING out."""
    _check_replaceable(path, marker)
    marker_path, writing_path = join(path, marker), join(path, WRITING)
    with writing(path):
        makedirs(path)
        write_text(writing_path, "a rewrite of this directory is under way or was cut short\n")
        remove_tree(marker_path)
        for name in listdir(path):
            if name != WRITING:
                remove_tree(join(path, name))
        write(path)
        if exists(marker_path):  # `write` wrote it: make it the last file written
            held = join(path, f".{marker}.last")
            tf.io.gfile.rename(marker_path, held, overwrite=True)
            tf.io.gfile.rename(held, marker_path, overwrite=True)
        remove_tree(writing_path)
    return path
