"""Keras callbacks of `training.train`: checkpoints + stop, TensorBoard scalars, a progress bar.

All of them count *optimizer updates* ("steps"), not Keras batches: with gradient accumulation
one step is `accumulation_steps` batches, and after a resume the count starts at the restored
step, so logs, TensorBoard and checkpoint names continue where the crashed run stopped.

Fine-tuning (`training.finetuning`, one fit call per epoch) adds `MidEpochCheckpoint`, which
saves inside an epoch every N steps or every few minutes, and `RestoreMetricStates`, which
gives an epoch resumed mid-way the running loss and metrics it had when it was saved.
"""

import math
import os
import sys
import time

import keras
import numpy as np
import tensorflow as tf

from bert_keras.files import writing


class StepClock:
    """Maps Keras' (epoch, batch) to the global step (number of optimizer updates).

    `fit` runs with `steps_per_epoch = steps_per_epoch_updates * accumulation_steps` batches and
    `initial_epoch = initial_step // steps_per_epoch_updates`; the first epoch of a resumed run
    starts at `initial_step` (which need not be a multiple of the epoch).

    >>> clock = StepClock(initial_step=10, initial_epoch=1, batches_per_epoch=8, accumulation_steps=2)
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
