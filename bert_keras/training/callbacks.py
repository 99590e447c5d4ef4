"""The Keras callbacks of `loop.train`: the run's driver (checkpoints, windows, evaluations,
stop) and its progress line.

Both count *optimizer updates* ("steps"), not Keras batches: with gradient accumulation one
step is `accumulation` batches, and after a resume the count starts at the restored step, so
logs, TensorBoard and checkpoint names continue where the crashed run stopped.
"""

import json
import math
import sys
import time

import keras
import numpy as np
import tensorflow as tf

from bert_keras import files
from bert_keras.metrics.logs import scalar_floats


def now():
    """Seconds on a monotonic clock (the timed checkpoints' and examples/s' clock)."""
    return time.monotonic()


_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars"))


def write_scalar(name, value):
    """A TensorBoard scalar, as `tf.summary.scalar` writes it, without needing the tensorboard
    package (TF's `tf.summary.scalar` raises TBNotInstalledError without it)."""
    tf.summary.write(name, tf.constant(value, tf.float32), metadata=_SCALAR_METADATA)


def current_learning_rate(optimizer):
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate))


def metric_states(model):
    """The values of `model`'s metric variables (the running sums and counts of the window's
    loss and metrics) as JSON-able lists; float32 values round-trip through JSON exactly."""
    return [keras.ops.convert_to_numpy(v).tolist() for v in model.metrics_variables]


def set_metric_states(model, states):
    variables = model.metrics_variables
    if len(variables) != len(states):
        raise ValueError(f"the checkpoint holds {len(states)} metric values, the model has "
                         f"{len(variables)} metric variables")
    for variable, value in zip(variables, states):
        variable.assign(np.asarray(value, dtype=variable.dtype))


class Driver(keras.callbacks.Callback):
    """Runs a `loop.train` run between its steps.

    After each step: stops on a non-finite loss (`self.diverged = (step, loss)`, nothing
    saved). At the end of a logging window (every `log_every` steps, at each evaluation and at
    the last step): writes the window's metric means, the learning rate and examples/s to
    TensorBoard's train/ and `self.history`, then resets the metrics. Every `every_steps` of
    the evaluation: evaluates, writes eval/, tracks the best main metric and early stopping.
    Then checkpoints when due (every `checkpoint_every` steps, or `checkpoint_every_seconds` of
    training, after an evaluation, at the last step), with the run's state: the running metric
    sums of the open window, the train means since the last evaluation, the evaluations, and
    the evaluation's own state. The metrics are read with `model.get_metrics_result()` (in
    cross-replica context: the values over all replicas and workers, the same on every
    worker, so all workers stop together).
    """

    def __init__(self, manager, step_variable, state_variable, evaluation, state, *,
                 initial_step, train_steps, accumulation, checkpoint_every,
                 checkpoint_every_seconds, log_every, examples_per_step):
        super().__init__()
        self.manager, self.step_variable, self.state_variable = (
            manager, step_variable, state_variable)
        self.evaluation = evaluation
        self.initial_step, self.train_steps, self.accumulation = (
            initial_step, train_steps, accumulation)
        self.checkpoint_every, self.checkpoint_every_seconds = (
            checkpoint_every, checkpoint_every_seconds)
        self.log_every, self.examples_per_step = log_every, examples_per_step
        self.writers = {}
        trainer = state.get("trainer", {})
        self._metric_states = trainer.get("metric_states")
        self.window_start = trainer.get("window_start", initial_step)
        self.since_eval = trainer.get("since_eval", {"steps": 0, "sums": {}})
        self.evaluations = [tuple(e) for e in trainer.get("evaluations", [])]
        if evaluation is not None:
            evaluation.evaluations = self.evaluations
        self.progress = None  # a ProgressBar drawing on this run's terminal line
        self.best = trainer.get("best")
        self.stale = trainer.get("stale", 0)
        self.history, self.values, self.latest = [], {}, {}
        self.diverged = None
        self.last_step = initial_step
        patience = evaluation.patience if evaluation is not None else 0
        self.stopped_early = bool(patience) and self.stale >= patience
        self._window_time = self._last_save = None

    def on_train_begin(self, logs=None):
        self._window_time = self._last_save = now()

    def on_epoch_begin(self, epoch, logs=None):
        if self._metric_states is not None:  # after fit's reset: the open window's sums
            set_metric_states(self.model, self._metric_states)
            self._metric_states = None

    def on_train_batch_end(self, batch, logs=None):
        step = self.initial_step + (batch + 1) // self.accumulation
        if step == self.last_step:  # inside an accumulation cycle
            return
        previous, self.last_step = self.last_step, step
        self.values = scalar_floats(self.model.get_metrics_result())
        loss = self.values.get("loss")
        if loss is not None and not math.isfinite(loss):
            self.diverged = (step, loss)
            self.model.stop_training = True
            return
        evaluation = self.evaluation
        evaluate = evaluation is not None and (
            _crossed(previous, step, evaluation.every_steps) or step >= self.train_steps)
        if evaluate or _crossed(previous, step, self.log_every) or step >= self.train_steps:
            self._end_window(step)
        due = evaluate or step >= self.train_steps or (
            _crossed(previous, step, self.checkpoint_every) if self.checkpoint_every
            else now() - self._last_save >= self.checkpoint_every_seconds)
        better = self._evaluate(step) if evaluate else False
        if due:
            self._save(step)
        if evaluate:
            evaluation.after_checkpoint(step, better)
        if step >= self.train_steps or self.stopped_early:
            self.model.stop_training = True

    def _end_window(self, step):
        if step <= self.window_start:
            return
        seconds = now()
        values = dict(self.values)
        values["learning_rate"] = current_learning_rate(self.model.optimizer)
        values["examples_per_second"] = ((step - self.window_start) * self.examples_per_step
                                         / max(seconds - self._window_time, 1e-9))
        self._write("train", step, values)
        self.latest = values
        self.history.append((step, values))
        steps = step - self.window_start
        self.since_eval["steps"] += steps
        sums = self.since_eval["sums"]
        for name, value in self.values.items():
            sums[name] = sums.get(name, 0.0) + value * steps
        self.window_start, self._window_time = step, seconds
        self.model.reset_metrics()

    def _evaluate(self, step):
        """Evaluates, records and reports; whether the main metric improved."""
        evaluation = self.evaluation
        result = dict(evaluation.evaluate(self.model))  # JSON-able; its scalars are drawn
        self.model.reset_metrics()  # an evaluate() of the model itself used them
        steps = max(self.since_eval["steps"], 1)
        train_metrics = {k: v / steps for k, v in self.since_eval["sums"].items()}
        self.since_eval = {"steps": 0, "sums": {}}
        better = True
        if evaluation.main_metric is not None:
            if evaluation.main_metric not in result:
                raise ValueError(f"main_metric={evaluation.main_metric!r} is not among the eval "
                                 f"metrics {sorted(result)}")
            value = float(result[evaluation.main_metric])
            better = self.best is None or value > self.best
            self.best = value if better else self.best
            self.stale = 0 if better else self.stale + 1
            self.stopped_early = bool(evaluation.patience) and self.stale >= evaluation.patience
        self.evaluations.append((step, result))
        self._write("eval", step, result)
        if evaluation.chief:
            line = evaluation.describe(step, result, train_metrics)
            if line:
                if self.progress is not None:
                    self.progress.end_line()
                print(line, flush=True)
            if self.stopped_early:
                print(f"Stopping early at step {step}: {evaluation.main_metric} has not improved "
                      f"for {self.stale} evaluations (best {self.best:.4f}).", flush=True)
        evaluation.before_checkpoint(step, result, train_metrics, better)
        return better

    def _write(self, name, step, values):
        writer = self.writers.get(name)
        if writer is None:
            return
        with writer.as_default(step=step):
            for key, value in values.items():
                if isinstance(value, (int, float, np.number)):  # not a nested score table
                    write_scalar(key, float(value))
        writer.flush()

    def _save(self, step):
        trainer = dict(metric_states=metric_states(self.model), window_start=self.window_start,
                       since_eval=self.since_eval, evaluations=self.evaluations, best=self.best,
                       stale=self.stale)
        own = self.evaluation.state(step) if self.evaluation is not None else {}
        self.state_variable.assign(json.dumps(dict(own, trainer=trainer), default=float))
        self.step_variable.assign(step)
        # A refused write is a WriteError: TF's OutOfRangeError for "File too large" would
        # otherwise end model.fit as if the data had run out, and the run go on.
        try:
            with files.writing(files.join(self.manager.directory, f"ckpt-{step}")):
                self.manager.save(checkpoint_number=step)
        except tf.errors.OpError as e:
            raise OSError(f"{self.manager.directory}: cannot write the checkpoint of step "
                          f"{step}: {e.message}") from None
        self._last_save = now()


def _crossed(previous, step, every):
    """Whether a multiple of `every` lies in (previous, step]."""
    return step // every > previous // every


class ProgressBar(keras.callbacks.Callback):
    """One line per step on a terminal (redrawn in place), else one line per logging window:
    `step 120/1000 [===>......] 12% 3.1 steps/s ETA 4m44s loss 5.93 masked_lm_accuracy 0.12`."""

    def __init__(self, driver, train_steps, stream=None, width=30):
        super().__init__()
        self.driver, self.train_steps = driver, train_steps
        driver.progress = self
        self.stream = stream or sys.stdout
        self.width = width
        self.dynamic = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._start = None
        self._last = None
        self._windows = 0

    def on_train_begin(self, logs=None):
        self._start = time.time()

    def on_train_batch_end(self, batch, logs=None):
        driver = self.driver
        step = driver.last_step
        if step == self._last:
            return
        self._last = step
        new_window = len(driver.history) > self._windows
        self._windows = len(driver.history)
        if not self.dynamic and not new_window:
            return
        done = step - driver.initial_step
        rate = done / max(time.time() - self._start, 1e-9)
        eta = (self.train_steps - step) / rate if rate > 0 else float("inf")
        fraction = step / self.train_steps
        filled = int(self.width * fraction)
        bar = "=" * filled + (">" if filled < self.width else "") + "." * (self.width - filled - 1)
        values = driver.latest if new_window else driver.values
        values = {k: v for k, v in values.items() if k != "learning_rate"}
        metrics = " ".join(f"{k} {v:.4g}" for k, v in values.items())
        line = (f"step {step}/{self.train_steps} [{bar}] {100 * fraction:3.0f}% "
                f"{rate:.3g} steps/s ETA {_duration(eta)} {metrics}")
        if self.dynamic:
            self.stream.write("\r" + line[:200].ljust(200))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def on_train_end(self, logs=None):
        self.end_line()

    def end_line(self):
        """Ends the line redrawn in place, so that other output starts on its own line."""
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
