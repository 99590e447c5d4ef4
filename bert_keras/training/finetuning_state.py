"""Crash-safe fine-tuning: the resumable state of a run in OUTPUT_DIR, and the checks that a
rerun continues the same run.

`TrainingCheckpoint.save` writes OUTPUT_DIR/checkpoints/ckpt-STEP (model + optimizer + the
dropout layers' seed states, and the run's state as JSON) with a `tf.train.CheckpointManager`,
whose index file is replaced only once the files are complete; STEP counts optimizer steps
(batches) from the start of the run. Every epoch ends with one, and `--checkpoint_every`
writes more inside an epoch. The state holds the position in the data: the epochs done and the
batches done of the next one (0 at an epoch's end), with the epoch's running loss and metrics.
The data order of an epoch depends only on the seed and the epoch (`epoch_seed`), so a rerun of
the same command after a crash (even `kill -9`) restores the checkpoint, skips the batches of
the epoch already trained and ends with the figures of an uninterrupted run. A finished run
deletes its checkpoints and marks metrics.json `"complete": true`; rerunning it trains nothing.

An output dir belongs to one run: a rerun whose flags (flags.json) or data (a fingerprint of the
features) differ from the run found there raises `ResumeError` naming them.

>>> epoch_seed(42, 0) == epoch_seed(42, 0) != epoch_seed(42, 1)
True
"""

import hashlib
import json
import os
import shutil

import numpy as np
import tensorflow as tf
from absl import logging

from bert_keras import configs
from bert_keras.errors import InputError
from bert_keras.files import recover_directory, remove_checkpoint_leftovers, writing

CHECKPOINT_SUBDIR = "checkpoints"
# What a run writes to OUTPUT_DIR besides flags.json; a fresh run removes an earlier run's.
OUTPUTS = ("metrics.json", "eval_predictions.jsonl", "test_predictions.jsonl", "best",
           CHECKPOINT_SUBDIR)
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


def completed_record(output_dir):
    """metrics.json of the finished run in `output_dir`, or None."""
    try:
        with open(os.path.join(output_dir, "metrics.json")) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("complete") else None


def has_checkpoint(output_dir):
    return tf.train.latest_checkpoint(os.path.join(output_dir, CHECKPOINT_SUBDIR)) is not None


def check_same_flags(output_dir, config, what):
    """ResumeError naming the options that differ from OUTPUT_DIR/flags.json (`what`: "an
    unfinished run" or "a complete run", for the message)."""
    path = os.path.join(output_dir, "flags.json")
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError) as e:
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
    recover_directory(os.path.join(output_dir, "best"))
    removed = [name for name in OUTPUTS if os.path.lexists(os.path.join(output_dir, name))]
    for name in removed:
        path = os.path.join(output_dir, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    if removed:
        logging.warning("A new run in %s: removed the outputs of an earlier run there: %s",
                        output_dir, ", ".join(removed))
    return removed


def _seed_states(model):
    """The dropout layers' seed-generator states: variables of the model that are not weights,
    which a checkpoint of the model alone leaves out (resumed dropout masks would differ)."""
    weights = {id(w) for w in model.weights}
    return [v for v in model.variables if id(v) not in weights]


class TrainingCheckpoint:
    """OUTPUT_DIR/checkpoints/ckpt-STEP: model, optimizer, seed states and a JSON state dict;
    only the latest is kept. The model's optimizer must be built (its slots exist before a
    restore)."""

    def __init__(self, output_dir, model):
        self.directory = os.path.join(output_dir, CHECKPOINT_SUBDIR)
        self.state = tf.Variable("", dtype=tf.string, trainable=False)
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer,
                                              seed_states=_seed_states(model), state=self.state)
        self.manager = tf.train.CheckpointManager(self.checkpoint, self.directory, max_to_keep=1)
        remove_checkpoint_leftovers(self.directory)  # a save that a kill interrupted

    def restore(self):
        """The state dict saved with the latest checkpoint (model and optimizer restored), or
        None when there is none."""
        path = self.manager.latest_checkpoint
        if path is None:
            return None
        try:
            self.checkpoint.restore(path).assert_existing_objects_matched()
        except (AssertionError, ValueError, tf.errors.OpError) as e:
            raise ResumeError(f"{path}: cannot resume from this checkpoint: it does not match "
                              f"the model of these flags ({str(e).splitlines()[0]}). Delete "
                              f"{self.directory} to start over.") from None
        return dict(json.loads(self.state.numpy().decode()), path=path)

    def save(self, step, state):
        """Saves the model and optimizer after `step` (optimizer steps of the run so far) with
        `state` (JSON-able)."""
        self.state.assign(json.dumps(state, default=float))
        try:  # a full disk (WriteError) or another failure: the previous one stays the latest
            with writing(os.path.join(self.directory, f"ckpt-{step}")):
                self.manager.save(checkpoint_number=step)
        except tf.errors.OpError as e:
            raise OSError(f"{self.directory}: cannot write the checkpoint of step {step}: "
                          f"{e.message}") from None

    def delete(self):
        shutil.rmtree(self.directory, ignore_errors=True)
