"""Crash-safe fine-tuning: the checks that a rerun continues the same run in OUTPUT_DIR.

The checkpoints are the trainer's (`loop.train`: OUTPUT_DIR/checkpoints/ckpt-STEP, STEP the
batches trained since the start of the run, with the run's record and position as state).
Every epoch ends with one, and `--checkpoint_every` writes more inside an epoch. The data
order of an epoch depends only on the seed and the epoch (`epoch_seed`), so a rerun of the
same command after a crash (even `kill -9`) restores the checkpoint, skips the batches already
trained and ends with the figures of an uninterrupted run. A finished run deletes its
checkpoints and marks metrics.json `"complete": true`; rerunning it trains nothing.

An output dir belongs to one run: a rerun whose flags (flags.json) or data (a fingerprint of the
features) differ from the run found there raises `ResumeError` naming them.

>>> epoch_seed(42, 0) == epoch_seed(42, 0) != epoch_seed(42, 1)
True
"""

import hashlib
import json

import numpy as np
import tensorflow as tf
from absl import logging

from bert_keras import configs, directories, files
from bert_keras.errors import InputError
from bert_keras.training.loop import CHECKPOINT_SUBDIR

# What a run writes to OUTPUT_DIR besides flags.json; a fresh run removes an earlier run's.
OUTPUTS = ("metrics.json", "eval_predictions.jsonl", "test_predictions.jsonl", "best",
           CHECKPOINT_SUBDIR, "train", "eval")
# Options that may differ between the runs of one output dir (they change no result).
FREE_OPTIONS = ("output_dir", "verbose", "checkpoint_every")


class ResumeError(InputError):
    """OUTPUT_DIR holds a run with other flags or data than the one asked for."""


def epoch_seed(seed, epoch):
    """The shuffling seed of `epoch` (0-based): a function of the run's seed and the epoch only,
    so a resumed run draws the same batches as an uninterrupted one."""
    return int(np.random.SeedSequence([seed, epoch]).generate_state(1)[0])


def data_fingerprint(*feature_dicts):
    """A short hash of the features (train, eval, test): a rerun on other data is a new run."""
    digest = hashlib.sha256()
    for features in feature_dicts:
        for key in sorted(features or {}):
            digest.update(key.encode())
            value = features[key]
            for row in ([value] if isinstance(value, np.ndarray) else value):
                array = np.asarray(row)
                digest.update(repr(row).encode() if array.dtype == object else array.tobytes())
    return digest.hexdigest()[:16]


def _read_json(path):
    """The JSON value of file `path` (at a URL through tf.io.gfile): OSError or ValueError, or
    at a URL a TensorFlow error, for one that cannot be read."""
    with (open(path) if files.is_local(path) else files.open_file(path)) as f:
        return json.load(f)


_UNREADABLE = (OSError, ValueError, tf.errors.OpError)


def completed_record(output_dir):
    """metrics.json of the finished run in `output_dir`, or None."""
    try:
        record = _read_json(files.join(output_dir, "metrics.json"))
    except _UNREADABLE:
        return None
    return record if isinstance(record, dict) and record.get("complete") else None


def has_checkpoint(output_dir):
    return tf.train.latest_checkpoint(files.join(output_dir, CHECKPOINT_SUBDIR)) is not None


def check_same_flags(output_dir, config, what):
    """ResumeError naming the options that differ from OUTPUT_DIR/flags.json (`what`: "an
    unfinished run" or "a complete run", for the message)."""
    path = files.join(output_dir, "flags.json")
    try:
        old = _read_json(path)
    except _UNREADABLE as e:
        raise ResumeError(f"{path}: cannot read the flags of {what} in {output_dir} ({e}); "
                          "pass another --output_dir, or delete this one to start over.") from None
    new = json.loads(json.dumps(config.to_dict(), default=str))
    # An option added since the run was written is taken at its default (the run ran without
    # it): rerunning a run of an older version is not refused for it. One the run has no more
    # (another task type's, which older versions recorded too) is not compared.
    defaults = json.loads(json.dumps(configs.option_defaults(type(config)), default=str))
    changed = [k for k in sorted(new)
               if k not in FREE_OPTIONS and old.get(k, defaults.get(k)) != new[k]]
    if changed:
        listed = ", ".join(f"--{k}={new.get(k)} (was {old.get(k)})" for k in changed)
        raise ResumeError(
            f"{output_dir} holds {what} with other flags: {listed} (see {path}). Rerun with its "
            "flags to resume it, or pass another --output_dir (or delete this one) to start a new "
            "run.")


def check_same_data(output_dir, what, recorded, fingerprint):
    if recorded != fingerprint:
        raise ResumeError(
            f"{output_dir} holds {what} on other data: the features of the train/eval/test data "
            f"(or the --teacher_dir model) differ (fingerprint {fingerprint}, was {recorded}). "
            "Pass another --output_dir (or delete this one) to start a new run.")


def remove_earlier_outputs(output_dir):
    """Removes the metrics, predictions, best/ and checkpoints of an earlier run, so they cannot
    be taken for this run's; logs one line naming them."""
    directories.recover_directory(files.join(output_dir, "best"))
    present = set(files.listdir(output_dir)) if files.isdir(output_dir) else set()
    removed = [name for name in OUTPUTS if name in present]
    for name in removed:
        files.remove_tree(files.join(output_dir, name))
    if removed:
        logging.warning("A new run in %s: removed the outputs of an earlier run there: %s",
                        output_dir, ", ".join(removed))
    return removed
