"""Distribution strategies, replica batch arithmetic and chief/worker roles.

One place turns a strategy name into a `tf.distribute.Strategy` and a global batch into the
per-replica batch, so the rest of the code never divides by the number of replicas itself.

Strategies (`STRATEGIES`):
- `one_device`: the first GPU, else the CPU.
- `mirrored`: all local GPUs; without GPUs, all logical CPU devices (tests split the CPU into
  two with `tf.config.set_logical_device_configuration` before TF initializes).
- `multi_worker_mirrored`: all workers of the cluster in the `TF_CONFIG` environment variable
  (create it first thing in the program: it starts a gRPC server).
- `tpu`: `TPUStrategy` on the TPU at `tpu` ("local" on a TPU VM, or a grpc:// address / name).

Example:
>>> strategy = create_strategy("one_device")
>>> per_replica_batch_size(32, strategy)
32
>>> is_chief(strategy)
True
"""

import json
import os
import shutil
import tempfile

import tensorflow as tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
# Keras runs steps_per_execution > 1 as a tf.while_loop over the iterator, which fails under
# the mirrored strategies ("You must feed a value for placeholder tensor ...",
# keras-team/keras#19246).
MULTI_STEP_STRATEGIES = ("one_device", "tpu")


def create_strategy(name, tpu=None):
    """The `tf.distribute.Strategy` called `name` (one of `STRATEGIES`)."""
    if name not in STRATEGIES:
        raise ValueError(f"Unknown distribution strategy {name!r}; expected one of {STRATEGIES}.")
    if name == "tpu":
        if not tpu:
            raise ValueError(
                "distribution strategy 'tpu' needs a TPU address (tpu='local' on a TPU VM).")
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    if tpu:
        raise ValueError(
            f"tpu={tpu!r} is only used with distribution strategy 'tpu', not {name!r}.")
    if name == "multi_worker_mirrored":
        if not os.environ.get("TF_CONFIG"):
            raise ValueError(
                "distribution strategy 'multi_worker_mirrored' reads the cluster from the "
                "TF_CONFIG environment variable, which is not set."
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)


def per_replica_batch_size(global_batch_size, strategy, gradient_accumulation_steps=1):
    """Examples per replica per micro-batch; ValueError naming the numbers if they do not divide.

    The global batch is the number of examples per optimizer update: it is split into
    `gradient_accumulation_steps` micro-batches, each split over the replicas.
    """
    replicas = strategy.num_replicas_in_sync
    parts = replicas * gradient_accumulation_steps
    if global_batch_size < 1 or global_batch_size % parts:
        raise ValueError(
            f"global_batch_size={global_batch_size} is not divisible by num_replicas "
            f"({replicas}) x gradient_accumulation_steps ({gradient_accumulation_steps}) = "
            f"{parts}."
        )
    return global_batch_size // parts


def replica_batches(dataset, input_context):
    """Splits each global batch of `dataset` into the per-replica batches of this input
    pipeline: replica r of R takes rows r, r + R, ... of every batch, so all replicas together
    train on the batches one replica would (fine-tuning's length-bucketed batches, made the
    same on every worker). A batch of fewer than R rows (the last of an epoch) is left out
    everywhere alike; `trained_batches` counts what remains.

    >>> ds = tf.data.Dataset.from_tensor_slices(tf.reshape(tf.range(12), [3, 4])).map(
    ...     lambda row: tf.reshape(row, [4, 1]))
    >>> replica_batches(ds, None) is ds
    True
    """
    if input_context is None or input_context.num_replicas_in_sync == 1:
        return dataset
    replicas = input_context.num_replicas_in_sync
    local = replicas // input_context.num_input_pipelines
    first = input_context.input_pipeline_id * local

    def rows(batch):
        return tf.shape(tf.nest.flatten(batch)[0])[0]

    def split(*batch):
        batch = batch[0] if len(batch) == 1 else batch
        parts = tf.data.Dataset.range(first, first + local)
        return parts.map(lambda r: tf.nest.map_structure(lambda t: t[r::replicas], batch))

    return dataset.filter(lambda *batch: rows(batch) >= replicas).flat_map(split)


def trained_batches(batch_sizes, replicas):
    """How many of the batches of `batch_sizes` rows `replica_batches` keeps."""
    return sum(1 for size in batch_sizes if size >= replicas)


def num_workers_from_tf_config():
    """The number of workers (chief included) in TF_CONFIG's cluster; 1 without TF_CONFIG."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster = config.get("cluster", {})
    return max(1, len(cluster.get("chief", [])) + len(cluster.get("worker", [])))


def spans_workers(strategy):
    """True when `strategy` runs each step together with other processes (a multi-worker
    strategy): a step that one worker runs alone, such as the chief's predictions after
    training, waits for collectives the others never join and hangs or aborts. Such work runs
    on a plain copy of the model, made outside the strategy.

    >>> spans_workers(create_strategy("one_device"))
    False
    """
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def is_chief(strategy):
    """True for the one worker that writes to the model directory.

    That is every process except under a multi-worker strategy, where it is the task of type
    "chief", or worker 0 when the cluster has no chief.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or isinstance(strategy, tf.distribute.TPUStrategy):
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type in (None, "chief"):
        return True
    return (task_type == "worker" and task_id == 0
            and "chief" not in resolver.cluster_spec().as_dict())


class WorkerDirectory:
    """The model directory on the chief; a private temporary directory on other workers.

    Under a multi-worker strategy every worker must take part in writing checkpoints (saving
    may run collective ops), but only the chief's copy is kept (TensorFlow's recommendation).
    Call `cleanup()` at the end: it deletes the temporary directory of a non-chief worker.
    """

    def __init__(self, model_dir, strategy):
        self.model_dir = model_dir
        self.chief = is_chief(strategy)
        self.path = model_dir if self.chief else tempfile.mkdtemp(prefix="bert_keras_worker_")

    def cleanup(self):
        if not self.chief:
            shutil.rmtree(self.path, ignore_errors=True)
