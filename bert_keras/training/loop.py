"""The trainer of pretraining and fine-tuning: `train` runs a compiled Keras model under a
strategy, with crash-safe resume, evaluations and one set of logs.

`train` runs `model.fit` under a distribution strategy and a dtype policy, and makes the run
restartable: rerunning the same call after a crash (even `kill -9`) restores model, optimizer,
dropout seeds, step, the running metrics and the run's own state from the last checkpoint,
skips the batches already consumed (the datasets are deterministic for a seed) and ends with
the figures of an uninterrupted run. Checkpoints are written every `checkpoint_every` steps
(or `checkpoint_every_seconds` of training), after each evaluation and at the end, by a
`tf.train.CheckpointManager` (its `checkpoint` index file is replaced only after the files are
complete; the `ckpt-N_temp` shards of a write that a kill interrupted are removed when the
next run starts), keeping the last `keep_checkpoints`. A non-finite loss stops the run with
`TrainingDivergedError` naming the step; the checkpoints on disk are the last good ones.

An `Evaluation` runs every N steps: its figures go to the progress line, TensorBoard (eval/)
and `TrainResult.evaluations`; with a main metric the trainer keeps the best value, tells the
evaluation whether each one is better (fine-tuning writes best/ then) and stops early after
`early_stopping_patience` evaluations without improvement. Only the chief writes; the other
workers of a multi-worker run checkpoint into a private directory that is deleted.

Layout of `model_dir` (any tf.io.gfile path: local, gs://, file://, ram://):
  run_config.json          the resolved arguments (the tool's flags) of the last run
  checkpoints/ckpt-N.*     model + optimizer + dropout seeds + step + run state, N = step
  train/, eval/            TensorBoard scalars: losses, metrics, learning_rate,
                           examples_per_second; the evaluations' figures

A "step" is one optimizer update of `global_batch_size` examples; with gradient accumulation
that is `gradient_accumulation_steps` micro-batches, each split over the replicas.
"""

import dataclasses
import gc
import json

import keras
import tensorflow as tf
from absl import logging

from bert_keras import directories, files
from bert_keras.errors import InputError
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
    # [(step, {metric: value})], all of the run's evaluations, resumed or not
    evaluations: list = dataclasses.field(default_factory=list)
    stopped_early: bool = False  # by the evaluation's early stopping


class Evaluation:
    """What `train` evaluates every `every_steps` steps (and at the last step).

    Subclass it, or pass `evaluate`: (model) -> {metric: float}. With `main_metric` (higher is
    better) the trainer tracks the best value and stops after `patience` evaluations in a row
    without a better one (0: never). The hooks run on every worker (their figures are the same
    everywhere); `chief` says whether this process writes:
      `before_checkpoint(step, result, train_metrics, better)`: the evaluation is recorded in
        the run's state (`state()`), which the checkpoint that follows saves;
      `after_checkpoint(step, better)`: what may be redone after a kill (e.g. best/).
    `state(step)` / `restore(state)`: the run's own JSON-able state, saved in every checkpoint
      (`restore` runs after the checkpoint restored the model).
    `self.evaluations`: the run's evaluations so far, [(step, result)], resumes included.
    """

    def __init__(self, every_steps, evaluate=None, *, main_metric=None, patience=0):
        if not isinstance(every_steps, int) or every_steps < 1:
            raise ValueError(f"every_steps must be a positive integer, got {every_steps!r}.")
        self.every_steps, self.main_metric, self.patience = every_steps, main_metric, patience
        self._evaluate = evaluate
        self.chief = True
        self.evaluations = []  # [(step, result)] of the whole run, resumes included (the trainer's)

    def evaluate(self, model):
        return self._evaluate(model)

    def before_checkpoint(self, step, result, train_metrics, better):
        pass

    def after_checkpoint(self, step, better):
        pass

    def state(self, step):
        return {}

    def restore(self, state):
        pass

    def describe(self, step, result, train_metrics):
        """The progress line of an evaluation (None: none)."""
        return f"step {step}: eval " + " ".join(
            f"{k} {v:.4g}" for k, v in result.items() if isinstance(v, (int, float)))

    def position(self, step, train_steps):
        """Where a resumed run takes up, in words, after "Resuming from checkpoint PATH"."""
        return f" at step {step} of {train_steps}"


def latest_checkpoint(model_dir):
    """Path of the newest checkpoint in `model_dir`, or None."""
    return tf.train.latest_checkpoint(files.join(model_dir, CHECKPOINT_SUBDIR))


def checkpoint_step(path):
    """The step stored in checkpoint `path`."""
    return int(tf.train.load_variable(path, _STEP_KEY))


def _changed_config(path, config):
    """{setting: (old, new)} between the run_config.json at `path` and `config` ({} if none)."""
    if not files.exists(path):
        return {}
    try:
        old = files.read_json(path)
    except (OSError, ValueError, InputError, tf.errors.OpError):
        return {}
    new = json.loads(json.dumps(config, default=str))
    # Settings the run has no more (another objective's, which earlier versions recorded too)
    # are not compared.
    return {k: (old.get(k), new[k]) for k in sorted(new) if old.get(k) != new[k]}


def seed_states(model):
    """The dropout layers' seed-generator states: variables of the model that are not weights,
    which a checkpoint of the model alone leaves out (resumed dropout masks would differ)."""
    weights = {id(w) for w in model.weights}
    return [v for v in model.variables if id(v) not in weights]


def _positive(**values):
    for name, value in values.items():
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def train(model_fn, dataset_fn, *, model_dir, train_steps, global_batch_size, strategy=None,
          dtype="float32", jit_compile=False, checkpoint_every=1000, checkpoint_every_seconds=0,
          keep_checkpoints=5, gradient_accumulation_steps=1, steps_per_execution=1,
          log_every=100, dataset_start_step=0, config=None, progress=True, extra_callbacks=(),
          evaluation=None):
    """Trains `model_fn()` on `dataset_fn` to `train_steps`, resuming from `model_dir` if possible.

    Args:
      model_fn: () -> a compiled keras.Model; called inside the strategy's scope and the dtype
        policy. Its optimizer must accumulate `gradient_accumulation_steps` batches itself
        (e.g. `optimization.create_optimizer(gradient_accumulation_steps=...)`); None: each
        batch is a step, whatever the optimizer accumulates.
      dataset_fn: (batch_size, input_context) -> a deterministic tf.data.Dataset of
        (x, y[, sample_weight]) batches of `batch_size` (the per-replica micro-batch, computed
        here from `global_batch_size`) for this input pipeline, with at least the batches of
        `train_steps` (e.g. endless).
      model_dir: checkpoints, TensorBoard logs and run_config.json go here (chief only).
      train_steps: optimizer updates to reach (the count continues across resumes).
      global_batch_size: examples per update, over all replicas and accumulated micro-batches.
      strategy: a tf.distribute.Strategy (default: `create_strategy("one_device")`).
      dtype: "float32", "mixed_float16" (loss scaling added by compile), "mixed_bfloat16" or
        "auto" (precision.resolve_dtype: mixed_bfloat16 on bfloat16 hardware, else float32).
      jit_compile: XLA-compile the train step.
      checkpoint_every: steps between checkpoints; 0: every `checkpoint_every_seconds`.
      keep_checkpoints: how many recent checkpoints to keep.
      steps_per_execution: batches per tf.function call (TPUs like > 1).
      log_every: steps between TensorBoard points and progress lines (and at each evaluation).
      dataset_start_step: the step at which `dataset_fn`'s first batch is used (phase 2 of
        pretraining starts a new dataset mid-run); on resume the batches of steps
        [dataset_start_step, restored step) are skipped.
      config: a JSON-able dict written to model_dir/run_config.json (chief only).
      progress: print a progress bar / progress lines to stdout.
      extra_callbacks: more Keras callbacks.
      evaluation: an `Evaluation`, or None.

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
    # None: every batch is a step, however many the optimizer accumulates (fine-tuning's count).
    accumulation = gradient_accumulation_steps or 1
    _positive(train_steps=train_steps, keep_checkpoints=keep_checkpoints, log_every=log_every,
              gradient_accumulation_steps=accumulation, steps_per_execution=steps_per_execution)
    if not isinstance(checkpoint_every, int) or checkpoint_every < 0 or (
            checkpoint_every == 0 and not checkpoint_every_seconds > 0):
        raise ValueError(f"checkpoint_every must be a positive integer (or 0 with "
                         f"checkpoint_every_seconds > 0), got {checkpoint_every!r}.")
    batch_size = strategy_lib.per_replica_batch_size(global_batch_size, strategy, accumulation)
    workdir = strategy_lib.WorkerDirectory(model_dir, strategy)
    config_path = files.join(model_dir, "run_config.json")
    changed = _changed_config(config_path, config) if config is not None else {}

    with strategy.scope(), dtype_policy(dtype):
        model = model_fn()
        if not getattr(model, "compiled", False) or model.optimizer is None:
            raise ValueError("model_fn must return a compiled keras.Model (with an optimizer).")
        inner = getattr(model.optimizer, "inner_optimizer", model.optimizer)
        model_accumulation = getattr(inner, "accumulation_steps", 1)
        if gradient_accumulation_steps is not None and model_accumulation != accumulation:
            raise ValueError(
                f"gradient_accumulation_steps={accumulation} but the model's optimizer accumulates "
                f"{model_accumulation} steps; create the optimizer with the same value."
            )
        model.jit_compile = jit_compile
        model.steps_per_execution = steps_per_execution
        model.optimizer.build(model.trainable_variables)
        step_variable = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    # Outside the strategy: a string cannot be mirrored (each worker holds the same value).
    state_variable = tf.Variable("", dtype=tf.string, trainable=False, name="state")
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer, step=step_variable,
                                     seed_states=seed_states(model), state=state_variable)
    manager = tf.train.CheckpointManager(
        checkpoint, files.join(workdir.path, CHECKPOINT_SUBDIR), max_to_keep=keep_checkpoints)

    if workdir.chief:  # the unmerged shards of a checkpoint write that a kill interrupted
        directories.remove_checkpoint_leftovers(files.join(model_dir, CHECKPOINT_SUBDIR))
    latest = latest_checkpoint(model_dir)
    initial_step, state = 0, {}
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
        state = json.loads(state_variable.numpy().decode() or "{}")
    if evaluation is not None:
        evaluation.chief = workdir.chief
        evaluation.restore({k: v for k, v in state.items() if k != "trainer"})
    if latest:
        position = (evaluation or Evaluation(1)).position(initial_step, train_steps)
        print(f"Resuming from checkpoint {latest}{position}.", flush=True)
    if workdir.chief:  # written once the checkpoint (if any) restored: it describes the run
        files.makedirs(model_dir)
        if config is not None:
            files.write_json(config_path, config)
    driver = callbacks_lib.Driver(
        manager, step_variable, state_variable, evaluation, state, initial_step=initial_step,
        train_steps=train_steps, accumulation=accumulation, checkpoint_every=checkpoint_every,
        checkpoint_every_seconds=checkpoint_every_seconds, log_every=log_every,
        examples_per_step=global_batch_size)
    try:
        if initial_step < train_steps and not driver.stopped_early:
            _fit(model, strategy, dataset_fn, batch_size, driver, initial_step=initial_step,
                 train_steps=train_steps, accumulation=accumulation,
                 dataset_start_step=dataset_start_step, chief=workdir.chief, model_dir=model_dir,
                 progress=progress, extra_callbacks=extra_callbacks,
                 steps_per_execution=steps_per_execution)
        else:
            logging.info("Nothing to train: step %d of %d%s.", initial_step, train_steps,
                         " (stopped early)" if driver.stopped_early else "")
    finally:
        workdir.cleanup()
        # fit's distributed input iterator is garbage now: freed at once it goes in ~0.3 s;
        # left to a later, unrelated collection, its destructor waits 20-80 s for its
        # pipeline's threads (seen in the test suite).
        gc.collect()
    final_step = driver.last_step if driver.stopped_early else max(initial_step, train_steps)
    return TrainResult(model=model, step=final_step, initial_step=initial_step,
                       history=driver.history, chief=workdir.chief,
                       evaluations=driver.evaluations, stopped_early=driver.stopped_early)


def _fit(model, strategy, dataset_fn, batch_size, driver, *, initial_step, train_steps,
         accumulation, dataset_start_step, chief, model_dir, progress, extra_callbacks,
         steps_per_execution):
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
    batches = (train_steps - initial_step) * accumulation
    if batches % steps_per_execution:
        raise ValueError(
            f"{train_steps - initial_step} steps x gradient_accumulation_steps={accumulation} = "
            f"{batches} batches is not divisible by steps_per_execution={steps_per_execution}.")
    writers = {name: (tf.summary.create_file_writer(files.join(model_dir, name)) if chief
                      else tf.summary.create_noop_writer()) for name in ("train", "eval")}
    driver.writers = writers
    callbacks = [driver]
    if progress and chief:
        callbacks.append(callbacks_lib.ProgressBar(driver, train_steps))
    # One Keras epoch for the whole run: Keras resets the metrics only at its start, so the
    # driver alone decides the windows they average over.
    model.fit(dataset, epochs=1, steps_per_epoch=batches, callbacks=callbacks + list(
        extra_callbacks), verbose=0, shuffle=False)
    for writer in writers.values():
        writer.flush()
    if driver.diverged:
        step, loss = driver.diverged
        raise TrainingDivergedError(step, loss, latest_checkpoint(model_dir))
    if driver.last_step < train_steps and not driver.stopped_early:  # never a silent early end
        raise RuntimeError(
            f"Training ended at step {driver.last_step} of {train_steps}: the data ran out "
            "(dataset_fn must give the batches of train_steps), or an OutOfRangeError inside a "
            "step or callback, which Keras takes for the end of the data, ended model.fit.")


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
