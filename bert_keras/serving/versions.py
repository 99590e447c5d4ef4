"""Where an export goes and how its versions are named: BASE/NAME/VERSION/, VERSION = 1, 2, ...
The one module that knows it, for the export (the next free version, its staging directory)
and the serving client (tools/predict.py: the newest version).

    BASE/NAME/                 the served model (NAME: `default_model_name` of the source)
        1/, 2/, ...            complete versions (TF Serving loads the highest)
        .tmp-VERSION-PID/      a version being written by process PID (ignored by TF Serving)

>>> import os, tempfile
>>> base = tempfile.mkdtemp()
>>> os.makedirs(os.path.join(base, "qa", "1")); os.makedirs(os.path.join(base, "qa", "7"))
>>> next_version(os.path.join(base, "qa")), newest_version_dir(os.path.join(base, "qa"))[-4:]
(8, 'qa/7')
>>> default_model_name("runs/paraphrase/best")
'paraphrase'
"""

import os
import re
import shutil

from absl import logging

from bert_keras import files
from bert_keras.errors import InputError

RUN_OUTPUTS = ("best", "final", "encoder", "export")  # named after their run's directory
_STAGING = re.compile(r"\.tmp-(\d+)-(\d+)")


def versions(model_dir):
    """The complete version numbers in `model_dir`, ascending ([] if none, or no directory)."""
    if not files.isdir(model_dir):
        return []
    return sorted(int(n.rstrip("/")) for n in files.listdir(model_dir)
                  if n.rstrip("/").isdigit())


def next_version(model_dir):
    """1 + the largest integer directory name in `model_dir` (1 if none)."""
    return max(versions(model_dir), default=0) + 1


def newest_version_dir(model_dir):
    """MODEL_DIR/VERSION of its highest version; None if it has none."""
    found = versions(model_dir)
    return files.join(model_dir, str(found[-1])) if found else None


def default_model_name(path):
    """The served name of a source directory: its own name, its parent's for a run's
    best/, final/, encoder/ or export/."""
    path = os.fspath(path)
    parts = (os.path.normpath(os.path.abspath(path)).split(os.sep) if files.is_local(path)
             else path.rstrip("/").split("/"))
    name = parts[-1]
    if name in RUN_OUTPUTS and len(parts) > 1:
        name = parts[-2]
    return name


def check_export_base(base_dir, model_name, name="base_dir"):
    """InputError unless BASE_DIR/MODEL_NAME can be made a directory: no part of it that
    exists is a file. Checked before any work, so that a base path naming a file fails in one
    line naming `name` (the flag) and the path, not in TensorFlow's makedirs after the export.
    Local paths only (a gs:// path is left to the file system)."""
    base_dir = os.fspath(base_dir)
    if not files.is_local(base_dir):
        return
    path = os.path.abspath(os.path.join(base_dir, model_name))
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)  # the deepest part that exists
    if not os.path.isdir(path):
        raise InputError(f"{name}={base_dir}: {path} is a file, not a directory; the export "
                         f"goes to {os.path.join(base_dir, model_name, 'VERSION')}")


def staging_dir(model_dir, version):
    """Where this process writes `version` before renaming it into place."""
    return files.join(model_dir, f".tmp-{version}-{os.getpid()}")


def remove_abandoned_staging(model_dir):
    """Deletes the staging directories of exports whose process is gone (killed mid-export:
    TF Serving ignores them, but they hold a whole model each). Local paths only: a process
    id means nothing on another machine's file system."""
    if not files.is_local(model_dir):
        return
    for name in os.listdir(model_dir):
        match = _STAGING.fullmatch(name)
        if not match:
            continue
        try:
            os.kill(int(match.group(2)), 0)
            continue  # still exporting
        except ProcessLookupError:
            pass
        except PermissionError:  # alive, another user's
            continue
        logging.info("Removing %s, left by an export that did not finish.", name)
        shutil.rmtree(os.path.join(model_dir, name), ignore_errors=True)
