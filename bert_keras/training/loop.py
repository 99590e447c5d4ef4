"""Training: `train` runs any compiled Keras model under a strategy, with crash-safe resume.

`train` runs `model.fit` under a distribution strategy and a dtype policy, and makes the run
restartable: rerunning the same call after a crash (even `kill -9`) restores model, optimizer
and step from the last checkpoint, skips the batches already consumed (the datasets are
deterministic for a seed) and finishes at the same step. Checkpoints are written every
`checkpoint_every` steps by a `tf.train.CheckpointManager` (atomic: the `checkpoint` index
file is replaced only after the files are complete; the `ckpt-N_temp` shards of a write that a
kill interrupted are removed when the next run starts) keeping the last `keep_checkpoints`. A
non-finite loss stops the run with `TrainingDivergedError` naming the step; the checkpoints
on disk are the last good ones.

Layout of `model_dir`:
  run_config.json          the resolved arguments (the tool's flags) of the last run
  checkpoints/ckpt-N.*     model + optimizer + step, N = step
  train/                   TensorBoard scalars: losses, accuracies, learning_rate,
                           examples_per_second

A "step" is one optimizer update of `global_batch_size` examples; with gradient accumulation
that is `gradient_accumulation_steps` micro-batches, each split over the replicas.
"""

import dataclasses
import json
import math
import os

import keras
import tensorflow as tf
from absl import logging

from bert_keras.errors import InputError
from bert_keras.files import remove_checkpoint_leftovers, write_json
from bert_keras.training import callbacks as callbacks_lib
from bert_keras.training import strategy as strategy_lib
from bert_keras.training.precision import dtype_policy

CHECKPOINT_SUBDIR = "checkpoints"
_STEP_KEY = "step/.ATTRIBUTES/VARIABLE_VALUE"


class TrainingDivergedError(RuntimeError):
    """The loss became NaN or infinite; the run stopped without writing a checkpoint."""

    def __init__(self, step, loss, last_checkpoint):
        self.step, self.loss, self.last_checkpoint = step, loss, last_checkpoint
        kept = (f"the last good checkpoint {last_checkpoint} is kept" if last_checkpoint
                else "no checkpoint was written before it")
        super().__init__(
            f"Training stopped: the loss became {loss} at step {step}; {kept}. Lower the learning "
            "rate, check the data, or use float32."
        )


@dataclasses.dataclass
class TrainResult:
    model: keras.Model
    step: int  # the final step
    initial_step: int  # the step the run started (resumed) at
    history: list  # [(step, {metric: value})], one entry per logging window of this run
    chief: bool  # whether this process wrote model_dir


def latest_checkpoint(model_dir):
    """Path of the newest checkpoint in `model_dir`, or None."""
    return tf.train.latest_checkpoint(os.path.join(model_dir, CHECKPOINT_SUBDIR))


def checkpoint_step(path):
    """The step stored in checkpoint `path`."""
    return int(tf.train.load_variable(path, _STEP_KEY))


def _changed_config(path, config):
    """{setting: (old, new)} between the run_config.json at `path` and `config` ({} if none)."""
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return {}
    new = json.loads(json.dumps(config, default=str))
    # Settings the run has no more (another objective's, which earlier versions recorded too)
    # are not compared.
    return {k: (old.get(k), new[k]) for k in sorted(new) if old.get(k) != new[k]}


def train(model_fn, dataset_fn, *, model_dir, train_steps, global_batch_size, strategy=None,
          dtype="float32", jit_compile=False, checkpoint_every=1000, keep_checkpoints=5,
          gradient_accumulation_steps=1, steps_per_execution=1, log_every=100,
          dataset_start_step=0, config=None, progress=True, extra_callbacks=()):
    """Trains `model_fn()` on `dataset_fn` to `train_steps`, resuming from `model_dir` if possible.

    Args:
      model_fn: () -> a compiled keras.Model; called inside the strategy's scope and the dtype
        policy. Its optimizer must accumulate `gradient_accumulation_steps` batches itself
        (e.g. `optimization.create_optimizer(gradient_accumulation_steps=...)`).
      dataset_fn: (batch_size, input_context) -> an endless, deterministic tf.data.Dataset of
        (x, y[, sample_weight]) batches of `batch_size` (the per-replica micro-batch, computed
        here from `global_batch_size`), sharded by the `tf.distribute.InputContext`.
      model_dir: checkpoints, TensorBoard logs and run_config.json go here (chief only).
      train_steps: optimizer updates to reach (the count continues across resumes).
      global_batch_size: examples per update, over all replicas and accumulated micro-batches.
      strategy: a tf.distribute.Strategy (default: `create_strategy("one_device")`).
      dtype: "float32", "mixed_float16" (loss scaling added by compile), "mixed_bfloat16" or
        "auto" (precision.resolve_dtype: mixed_bfloat16 on bfloat16 hardware, else float32).
      jit_compile: XLA-compile the train step.
      checkpoint_every: steps between checkpoints (also the length of a Keras epoch).
      keep_checkpoints: how many recent checkpoints to keep.
      steps_per_execution: batches per tf.function call (TPUs like > 1).
      log_every: steps between TensorBoard points and progress lines.
      dataset_start_step: the step at which `dataset_fn`'s first batch is used (phase 2 of
        pretraining starts a new dataset mid-run); on resume the batches of steps
        [dataset_start_step, restored step) are skipped.
      config: a JSON-able dict written to model_dir/run_config.json (chief only).
      progress: print a progress bar / progress lines to stdout.
      extra_callbacks: more Keras callbacks.

    Returns:
      TrainResult. Raises TrainingDivergedError on a NaN or infinite loss.

    Example (a toy regression, resumable):
    >>> import numpy as np, tensorflow as tf, keras, tempfile
    >>> def model_fn():
    ...     model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    ...     model.compile(optimizer="sgd", loss="mse")
    ...     return model
    >>> def dataset_fn(batch_size, input_context):
    ...     x = np.arange(16, dtype="float32").reshape(8, 2)
    ...     return tf.data.Dataset.from_tensor_slices((x, x.sum(1))).repeat().batch(batch_size)
    >>> result = train(model_fn, dataset_fn, model_dir=tempfile.mkdtemp(), train_steps=4,
    ...                global_batch_size=4, checkpoint_every=2, progress=False)
    >>> result.step
    4
    """
    strategy = strategy or strategy_lib.create_strategy("one_device")
    for name, value in dict(train_steps=train_steps, checkpoint_every=checkpoint_every,
                            keep_checkpoints=keep_checkpoints, log_every=log_every,
                            gradient_accumulation_steps=gradient_accumulation_steps,
                            steps_per_execution=steps_per_execution).items():
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    accumulation = gradient_accumulation_steps
    batch_size = strategy_lib.per_replica_batch_size(global_batch_size, strategy, accumulation)
    batches_per_epoch = checkpoint_every * accumulation
    if batches_per_epoch % steps_per_execution:
        raise ValueError(
            f"checkpoint_every x gradient_accumulation_steps = {batches_per_epoch} is not "
            f"divisible by steps_per_execution={steps_per_execution}."
        )
    workdir = strategy_lib.WorkerDirectory(model_dir, strategy)
    config_path = os.path.join(model_dir, "run_config.json")
    changed = _changed_config(config_path, config) if config is not None else {}

    with strategy.scope(), dtype_policy(dtype):
        model = model_fn()
        if not getattr(model, "compiled", False) or model.optimizer is None:
            raise ValueError("model_fn must return a compiled keras.Model (with an optimizer).")
        inner = getattr(model.optimizer, "inner_optimizer", model.optimizer)
        model_accumulation = getattr(inner, "accumulation_steps", 1)
        if model_accumulation != accumulation:
            raise ValueError(
                f"gradient_accumulation_steps={accumulation} but the model's optimizer accumulates "
                f"{model_accumulation} steps; create the optimizer with the same value."
            )
        model.jit_compile = jit_compile
        model.steps_per_execution = steps_per_execution
        model.optimizer.build(model.trainable_variables)
        step_variable = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer, step=step_variable)
    manager = tf.train.CheckpointManager(
        checkpoint, os.path.join(workdir.path, CHECKPOINT_SUBDIR), max_to_keep=keep_checkpoints)

    if workdir.chief:  # the unmerged shards of a checkpoint write that a kill interrupted
        remove_checkpoint_leftovers(os.path.join(model_dir, CHECKPOINT_SUBDIR))
    latest = latest_checkpoint(model_dir)
    initial_step = 0
    if latest:
        try:
            checkpoint.restore(latest).assert_existing_objects_matched()
        except (ValueError, AssertionError, tf.errors.OpError) as e:
            raise InputError(
                f"{model_dir} holds checkpoints of another model ({latest}), which this run "
                f"cannot resume: settings changed since (old, new): {changed or 'unknown'}. "
                f"Use another --model_dir, or the old settings. ({str(e).splitlines()[0][:200]})"
            ) from None
        if changed:
            logging.warning("Resuming with changed settings (old, new): %s", changed)
        initial_step = int(step_variable.numpy())
        print(f"Resuming from checkpoint {latest} at step {initial_step} of {train_steps}.",
              flush=True)
    if workdir.chief:  # written once the checkpoint (if any) restored: it describes the run
        os.makedirs(model_dir, exist_ok=True)
        if config is not None:
            write_json(config_path, config)
    history = []
    try:
        if initial_step < train_steps:
            history = _fit(model, strategy, dataset_fn, batch_size, manager, step_variable,
                           initial_step=initial_step, train_steps=train_steps,
                           checkpoint_every=checkpoint_every, accumulation=accumulation,
                           log_every=log_every, global_batch_size=global_batch_size,
                           dataset_start_step=dataset_start_step, chief=workdir.chief,
                           model_dir=model_dir, progress=progress, extra_callbacks=extra_callbacks)
        else:
            logging.info("Nothing to train: step %d >= train_steps %d.", initial_step, train_steps)
    finally:
        workdir.cleanup()
    final_step = max(initial_step, train_steps)
    return TrainResult(model=model, step=final_step, initial_step=initial_step, history=history,
                       chief=workdir.chief)


def _fit(model, strategy, dataset_fn, batch_size, manager, step_variable, *, initial_step,
         train_steps, checkpoint_every, accumulation, log_every, global_batch_size,
         dataset_start_step, chief, model_dir, progress, extra_callbacks):
    skip_steps = max(initial_step - dataset_start_step, 0)
    element_specs = []

    def distributed_dataset_fn(input_context):
        dataset = dataset_fn(batch_size, input_context)
        element_specs.append(dataset.element_spec)
        if skip_steps:
            # Each pipeline feeds num_replicas / num_pipelines replicas one batch per micro-step.
            per_step = input_context.num_replicas_in_sync // input_context.num_input_pipelines
            dataset = dataset.skip(skip_steps * accumulation * per_step)
        return dataset

    dataset = strategy.distribute_datasets_from_function(distributed_dataset_fn)
    _build_before_fit(model, strategy, element_specs[0])
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        # Keras reduces the per-replica logs of each step with strategy.reduce("MEAN", axis=0),
        # which fails on scalars across workers: give it vectors of length 1 (the callbacks read
        # the global values with get_metrics_result() anyway).
        train_step = model.train_step

        def train_step_with_vector_logs(data):
            return {k: tf.reshape(v, [1]) for k, v in train_step(data).items()}

        model.train_step = train_step_with_vector_logs
    batches_per_epoch = checkpoint_every * accumulation
    initial_epoch = initial_step // checkpoint_every
    epochs = initial_epoch + math.ceil((train_steps - initial_step) / checkpoint_every)
    clock = callbacks_lib.StepClock(initial_step, initial_epoch, batches_per_epoch, accumulation)
    writer = (tf.summary.create_file_writer(os.path.join(model_dir, "train")) if chief
              else tf.summary.create_noop_writer())
    controller = callbacks_lib.CheckpointAndStop(clock, manager, step_variable, checkpoint_every,
                                                 train_steps)
    logger = callbacks_lib.ScalarLogger(clock, controller, writer, log_every, global_batch_size)
    callbacks = [controller, logger]
    if progress and chief:
        callbacks.append(
            callbacks_lib.ProgressBar(clock, train_steps, controller, logger, log_every))
    model.fit(dataset, epochs=epochs, initial_epoch=initial_epoch,
              steps_per_epoch=batches_per_epoch, callbacks=callbacks + list(extra_callbacks),
              verbose=0, shuffle=False)
    if controller.diverged:
        step, loss = controller.diverged
        raise TrainingDivergedError(step, loss, latest_checkpoint(model_dir))
    if controller.last_step < train_steps:  # never a silent early end
        raise RuntimeError(
            f"Training ended at step {controller.last_step} of {train_steps}: the data ran out "
            "(dataset_fn must repeat), or an OutOfRangeError inside a step or callback, which "
            "Keras takes for the end of the data, ended model.fit.")
    return logger.history


def _build_before_fit(model, strategy, element_spec):
    """Builds the compiled loss and metrics from the data's spec, and stops `fit` from doing it.

    Keras' TF trainer builds them in `fit` by pulling the first batch off the distributed
    iterator and `strategy.reduce`-ing it, which (a) fails under MultiWorkerMirroredStrategy
    for dict inputs (keras-team/keras#20329, #20585) and (b) silently consumes one batch, so
    the data position would depend on how often `fit` was called. Building symbolically here
    fixes both: batch k of the dataset is always consumed by micro-step k.
    """
    with strategy.scope():
        model._symbolic_build(data_batch=element_spec)  # private Keras API: see the docstring
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None
