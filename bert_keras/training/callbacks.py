"""Keras callbacks of `training.train`: checkpoints + stop, TensorBoard scalars, a progress bar.

All of them count *optimizer updates* ("steps"), not Keras batches: with gradient accumulation
one step is `accumulation_steps` batches, and after a resume the count starts at the restored
step, so logs, TensorBoard and checkpoint names continue where the crashed run stopped.

Fine-tuning (`training.finetuning`, one fit call per epoch) adds `MidEpochCheckpoint`, which
saves inside an epoch every N steps or every few minutes, and `RestoreMetricStates`, which
gives an epoch resumed mid-way the running loss and metrics it had when it was saved.

ELECTRA pretraining adds `StuckDiscriminatorReport`, which warns once when the discriminator
sits at the "nothing is replaced" baseline (`StuckDiscriminatorDetector`).
"""

import math
import os
import sys
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_keras.files import writing


class StepClock:
    """Maps Keras' (epoch, batch) to the global step (number of optimizer updates).

    `fit` runs with `steps_per_epoch = steps_per_epoch_updates * accumulation_steps` batches and
    `initial_epoch = initial_step // steps_per_epoch_updates`; the first epoch of a resumed run
    starts at `initial_step` (which need not be a multiple of the epoch).

    >>> clock = StepClock(initial_step=10, initial_epoch=1, batches_per_epoch=8,
    ...                   accumulation_steps=2)
    >>> clock.step(epoch=1, batch=1), clock.step(epoch=2, batch=7)
    (11, 18)
    """

    def __init__(self, initial_step, initial_epoch, batches_per_epoch, accumulation_steps):
        self.initial_step = initial_step
        self.initial_epoch = initial_epoch
        self.batches_per_epoch = batches_per_epoch
        self.accumulation_steps = accumulation_steps

    def step(self, epoch, batch):
        batches = (epoch - self.initial_epoch) * self.batches_per_epoch + batch + 1
        return self.initial_step + batches // self.accumulation_steps


class _StepCallback(keras.callbacks.Callback):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        self.epoch = clock.initial_epoch

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def step_of(self, batch):
        return self.clock.step(self.epoch, batch)


def _floats(values):
    return {k: float(np.asarray(v)) for k, v in (values or {}).items() if np.size(v) == 1}


class CheckpointAndStop(_StepCallback):
    """Saves every `checkpoint_every` steps and at `train_steps`; stops at `train_steps` or on a
    non-finite loss, which it records in `self.diverged = (step, loss)` without saving.

    It reads the metrics with `model.get_metrics_result()` (in cross-replica context: the values
    over all replicas and workers, the same on every worker, so all workers stop together) and
    keeps them in `self.values` for the other callbacks.
    """

    def __init__(self, clock, manager, step_variable, checkpoint_every, train_steps):
        super().__init__(clock)
        self.manager = manager
        self.step_variable = step_variable
        self.checkpoint_every = checkpoint_every
        self.train_steps = train_steps
        self.diverged = None
        self.values = {}
        self.last_step = clock.initial_step

    def on_train_batch_end(self, batch, logs=None):
        step = self.step_of(batch)
        if step == self.last_step:  # inside an accumulation cycle
            return
        self.last_step = step
        self.values = _floats(self.model.get_metrics_result())
        loss = self.values.get("loss")
        if loss is not None and not math.isfinite(loss):
            self.diverged = (step, loss)
            self.model.stop_training = True
            return
        if step % self.checkpoint_every == 0 or step >= self.train_steps:
            self.step_variable.assign(step)
            # A refused write is a WriteError: TF's OutOfRangeError for "File too large" would
            # otherwise end model.fit as if the data had run out, and the run go on.
            with writing(os.path.join(self.manager.directory, f"ckpt-{step}")):
                self.manager.save(checkpoint_number=step)
        if step >= self.train_steps:
            self.model.stop_training = True


_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars"))


def write_scalar(name, value):
    """A TensorBoard scalar, as `tf.summary.scalar` writes it, without needing the tensorboard
    package (TF's `tf.summary.scalar` raises TBNotInstalledError without it)."""
    tf.summary.write(name, tf.constant(value, tf.float32), metadata=_SCALAR_METADATA)


def current_learning_rate(optimizer):
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate))


class ScalarLogger(_StepCallback):
    """Every `log_every` steps: writes the metrics (means over the window), the learning rate and
    examples/s to a tf.summary writer, then resets the metrics so the next window starts fresh.
    `self.latest` holds the last window's values (for the progress bar and the caller)."""

    def __init__(self, clock, controller, writer, log_every, examples_per_step):
        super().__init__(clock)
        self.controller = controller
        self.writer = writer
        self.log_every = log_every
        self.examples_per_step = examples_per_step
        self.latest = {}
        self.history = []  # (step, values) per window
        self._window_start = (clock.initial_step, None)

    def on_train_begin(self, logs=None):
        self._window_start = (self.clock.initial_step, time.time())

    def on_train_batch_end(self, batch, logs=None):
        step = self.step_of(batch)
        at_boundary = (batch + 1) % self.clock.accumulation_steps == 0
        if not at_boundary or step % self.log_every and not self.model.stop_training:
            return
        start_step, start_time = self._window_start
        if step <= start_step:
            return
        now = time.time()
        values = dict(self.controller.values)
        values["learning_rate"] = current_learning_rate(self.model.optimizer)
        values["examples_per_second"] = (
            (step - start_step) * self.examples_per_step / max(now - start_time, 1e-9)
        )
        with self.writer.as_default(step=step):
            for name, value in values.items():
                write_scalar(name, value)
        self.writer.flush()
        self.latest = values
        self.history.append((step, values))
        self._window_start = (step, now)
        self.model.reset_metrics()

    def on_train_end(self, logs=None):
        self.writer.flush()


class ProgressBar(_StepCallback):
    """One line per step on a terminal (redrawn in place), else one line per `log_every` steps:
    `step 120/1000 [===>......] 12% 3.1 steps/s ETA 4m44s loss 5.93 masked_lm_accuracy 0.12`."""

    def __init__(self, clock, train_steps, controller, logger, log_every, stream=None, width=30):
        super().__init__(clock)
        self.controller = controller
        self.train_steps = train_steps
        self.logger = logger
        self.log_every = log_every
        self.stream = stream or sys.stdout
        self.width = width
        self.dynamic = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._start = None
        self._last = None

    def on_train_begin(self, logs=None):
        self._start = time.time()

    def on_train_batch_end(self, batch, logs=None):
        step = self.step_of(batch)
        if step == self._last:
            return
        self._last = step
        if not self.dynamic and step % self.log_every and step < self.train_steps:
            return
        done = step - self.clock.initial_step
        rate = done / max(time.time() - self._start, 1e-9)
        eta = (self.train_steps - step) / rate if rate > 0 else float("inf")
        fraction = step / self.train_steps
        filled = int(self.width * fraction)
        bar = "=" * filled + (">" if filled < self.width else "") + "." * (self.width - filled - 1)
        values = dict(self.controller.values, **{
            k: v for k, v in self.logger.latest.items() if k == "examples_per_second"})
        metrics = " ".join(f"{k} {v:.4g}" for k, v in values.items())
        line = (f"step {step}/{self.train_steps} [{bar}] {100 * fraction:3.0f}% "
                f"{rate:.3g} steps/s ETA {_duration(eta)} {metrics}")
        if self.dynamic:
            self.stream.write("\r" + line[:200].ljust(200))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def on_train_end(self, logs=None):
        if self.dynamic:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds):
    if not math.isfinite(seconds):
        return "?"
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


# -- fine-tuning: checkpoints inside an epoch ---------------------------------------------------

def metric_states(model):
    """The values of `model`'s metric variables (the running sums and counts of the epoch's loss
    and metrics) as JSON-able lists, in `model.metrics_variables` order; float32 values
    round-trip through JSON exactly."""
    return [keras.ops.convert_to_numpy(v).tolist() for v in model.metrics_variables]


class MidEpochCheckpoint(keras.callbacks.Callback):
    """Fine-tuning: calls `save(batches_done, metric_states)` inside an epoch, so that a kill
    loses minutes of work instead of the epoch.

    One fit call trains one epoch of `batches_per_epoch` batches (one batch is one optimizer
    step), from batch `first_batch` (the batches a resumed run skips). The save is due after the
    epoch's `batches_done`-th batch when `every_steps` > 0 and the global step
    `epoch_start_step + batches_done` is a multiple of it (the same steps whether or not the run
    was resumed), or with `every_steps` = 0 when `every_seconds` of `clock()` passed since the
    fit began or the last save. Never after the last batch: the epoch's own checkpoint follows.
    """

    def __init__(self, save, *, batches_per_epoch, first_batch=0, epoch_start_step=0,
                 every_steps=0, every_seconds=600.0, clock=time.monotonic):
        super().__init__()
        self.save = save
        self.batches_per_epoch = batches_per_epoch
        self.first_batch = first_batch
        self.epoch_start_step = epoch_start_step
        self.every_steps = every_steps
        self.every_seconds = every_seconds
        self.clock = clock
        self._last_save = None

    def on_train_begin(self, logs=None):
        self._last_save = self.clock()

    def on_train_batch_end(self, batch, logs=None):
        batches_done = self.first_batch + batch + 1
        if batches_done >= self.batches_per_epoch or not self._due(batches_done):
            return
        self.save(batches_done, metric_states(self.model))
        self._last_save = self.clock()

    def _due(self, batches_done):
        if self.every_steps > 0:
            return (self.epoch_start_step + batches_done) % self.every_steps == 0
        return self.clock() - self._last_save >= self.every_seconds


class RestoreMetricStates(keras.callbacks.Callback):
    """Sets the model's metric variables to `states` (of `metric_states`) when the epoch begins,
    after `fit` has reset them: the loss and metrics of an epoch resumed mid-way then average
    over all its batches, as in an uninterrupted run."""

    def __init__(self, states):
        super().__init__()
        self.states = states

    def on_epoch_begin(self, epoch, logs=None):
        variables = self.model.metrics_variables
        if len(variables) != len(self.states):
            raise ValueError(f"the checkpoint holds {len(self.states)} metric values, the model "
                             f"has {len(variables)} metric variables")
        for variable, value in zip(variables, self.states):
            variable.assign(np.asarray(value, dtype=variable.dtype))


# -- ELECTRA: a discriminator stuck at the all-original baseline --------------------------------

def binary_entropy(p):
    """The loss (nats) of always predicting probability `p` for labels that are 1 with
    frequency `p`: the discriminator loss of the best constant guess."""
    p = min(max(p, 1e-7), 1 - 1e-7)
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


class StuckDiscriminatorDetector:
    """Reads ELECTRA's logging windows and says, once, when the discriminator has sat at the
    "nothing is replaced" baseline for `windows` windows in a row: it finds (almost) none of
    the replaced tokens (`replaced_recall` <= `max_recall`) and its loss is within
    `loss_margin` (relative) of the base-rate loss, the binary entropy of the window's
    `replaced_fraction`. Such a discriminator learns nothing from context (docs/variants.md).

    >>> detector = StuckDiscriminatorDetector(windows=2)
    >>> stuck = {"replaced_recall": 0.0, "discriminator_loss": 0.39, "replaced_fraction": 0.135}
    >>> detector.observe(100, stuck) is None
    True
    >>> detector.observe(200, stuck).split(":")[0]
    'The ELECTRA discriminator is stuck at the all-original baseline'
    >>> detector.observe(300, stuck) is None  # said once
    True
    """

    NEEDS = ("replaced_recall", "discriminator_loss", "replaced_fraction")

    def __init__(self, windows=3, max_recall=0.01, loss_margin=0.02, advice=""):
        self.windows = windows
        self.max_recall = max_recall
        self.loss_margin = loss_margin
        self.advice = advice
        self.stuck_steps = []  # the steps of the current run of stuck windows
        self.warned = False

    def observe(self, step, values):
        """The warning (one line) the first time `windows` stuck windows follow each other,
        else None. `values`: one window's metrics, as logged."""
        if self.warned or not all(name in values for name in self.NEEDS):
            return None
        if not self.at_baseline(values):
            self.stuck_steps = []
            return None
        self.stuck_steps.append(step)
        if len(self.stuck_steps) < self.windows:
            return None
        self.warned = True
        return self.message(values)

    def at_baseline(self, values):
        base_rate_loss = binary_entropy(values["replaced_fraction"])
        return (values["replaced_recall"] <= self.max_recall
                and values["discriminator_loss"] >= (1 - self.loss_margin) * base_rate_loss)

    def message(self, values):
        base_rate_loss = binary_entropy(values["replaced_fraction"])
        return (
            "The ELECTRA discriminator is stuck at the all-original baseline: for "
            f"{len(self.stuck_steps)} logging windows (steps {self.stuck_steps[0]}-"
            f"{self.stuck_steps[-1]}) it found {values['replaced_recall']:.1%} of the replaced "
            f"tokens and its loss {values['discriminator_loss']:.4f} is within "
            f"{self.loss_margin:.0%} of the base-rate loss {base_rate_loss:.4f} (always "
            f"predicting the replaced fraction {values['replaced_fraction']:.3f}), so it learns "
            f"nothing from context. {self.advice}").strip()


class StuckDiscriminatorReport(keras.callbacks.Callback):
    """Feeds every logging window of an ELECTRA run to a `StuckDiscriminatorDetector` and
    logs its warning (absl). A window's values are the logs of its last step: the running
    means since `ScalarLogger` last reset the metrics, the figures it writes to TensorBoard.
    The step is the optimizer's update count (restored on resume, as the step clock is)."""

    def __init__(self, log_every, detector=None, warn=None):
        super().__init__()
        self.log_every = log_every
        self.detector = detector or StuckDiscriminatorDetector()
        self.warn = warn or logging.warning
        self._last_step = None

    def on_train_batch_end(self, batch, logs=None):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if step == self._last_step or step % self.log_every:
            return
        self._last_step = step
        message = self.detector.observe(step, _floats(logs))
        if message:
            self.warn(message)
