"""Fine-tuning: examples -> features -> task model -> epochs with eval -> best model on disk.

`run_finetuning(config)` trains the task of a `FinetuneConfig` on an encoder checkpoint. The
task type (`bert_keras.tasks`) reads, featurizes, builds the model, predicts and scores; the
trainer (`loop.train`, the one pretraining runs on too) runs the steps under the
`--distribution_strategy`; this module gives it the epochs' batches and `FinetuneEpochs`
(finetuning_epochs.py), the evaluation after each epoch that keeps the best one on disk. The
data are Python examples (`train_examples=`), files (`--train_file`) or a TFDS task
(`--tfds_name`). Each epoch trains on length-bucketed batches, then evaluates; the best epoch
by the main metric is kept, and
`--early_stopping_patience` ends the run after that many epochs without a better one.
tools/finetune.py is the command line over it.

OUTPUT_DIR/ (any tf.io.gfile path) flags.json (the config), metrics.json (per-epoch eval
metrics, the best epoch's, test metrics, baselines; `"complete": true` once finished),
eval_predictions.jsonl, test_predictions.jsonl, best/ (task_io.save_task: model.keras,
vocab.txt, task.json; replaced atomically), train/ and eval/ (TensorBoard scalars) and, until
the run finishes, checkpoints/ (the latest checkpoint). A run that fails before it saved
anything (bad data, Ctrl-C in the first epoch) removes the OUTPUT_DIR it created
(`output_dirs`).

Crash safety (the trainer's, with `finetuning_state`'s checks): each epoch ends with a
checkpoint, and `--checkpoint_every` steps (default: every 10 minutes of training) add
checkpoints inside an epoch, so rerunning the same call after a crash (even `kill -9`)
resumes from the latest one, mid-epoch included (the batches already trained are skipped),
and ends with the same figures as an uninterrupted run; rerunning a complete run trains
nothing.

Task distillation (`--teacher_dir`, `finetuning_teacher`): the model also learns a fine-tuned
teacher's outputs on the training data (alpha x soft-target loss + (1 - alpha) x the task's
loss); the epochs log the soft and hard loss terms and the teacher agreement (train_* in each
epoch's entry, teacher_agreement in its eval metrics), metrics.json the teacher's eval scores.

Example:
    >>> import bert_keras as bk
    >>> from bert_keras import finetuning_data as fd
    >>> record = bk.run_finetuning(  # doctest: +SKIP
    ...     task="classification", init_checkpoint="runs/pretrain/encoder", output_dir="/tmp/para",
    ...     train_examples=fd.load_bundled_task("bible_paraphrase", "train")[:256],
    ...     eval_examples=fd.load_bundled_task("bible_paraphrase", "dev")[:64], num_train_epochs=1)
    >>> record["best_epoch"], sorted(record["eval"])  # doctest: +SKIP
    (1, ['accuracy', 'f1', 'macro_f1', 'mcc'])
"""

import contextlib
import time

import keras
from absl import logging

from bert_keras import directories, files
from bert_keras.data.finetuning import batching, sanity, tfds
from bert_keras.errors import InputError
from bert_keras.models.encoder import BertEncoder
from bert_keras.models.encoder.inference import cast_for_inference
from bert_keras.models.layers import transposed_dense
from bert_keras.tasks import task_io
from bert_keras.text.tokenizers import load_tokenizer
from bert_keras.training import finetuning_state as state_lib
from bert_keras.training import output_dirs
from bert_keras.training import strategy as strategy_lib
from bert_keras.training.finetuning_config import TIMED_CHECKPOINT_SECONDS, FinetuneConfig
from bert_keras.training.finetuning_epochs import FinetuneEpochs
from bert_keras.training.finetuning_teacher import Teacher
from bert_keras.training.loop import train
from bert_keras.training.precision import resolve_dtype

# What a run writes in OUTPUT_DIR before its first epoch ends: nothing worth keeping.
RUN_RECORDS = ("flags.json", "train/events.out.tfevents.*", "eval/events.out.tfevents.*")


def load_tfds_data(config):
    """(train, eval or None, test or None, label_map or None) of the config's TFDS dataset,
    read as its --task (`tfds.TfdsTask`, by the Task's `tfds_reader`: prepared in
    --tfds_data_dir, or refused in one line unless --tfds_download). The eval split defaults
    to validation (validation_matched for glue/mnli), and to none for a dataset known to have
    no such split."""
    data = config.data
    name = data.tfds.tfds_name
    task = tfds.TfdsTask(name, data.tfds.tfds_data_dir, task=config.task_type,
                         download=data.tfds.tfds_download, text_a_field=data.text_a_field,
                         text_b_field=data.text_b_field, label_field=data.label_field)
    eval_split = data.tfds_eval_split or (
        "validation_matched" if name.startswith("glue/mnli") else "validation")
    if not data.tfds_eval_split and task.splits and eval_split not in task.splits:
        logging.warning("--tfds_name=%s has no %s split (its splits: %s): no evaluation; "
                        "pass --tfds_eval_split to name one.", name, eval_split, task.splits)
        eval_split = None
    test = task.examples(data.tfds_test_split) if data.tfds_test_split else None
    evaluation = task.examples(eval_split) if eval_split else None
    return task.examples(data.tfds_train_split), evaluation, test, task.label_map()


def read_files(config, name, labeled=True):
    """Examples of the config's task from --train_file / --eval_file / --test_file, through
    `sanity`'s checks: training data whose label column is (nearly) all distinct values, or
    with more than 1% of empty texts, is refused, and its empty texts left out; empty texts
    of eval and test data are counted."""
    paths = config.data.files(name)
    if not paths:
        return None
    file_format = config.file_format(paths[0])
    examples = config.task_type.read_files(paths, file_format, labeled,
                                           options=config.task_options,
                                           **config.data.reader_options())
    if name != "train_file":
        sanity.count_empty_texts(examples, name.removesuffix("_file"))
        return examples
    label_option = (f"--label_field={config.data.label_field}" if file_format == "jsonl"
                    else f"--label_column={config.data.label_column}")
    sanity.check_labels(examples, file_format, label_option)
    return sanity.drop_empty_texts(examples, file_format)


class _Run:
    """The data, task and record of one fine-tuning run (what the epochs need)."""

    def __init__(self, config, train, evaluation, test, label_map, teacher=None):
        self.config, self.started, self.teacher = config, time.time(), teacher
        self.task = config.task_type
        data = config.data
        if data.tfds.tfds_name:
            train, evaluation, test, label_map = load_tfds_data(config)
        elif data.train_file:
            train = read_files(config, "train_file")
            evaluation = read_files(config, "eval_file")
            test = read_files(config, "test_file", labeled=not data.test_unlabeled)
        if label_map is None:  # TFDS: its ClassLabel names, where it has them
            label_map = self.task.label_map(train)
        if teacher is not None:
            label_map = teacher.label_map(label_map)
        if data.max_train_examples:
            train = train[:data.max_train_examples]
        if data.max_eval_examples:
            evaluation = evaluation[:data.max_eval_examples] if evaluation else evaluation
            test = test[:data.max_eval_examples] if test else test
        self.train, self.evaluation, self.test, self.label_map = train, evaluation, test, label_map
        self.tokenizer = load_tokenizer(config.init_checkpoint)
        self.train_features = self.featurize(train)
        self.eval_features = self.featurize(evaluation) if evaluation else None
        self.test_features = self.featurize(test) if test else None
        self.config = config = self.task.resolve_config(config, train)
        self.glue_task = config.data.glue_task()
        self.main_metric = config.main_metric_for(self.glue_task)
        self.record = {"task": config.task, "main_metric": self.main_metric, "epochs": [],
                       "best_epoch": None, "train_examples": len(train),
                       "train_features": len(self.train_features["input_word_ids"]),
                       "dtype": resolve_dtype(config.runtime.dtype)[0]}
        if evaluation:
            self.record["eval_examples"] = len(evaluation)
            self.record["baselines"] = self.task.baselines(train, evaluation, label_map)
        self.record["data_fingerprint"] = state_lib.data_fingerprint(
            self.train_features, self.eval_features, self.test_features,
            teacher.fingerprint() if teacher is not None else None)
        self.best_dir = files.join(config.output_dir, "best")
        self._served = (None, None)  # (model, its float32 copy or itself): `served`

    def featurize(self, examples):
        return self.task.featurize(examples, self.tokenizer, self.label_map,
                                   max_seq_length=self.config.max_seq_length,
                                   options=self.config.task_options)

    def served(self, model, plain=False):
        """`model` in the numerics a float32 export serves, so the metrics and prediction files
        say what the server will answer, on any CPU: `model` itself if it computes in float32,
        else a float32 copy. The copy is made once a run and given `model`'s current weights
        at each call: its predict function (and XLA kernels) are traced once, not once per
        evaluation. `plain`: a new copy in any case, made here, outside the strategy that the
        evaluations' copy was made under (a multi-worker copy would gather from every worker)."""
        if plain:
            return cast_for_inference(model, "float32", force_copy=True)
        source, copy = self._served
        if source is not model:
            copy = cast_for_inference(model, "float32")
            self._served = (model, copy)
        elif copy is not model:
            transposed_dense.copy_weights(model, copy)
        return copy

    def predict(self, served, examples, features):
        """The task's (rows, predictions) by `served` (`self.served(model)`)."""
        return self.task.predict(served, examples, features, self.label_map, self.config)

    def save_best(self, model, metrics):
        labels = None if self.label_map is None else self.label_map.labels
        task_io.save_task(self.best_dir, model, self.tokenizer, self.config.task,
                          self.config.max_seq_length, labels=labels,
                          text_fields=self.task.text_fields(self.train), metrics=metrics,
                          decoding=self.task.decoding_options(self.config))


def run_finetuning(config=None, *, train_examples=None, eval_examples=None, test_examples=None,
                   label_map=None, strategy=None, **options):
    """Fine-tunes the encoder and tokenizer of `config.init_checkpoint` on `config.task`;
    returns the record written to OUTPUT_DIR/metrics.json.

    `config`: a FinetuneConfig, or None to make one from `options` (its option names, the
    flags of tools/finetune.py). Data, exactly one of: `train_examples` (and `eval_examples`,
    `test_examples`, optional `label_map`; default from the training examples),
    `config.train_file` (and eval/test files) or `config.tfds_name`. `strategy`: a
    tf.distribute.Strategy (default: made from `config.runtime`; make a multi-worker one
    first thing in the program). Each global batch of `train_batch_size` rows is split over
    the replicas; only the chief writes OUTPUT_DIR.

    Rerunning the same call resumes an unfinished run from its latest checkpoint (after an
    epoch, or inside one: see `config.checkpoint_every`), and returns a complete run's record
    without training; other flags or data for an output dir holding a run raise
    `finetuning_state.ResumeError`. A new run first removes an earlier run's outputs from the
    output dir.
    """
    config = config or FinetuneConfig.from_options(**options)
    config.validate_data_source(has_examples=train_examples is not None)
    # The teacher's directory and task type are checked before anything is written.
    teacher = Teacher(config) if config.distillation.teacher_dir else None
    runtime = config.runtime
    strategy = strategy or strategy_lib.create_strategy(runtime.distribution_strategy,
                                                        tpu=runtime.tpu)
    replicas = strategy.num_replicas_in_sync
    if replicas > 1 and not config.task_type.splits_over_replicas:
        raise InputError(f"--task={config.task} trains on one replica only: its batches are "
                         f"groups that {replicas} replicas of --distribution_strategy="
                         f"{runtime.distribution_strategy} would split apart.")
    chief = strategy_lib.is_chief(strategy)
    # Only the chief writes OUTPUT_DIR. A run that fails before it saved anything (bad data,
    # Ctrl-C in the first epoch) leaves none that it made.
    made_here = (output_dirs.removed_if_failed(config.output_dir, records=RUN_RECORDS)
                 if chief else contextlib.nullcontext())
    with made_here:
        return _run_in_output_dir(config, strategy, chief, teacher, train_examples,
                                  eval_examples, test_examples, label_map)


def _run_in_output_dir(config, strategy, chief, teacher, train_examples, eval_examples,
                       test_examples, label_map):
    """`run_finetuning` once its config, teacher and strategy are made."""
    runtime, output_dir = config.runtime, config.output_dir
    if chief:
        files.makedirs(output_dir)
        # a kill mid-swap: the last best/ back
        directories.recover_directory(files.join(output_dir, "best"))
    complete = state_lib.completed_record(output_dir)
    resuming = complete is None and state_lib.has_checkpoint(output_dir)
    what = "a complete run" if complete else "an unfinished run"
    if complete or resuming:  # before any work
        state_lib.check_same_flags(output_dir, config, what)
    keras.utils.set_random_seed(config.seed)

    # Data, label map and features first: bad data fails before the model is built.
    run = _Run(config, train_examples, eval_examples, test_examples, label_map, teacher)
    config = run.config
    if complete:
        state_lib.check_same_data(output_dir, what, complete.get("data_fingerprint"),
                                  run.record["data_fingerprint"])
        if chief:
            files.remove_tree(files.join(output_dir, state_lib.CHECKPOINT_SUBDIR))
        print(f"{output_dir} holds the complete run of these flags (best epoch "
              f"{complete['best_epoch']}): nothing to train. Delete it, or pass another "
              "--output_dir, to train again.", flush=True)
        return complete
    if not resuming and chief:
        state_lib.remove_earlier_outputs(output_dir)
        files.write_json(files.join(output_dir, "flags.json"), config.to_dict())
    logging.info("%d train examples -> %d features; %s eval; %s test", len(run.train),
                 run.record["train_features"], len(run.evaluation or []), len(run.test or []))
    if teacher is not None:
        teacher.annotate(run)  # its logits on the training data, before the student exists
        keras.utils.set_random_seed(config.seed)  # the student starts as it would without one
    lengths = [len(r) for r in run.train_features["input_word_ids"]]
    sizes = [len(b) for b in batching.batch_indices(lengths, config.train_batch_size, True)]
    steps_per_epoch = strategy_lib.trained_batches(sizes, strategy.num_replicas_in_sync)
    run.record["steps_per_epoch"] = steps_per_epoch
    epochs = FinetuneEpochs(run, steps_per_epoch)
    result = train(
        _model_fn(run, epochs, steps_per_epoch), _dataset_fn(run), model_dir=output_dir,
        train_steps=steps_per_epoch * config.num_train_epochs,
        global_batch_size=config.train_batch_size, strategy=strategy, dtype=runtime.dtype,
        jit_compile=runtime.jit_compile, checkpoint_every=config.checkpoint_every,
        checkpoint_every_seconds=TIMED_CHECKPOINT_SECONDS, keep_checkpoints=1,
        gradient_accumulation_steps=None, log_every=min(steps_per_epoch, 100),
        progress=config.verbose > 0, evaluation=epochs)
    if result.stopped_early:
        run.record["stopped_early_after_epoch"] = epochs.done
    if not chief:
        return run.record
    return _finish(run, epochs.model, epochs)


def _dataset_fn(run):
    """The trainer's dataset: the epochs' length-bucketed batches one after the other, each
    epoch shuffled by (seed, epoch) only (a resumed run sees the batches of an uninterrupted
    one), each global batch split over the replicas."""
    config, teacher = run.config, run.teacher

    def epoch_dataset(epoch):
        options = dict(shuffle=True, seed=state_lib.epoch_seed(config.seed, epoch),
                       pad_id=run.tokenizer.pad_id)
        if teacher is not None:
            return teacher.dataset(run.task, run.train_features, config.train_batch_size,
                                   **options)
        return run.task.dataset(run.train_features, config.train_batch_size, **options)

    def dataset_fn(batch_size, input_context):
        # Global batches of --train_batch_size made alike everywhere, then split: `batch_size`
        # (the per-replica share) is what replica_batches gives each replica.
        dataset = epoch_dataset(0)
        for epoch in range(1, config.num_train_epochs):
            dataset = dataset.concatenate(epoch_dataset(epoch))
        return strategy_lib.replica_batches(dataset, input_context)

    return dataset_fn


def _model_fn(run, epochs, steps_per_epoch):
    """() -> the compiled model that trains: the task model over the encoder of
    `init_checkpoint` (kept as `epochs.model`), or with a teacher its `TaskDistiller`."""
    config, task = run.config, run.task
    # An update per --gradient_accumulation_steps batches.
    total_steps = -(-steps_per_epoch * config.num_train_epochs
                    // config.optimizer.gradient_accumulation_steps)

    def model_fn():
        encoder = BertEncoder.from_pretrained(config.init_checkpoint)
        encoder.check_tokenizer(run.tokenizer, f"--init_checkpoint={config.init_checkpoint}")
        model = task.build_model(encoder, run.label_map, config.dropout,
                                 checkpoint=config.init_checkpoint, options=config.task_options)
        optimizer = config.optimizer.make_optimizer(
            total_steps, int(config.warmup_proportion * total_steps), encoder.num_layers)
        trainer = model if run.teacher is None else run.teacher.trainer(model, task)
        trainer.compile(optimizer=optimizer)
        epochs.model = model
        return trainer

    return model_fn


def _finish(run, model, epochs):
    """Eval and test predictions of the best epoch's model, the final metrics.json; the
    checkpoints go (the run is complete)."""
    config, task, record = run.config, run.task, run.record
    if record["best_epoch"] != epochs.done:
        # Assigning variables runs no collective: the chief may do it alone under any strategy.
        model.load_weights(files.join(run.best_dir, "model.keras"))
    # The chief predicts alone: on a plain copy, outside the strategy (a multi-worker model's
    # own predict gathers from every worker). The epochs' evaluations ran on all workers alike.
    served = run.served(model, plain=strategy_lib.spans_workers(model.distribute_strategy))
    if run.evaluation:
        record["eval"] = record["epochs"][record["best_epoch"] - 1]["eval"]
        rows = epochs.best_rows
        if rows is None:  # the best epoch ran before a resume
            rows, _ = run.predict(served, run.evaluation, run.eval_features)
        files.write_jsonl(files.join(config.output_dir, "eval_predictions.jsonl"), rows)
    if run.test:
        rows, predicted = run.predict(served, run.test, run.test_features)
        files.write_jsonl(files.join(config.output_dir, "test_predictions.jsonl"), rows)
        if task.is_labeled(run.test):
            record["test"] = task.score(run.test, predicted, run.label_map)
    record["seconds"] = round(time.time() - run.started, 1)
    record["complete"] = True
    files.write_json(files.join(config.output_dir, "metrics.json"), record)
    files.remove_tree(files.join(config.output_dir, state_lib.CHECKPOINT_SUBDIR))
    return record
