"""Fine-tuning: examples -> features -> task model -> epochs with eval -> best model on disk.

`run_finetuning(config)` trains the task of a `FinetuneConfig` on an encoder checkpoint. The
task type (`bert_keras.tasks`) reads, featurizes, builds the model, predicts and scores; this
module runs the epochs. The data are Python examples (`train_examples=`), files
(`--train_file`) or a TFDS task (`--tfds_name`). Each epoch trains on length-bucketed
batches, then evaluates; the best epoch by the main metric is kept. tools/finetune.py is the
command line over it.

OUTPUT_DIR/ flags.json (the config), metrics.json (per-epoch eval metrics, the best epoch's,
test metrics, baselines; `"complete": true` once finished), eval_predictions.jsonl,
test_predictions.jsonl, best/ (task_io.save_task: model.keras, vocab.txt, task.json; replaced
atomically) and, until the run finishes, checkpoints/ (the latest checkpoint).

Crash safety (`finetuning_state`): each epoch ends with a checkpoint, and `--checkpoint_every`
steps (default: every 10 minutes of training) add checkpoints inside an epoch, so rerunning the
same call after a crash (even `kill -9`) resumes from the latest one, mid-epoch included (the
batches of the epoch already trained are skipped), and ends with the same figures as an
uninterrupted run; rerunning a complete run trains nothing.

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

import os
import shutil
import time

import keras
from absl import logging

from bert_keras.data.finetuning import batching, sanity, tfds
from bert_keras.files import recover_directory, write_json, write_jsonl
from bert_keras.models.encoder import BertEncoder
from bert_keras.models.encoder.inference import cast_for_inference
from bert_keras.tasks import task_io
from bert_keras.tasks.registry import get_task
from bert_keras.text.tokenizers import load_tokenizer
from bert_keras.training import callbacks as callbacks_lib
from bert_keras.training import finetuning_state as state_lib
from bert_keras.training import strategy as strategy_lib
from bert_keras.training.finetuning_config import TIMED_CHECKPOINT_SECONDS, FinetuneConfig
from bert_keras.training.finetuning_teacher import Teacher
from bert_keras.training.precision import dtype_policy, resolve_dtype


def load_tfds_data(config):
    """(train, eval or None, test or None, label_map or None) of the config's TFDS dataset,
    read as its --task (`tfds.TfdsTask`, by the Task's `tfds_reader`: prepared in
    --tfds_data_dir, or refused in one line unless --tfds_download). The eval split defaults
    to validation (validation_matched for glue/mnli), and to none for a dataset known to have
    no such split."""
    data = config.data
    name = data.tfds.tfds_name
    task = tfds.TfdsTask(name, data.tfds.tfds_data_dir, task=get_task(config.task),
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
    examples = get_task(config.task).read_files(paths, file_format, labeled,
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
        self.task = get_task(config.task)
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
        self.best_dir = os.path.join(config.output_dir, "best")

    def featurize(self, examples):
        return self.task.featurize(examples, self.tokenizer, self.label_map,
                                   max_seq_length=self.config.max_seq_length,
                                   options=self.config.task_options)

    def predict(self, model, examples, features):
        """The task's (rows, predictions) from the numerics a float32 export serves (a float32
        copy of a model trained in mixed bfloat16), so the metrics and prediction files say
        what the server will answer, on any CPU."""
        served = cast_for_inference(model, "float32")
        return self.task.predict(served, examples, features, self.label_map, self.config)

    def save_best(self, model, metrics):
        labels = None if self.label_map is None else self.label_map.labels
        task_io.save_task(self.best_dir, model, self.tokenizer, self.config.task,
                          self.config.max_seq_length, labels=labels,
                          text_fields=self.task.text_fields(self.train), metrics=metrics,
                          decoding=self.task.decoding_options(self.config))


class _Epochs:
    """The epochs of a run: evaluation after each, the best one on disk, the resumable state."""

    def __init__(self, run, model, checkpoint):
        self.run, self.model, self.checkpoint = run, model, checkpoint
        self.done, self.best, self.best_rows = 0, None, None
        # Where a resumed run takes up epoch `done` + 1: the batches of it already trained, and
        # its running metric values then (`callbacks.metric_states`; None: from its start).
        self.resume_batch, self.resume_metrics = 0, None

    def resume(self, saved):
        """Takes up the state of `TrainingCheckpoint.restore` (model and optimizer are
        restored): after an epoch, or inside one."""
        run, record = self.run, self.run.record
        state_lib.check_same_data(run.config.output_dir, "an unfinished run",
                                  saved["data_fingerprint"], record["data_fingerprint"])
        self.done = saved["epoch"]
        self.resume_batch = saved.get("batch", 0)  # older versions saved at epoch ends only
        self.resume_metrics = saved.get("metric_states")
        record["epochs"], record["best_epoch"] = saved["epochs"], saved["best_epoch"]
        best = record["epochs"][record["best_epoch"] - 1] if record["best_epoch"] else {}
        self.best = best["eval"][run.main_metric] if "eval" in best else None
        run.started = time.time() - saved["seconds"]
        print(f"Resuming from checkpoint {saved['path']}: {self._position()}.", flush=True)
        if record["best_epoch"] == self.done and not self.resume_batch:
            # The kill may have cut this epoch's best/ save, which follows its checkpoint (a
            # checkpoint inside the next epoch comes after a complete save).
            run.save_best(self.model, best.get("eval", {}))

    def _position(self):
        """Where a resumed run starts, in words."""
        epochs, done = self.run.config.num_train_epochs, f"epoch {self.done} of"
        if not self.resume_batch:
            return f"{done} {epochs} done, training from epoch {self.done + 1}"
        steps = self.run.record["steps_per_epoch"]
        return (f"{done} {epochs} done and {self.resume_batch} of {steps} steps of epoch "
                f"{self.done + 1}, training from its step {self.resume_batch + 1}")

    def take_resume_point(self):
        """(batches to skip, metric states or None) for the next epoch to train: the resumed
        position the first time, (0, None) after."""
        point = self.resume_batch, self.resume_metrics
        self.resume_batch, self.resume_metrics = 0, None
        return point

    def save_mid_epoch(self, batches_done, metric_states):
        """Checkpoints epoch `done` + 1 after `batches_done` of its batches, with its running
        metric values."""
        self._save(batches_done, metric_states=metric_states)

    def _save(self, batch, **more):
        """Checkpoints the model, the optimizer and the run's state at `batch` batches into
        the epoch after the `done` completed ones."""
        run, record = self.run, self.run.record
        step = self.done * record["steps_per_epoch"] + batch
        self.checkpoint.save(step, dict(
            epoch=self.done, batch=batch, epochs=record["epochs"], best_epoch=record["best_epoch"],
            seconds=time.time() - run.started, data_fingerprint=record["data_fingerprint"], **more))

    def end(self, epoch, train_loss, train_metrics=None):
        """After `epoch` (1-based): evaluate, checkpoint, then write best/ (if better) and
        metrics.json. `train_metrics`: more of the epoch's training logs, recorded as train_*."""
        run, record = self.run, self.run.record
        entry = {"epoch": epoch, "train_loss": float(train_loss),
                 **{f"train_{k}": float(v) for k, v in (train_metrics or {}).items()},
                 "seconds": round(time.time() - run.started, 1)}
        better, rows = True, None
        if run.evaluation:
            rows, predicted = run.predict(self.model, run.evaluation, run.eval_features)
            result = run.task.score(run.evaluation, predicted, run.label_map, run.glue_task)
            if run.teacher is not None:
                result.update(run.task.teacher_metrics(predicted, run.teacher_predicted))
            if run.main_metric not in result:
                raise ValueError(f"main_metric={run.main_metric!r} is not among the eval metrics "
                                 f"{sorted(result)}")
            entry["eval"] = result
            better = self.best is None or result[run.main_metric] > self.best
            agreement = "".join(f", {k} {v:.4f}" for k, v in result.items()
                                if k.startswith("teacher_"))
            print(f"epoch {epoch}: eval {run.main_metric} = {result[run.main_metric]:.4f}"
                  f"{agreement} (train loss {entry['train_loss']:.4f})", flush=True)
            if better:
                self.best = result[run.main_metric]
        record["epochs"].append(entry)
        if better:
            record["best_epoch"], self.best_rows = epoch, rows
        self.done = epoch
        # The checkpoint first: a kill during the best/ save is then redone by `resume`.
        self._save(0)
        if better:
            run.save_best(self.model, entry.get("eval", {}))
        write_json(os.path.join(run.config.output_dir, "metrics.json"), record)


def run_finetuning(config=None, *, train_examples=None, eval_examples=None, test_examples=None,
                   label_map=None, **options):
    """Fine-tunes the encoder and tokenizer of `config.init_checkpoint` on `config.task`;
    returns the record written to OUTPUT_DIR/metrics.json.

    `config`: a FinetuneConfig, or None to make one from `options` (its option names, the
    flags of tools/finetune.py). Data, exactly one of: `train_examples` (and `eval_examples`,
    `test_examples`, optional `label_map`; default from the training examples),
    `config.train_file` (and eval/test files) or `config.tfds_name`.

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
    output_dir = config.output_dir
    os.makedirs(output_dir, exist_ok=True)
    recover_directory(os.path.join(output_dir, "best"))  # a kill mid-swap: the previous best/
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
        shutil.rmtree(os.path.join(output_dir, state_lib.CHECKPOINT_SUBDIR), ignore_errors=True)
        print(f"{output_dir} holds the complete run of these flags (best epoch "
              f"{complete['best_epoch']}): nothing to train. Delete it, or pass another "
              "--output_dir, to train again.", flush=True)
        return complete
    if not resuming:
        state_lib.remove_earlier_outputs(output_dir)
        write_json(os.path.join(output_dir, "flags.json"), config.to_dict())
    logging.info("%d train examples -> %d features; %s eval; %s test", len(run.train),
                 run.record["train_features"], len(run.evaluation or []), len(run.test or []))
    if teacher is not None:
        teacher.annotate(run)  # its logits on the training data, before the student exists
        keras.utils.set_random_seed(config.seed)  # the student starts as it would without one
    trainer, model = _build_model(run)
    epochs = _Epochs(run, model, state_lib.TrainingCheckpoint(output_dir, trainer))
    saved = epochs.checkpoint.restore()
    if saved:
        epochs.resume(saved)
    for epoch in range(epochs.done, config.num_train_epochs):
        logs = _train_epoch(run, trainer, epochs, epoch)
        # With a teacher: the soft and hard loss terms and the teacher agreement, as train_*.
        epochs.end(epoch + 1, logs.pop("loss"), logs if teacher is not None else None)
    return _finish(run, model, epochs)


def _epoch_dataset(run, epoch):
    """The training batches of `epoch` (0-based), shuffled by (seed, epoch) only: a resumed run
    sees the batches of an uninterrupted one."""
    config, teacher = run.config, run.teacher
    options = dict(shuffle=True, seed=state_lib.epoch_seed(config.seed, epoch),
                   pad_id=run.tokenizer.pad_id)
    if teacher is not None:
        return teacher.dataset(run.task, run.train_features, config.train_batch_size, **options)
    return run.task.dataset(run.train_features, config.train_batch_size, **options)


def _train_epoch(run, trainer, epochs, epoch):
    """Trains epoch `epoch` (0-based) from where a resumed run left it, checkpointing inside it
    every `--checkpoint_every` steps (0: every TIMED_CHECKPOINT_SECONDS); returns its last
    training logs (loss and metrics: means over all its batches, resumed or not)."""
    config, steps_per_epoch = run.config, run.record["steps_per_epoch"]
    first_batch, metric_states = epochs.take_resume_point()
    dataset = _epoch_dataset(run, epoch)
    if first_batch:  # trained before the kill
        dataset = dataset.skip(first_batch)
    callbacks = [callbacks_lib.MidEpochCheckpoint(
        epochs.save_mid_epoch, batches_per_epoch=steps_per_epoch, first_batch=first_batch,
        epoch_start_step=epoch * steps_per_epoch, every_steps=config.checkpoint_every,
        every_seconds=TIMED_CHECKPOINT_SECONDS)]
    if metric_states is not None:
        callbacks.append(callbacks_lib.RestoreMetricStates(metric_states))
    history = trainer.fit(dataset, initial_epoch=epoch, epochs=epoch + 1, callbacks=callbacks,
                          verbose=config.verbose, shuffle=False)
    return {k: v[-1] for k, v in history.history.items()}


def _build_model(run):
    """(the compiled model that trains, its optimizer built; the task model over the encoder of
    `init_checkpoint`): the same model, or with a teacher the `TaskDistiller` of the task model."""
    config, task = run.config, run.task
    strategy = strategy_lib.create_strategy(config.runtime.distribution_strategy)
    lengths = [len(r) for r in run.train_features["input_word_ids"]]
    steps_per_epoch = len(batching.batch_indices(lengths, config.train_batch_size, shuffle=True))
    run.record["steps_per_epoch"] = steps_per_epoch
    # An update per --gradient_accumulation_steps batches.
    total_steps = -(-steps_per_epoch * config.num_train_epochs
                    // config.optimizer.gradient_accumulation_steps)
    with dtype_policy(config.runtime.dtype), strategy.scope():
        encoder = BertEncoder.from_pretrained(config.init_checkpoint)
        encoder.check_tokenizer(run.tokenizer, f"--init_checkpoint={config.init_checkpoint}")
        model = task.build_model(encoder, run.label_map, config.dropout,
                                 checkpoint=config.init_checkpoint, options=config.task_options)
        optimizer = config.optimizer.make_optimizer(
            total_steps, int(config.warmup_proportion * total_steps), encoder.num_layers)
        trainer = model if run.teacher is None else run.teacher.trainer(model, task)
        trainer.compile(optimizer=optimizer, jit_compile=config.runtime.jit_compile)
        trainer.optimizer.build(trainer.trainable_variables)  # its slots exist before a restore
    return trainer, model


def _finish(run, model, epochs):
    """Eval and test predictions of the best epoch's model, the final metrics.json; the
    checkpoints go (the run is complete)."""
    config, task, record = run.config, run.task, run.record
    if record["best_epoch"] != epochs.done:
        model.load_weights(os.path.join(run.best_dir, "model.keras"))
    if run.evaluation:
        record["eval"] = record["epochs"][record["best_epoch"] - 1]["eval"]
        rows = epochs.best_rows
        if rows is None:  # the best epoch ran before a resume
            rows, _ = run.predict(model, run.evaluation, run.eval_features)
        write_jsonl(os.path.join(config.output_dir, "eval_predictions.jsonl"), rows)
    if run.test:
        rows, predicted = run.predict(model, run.test, run.test_features)
        write_jsonl(os.path.join(config.output_dir, "test_predictions.jsonl"), rows)
        if task.is_labeled(run.test):
            record["test"] = task.score(run.test, predicted, run.label_map)
    record["seconds"] = round(time.time() - run.started, 1)
    record["complete"] = True
    write_json(os.path.join(config.output_dir, "metrics.json"), record)
    epochs.checkpoint.delete()
    return record
