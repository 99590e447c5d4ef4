"""Directories written whole, so a reader never sees half of one: a task directory, an
encoder (`write_directory`), an export's version (`move_directory`), and the leftovers of a
killed checkpoint write (`remove_checkpoint_leftovers`). Paths go through `files`.

A directory locally is built in a temporary sibling and swapped in by two renames. An object
store has no atomic directory rename, so there the directory is written in place, and its
`marker` file (task.json, config.json), the file every reader needs, is removed first and
written last: a directory is complete exactly when its marker exists (`is_complete`), and
readers and resumes trust no other. While it is being rewritten, a `WRITING` file in it says
so (a later write may then replace it).
"""

import os
import re
import shutil

import tensorflow as tf
from absl import logging

from bert_keras.files import (
    copy_tree,
    exists,
    is_local,
    isdir,
    join,
    listdir,
    makedirs,
    remove_tree,
    write_text,
    writing,
)


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
        remove_tree(leftover)
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
    there (and so its old files); `write` must write through `files` or tf.io.gfile where
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
        remove_tree(old)
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
