"""A run's output directory that a failed run does not leave behind empty.

A run that fails before it has trained anything (bad input found after the directory was
made, Ctrl-C during the first epoch) should leave the file system as it found it:
`run_finetuning` and `run_pretraining` run their work under `removed_if_failed(path,
records)`, which, if the work raises, removes `path` when this run created it and it still
holds nothing of value: only empty directories and the run's own records (`records`: relative
paths such as "flags.json", which a rerun writes again, or patterns such as
"train/events.out.tfevents.*": the TensorBoard logs of steps that no checkpoint kept). A
directory that existed before, or that holds anything else (a checkpoint, a prediction file,
a user's file), is never touched.

Example:
>>> import os, tempfile
>>> run_dir = os.path.join(tempfile.mkdtemp(), "runs", "first")
>>> try:
...     with removed_if_failed(run_dir, records=("flags.json",)):
...         os.makedirs(run_dir)
...         open(os.path.join(run_dir, "flags.json"), "w").close()
...         raise ValueError("bad data")
... except ValueError:
...     pass
>>> os.path.exists(os.path.dirname(run_dir))
False
"""

import contextlib
import fnmatch
import os

import tensorflow as tf

from bert_keras import files


def holds_nothing_of_value(path, records):
    """True if the directory `path` holds only empty directories and files whose path
    relative to it is in `records` or matches a pattern there (fnmatch: "train/*.v2"); no
    symbolic link, nothing else. `path` may be a URL."""
    local = files.is_local(path)
    for parent, dirnames, filenames in (os.walk(path) if local else tf.io.gfile.walk(path)):
        if any(_is_link(files.join(parent, name)) for name in dirnames):
            return False
        for name in filenames:
            file = files.join(parent, name)
            relative = os.path.relpath(file, path) if local else file[len(path):].lstrip("/")
            if not any(fnmatch.fnmatchcase(relative, r) for r in records) or _is_link(file):
                return False
    return True


@contextlib.contextmanager
def removed_if_failed(path, records=()):
    """Runs the block; if it raises (SystemExit and KeyboardInterrupt included) and the
    directory `path` did not exist before the block, removes it, and the parents of it that the
    block made, when they hold nothing of value (`holds_nothing_of_value`). The exception
    always propagates. At a URL (a bucket has no real parent directories) only `path` is
    considered."""
    path = os.fspath(path)
    local = files.is_local(path)
    path = os.path.abspath(path) if local else path.rstrip("/")
    if local:
        created = _first_missing(path)
    else:
        created = None if files.exists(path) else path
    try:
        yield
    except BaseException:
        if created is not None and _removable(created, path, set(records)):
            try:
                files.remove_tree(created)
            except (OSError, tf.errors.OpError):  # best effort: the run's error is the news
                pass
        raise


def _first_missing(path):
    """The outermost directory of `path` that does not exist yet (what a makedirs of `path`
    would create), or None if `path` exists."""
    missing = None
    while not os.path.lexists(path):
        missing, path = path, os.path.dirname(path)
        if path == missing:  # the root
            break
    return missing


def _removable(created, path, records):
    """Whether `created` (a directory this run made, `path` or one of its parents) holds
    nothing but the empty directories down to `path` and, in `path`, nothing of value."""
    if not files.isdir(created) or _is_link(created):
        return False
    if not files.isdir(path) or _is_link(path):  # the run did not get that far
        return holds_nothing_of_value(created, set())
    if created != path:
        records = {os.path.relpath(os.path.join(path, r), created) for r in records}
    return holds_nothing_of_value(created, records)


def _is_link(path):
    """Whether `path` is a symbolic link (a URL has none)."""
    return files.is_local(path) and os.path.islink(path)
