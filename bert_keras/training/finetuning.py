"""Fine-tuning: examples -> features -> task model -> epochs with eval -> best model on disk.

`run_finetuning(config)` trains the task of a `FinetuneConfig` on an encoder checkpoint. The
task type (`bert_keras.tasks`) reads, featurizes, builds the model, predicts and scores; this
module runs the epochs. The data are Python examples (`train_examples=`), files
(`--train_file`) or a TFDS task (`--tfds_name`). Each epoch trains on length-bucketed
batches, then evaluates; the best epoch by the main metric is kept. tools/finetune.py is the
command line over it.

OUTPUT_DIR/ flags.json (the config), metrics.json (per-epoch eval metrics, the best epoch's,
test metrics, baselines), eval_predictions.jsonl, test_predictions.jsonl, and best/
(task_io.save_task: model.keras, vocab.txt, task.json).

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
import time

import keras
from absl import logging

from bert_keras.data.finetuning import batching, tfds
from bert_keras.files import write_json, write_jsonl
from bert_keras.models.encoder import BertEncoder
from bert_keras.tasks import task_io
from bert_keras.tasks.registry import get_task
from bert_keras.text.tokenizers import load_tokenizer
from bert_keras.training import strategy as strategy_lib
from bert_keras.training.finetuning_config import FinetuneConfig
from bert_keras.optimization import create_optimizer
from bert_keras.training.precision import dtype_policy


def load_tfds_data(config):
    """(train, eval, test or None, label_map or None) of the config's TFDS task; the eval
    split defaults to validation (validation_matched for glue/mnli)."""
    name = config.tfds_name
    eval_split = config.tfds_eval_split or (
        "validation_matched" if name.startswith("glue/mnli") else "validation")
    load = lambda split: tfds.load_tfds_task(name, split, data_dir=config.tfds_data_dir)  # noqa: E731
    test = load(config.tfds_test_split) if config.tfds_test_split else None
    return (load(config.tfds_train_split), load(eval_split), test,
            tfds.tfds_label_map(name, data_dir=config.tfds_data_dir))


def read_files(config, name, labeled=True):
    """Examples of the config's task from --train_file / --eval_file / --test_file."""
    paths = config.files(name)
    if not paths:
        return None
    return get_task(config.task).read_files(paths, config.file_format(paths[0]), labeled,
                                            **config.reader_options())


class _EpochEnd(keras.callbacks.Callback):
    """After each epoch: evaluate, keep the best epoch's weights and write best/ and metrics."""

    def __init__(self, run):
        super().__init__()
        self.run, self.best, self.best_weights, self.best_rows = run, None, None, None

    def on_epoch_end(self, epoch, logs=None):
        run = self.run
        entry = {"epoch": epoch + 1, "train_loss": float((logs or {}).get("loss", float("nan"))),
                 "seconds": round(time.time() - run.started, 1)}
        better = True
        if run.evaluation:
            rows, predicted = run.task.predict(self.model, run.evaluation, run.eval_features,
                                               run.label_map, run.config)
            result = run.task.score(run.evaluation, predicted, run.label_map, run.glue_task)
            if run.main_metric not in result:
                raise ValueError(f"main_metric={run.main_metric!r} is not among the eval metrics "
                                 f"{sorted(result)}")
            entry["eval"] = result
            better = self.best is None or result[run.main_metric] > self.best
            print(f"epoch {epoch + 1}: eval {run.main_metric} = {result[run.main_metric]:.4f} "
                  f"(train loss {entry['train_loss']:.4f})", flush=True)
            if better:
                self.best, self.best_rows = result[run.main_metric], rows
        run.record["epochs"].append(entry)
        if better:
            run.record["best_epoch"] = epoch + 1
            self.best_weights = self.model.get_weights()
            run.save_best(self.model, entry.get("eval", {}))
        write_json(os.path.join(run.config.output_dir, "metrics.json"), run.record)


class _Run:
    """The data, task and record of one fine-tuning run (what the epoch callback needs)."""

    def __init__(self, config, train, evaluation, test, label_map):
        self.config, self.started = config, time.time()
        self.task = get_task(config.task)
        if config.tfds_name:
            train, evaluation, test, label_map = load_tfds_data(config)
        elif config.train_file:
            train = read_files(config, "train_file")
            evaluation = read_files(config, "eval_file")
            test = read_files(config, "test_file", labeled=not config.test_unlabeled)
        if label_map is None and not config.tfds_name:
            label_map = self.task.label_map(train)
        if config.max_train_examples:
            train = train[:config.max_train_examples]
        if config.max_eval_examples:
            evaluation = evaluation[:config.max_eval_examples] if evaluation else evaluation
            test = test[:config.max_eval_examples] if test else test
        self.train, self.evaluation, self.test, self.label_map = train, evaluation, test, label_map
        self.tokenizer = load_tokenizer(config.init_checkpoint)
        self.train_features = self.featurize(train)
        self.eval_features = self.featurize(evaluation) if evaluation else None
        self.test_features = self.featurize(test) if test else None
        if config.task == "span_qa" and config.version_2_with_negative is None:
            # The resolved value is what the run records and what prediction reads.
            self.config = config = config.replace(
                version_2_with_negative=any(ex.is_impossible for ex in train))
        self.glue_task = config.glue_task()
        self.main_metric = config.main_metric_for(self.glue_task)
        self.record = {"task": config.task, "main_metric": self.main_metric, "epochs": [],
                       "best_epoch": None, "train_examples": len(train),
                       "train_features": len(self.train_features["input_word_ids"]),
                       "dtype": config.dtype}
        if evaluation:
            self.record["eval_examples"] = len(evaluation)
            self.record["baselines"] = self.task.baselines(train, evaluation, label_map)

    def featurize(self, examples):
        c = self.config
        return self.task.featurize(examples, self.tokenizer, self.label_map,
                                   max_seq_length=c.max_seq_length, doc_stride=c.doc_stride,
                                   max_query_length=c.max_query_length)

    def save_best(self, model, metrics):
        labels = None if self.label_map is None else self.label_map.labels
        task_io.save_task(os.path.join(self.config.output_dir, "best"), model, self.tokenizer,
                          self.config.task, self.config.max_seq_length, labels=labels,
                          text_fields=self.task.text_fields(self.train), metrics=metrics)


def run_finetuning(config=None, *, train_examples=None, eval_examples=None, test_examples=None,
                   label_map=None, **options):
    """Fine-tunes the encoder and tokenizer of `config.init_checkpoint` on `config.task`;
    returns the record written to OUTPUT_DIR/metrics.json.

    `config`: a FinetuneConfig, or None to make one from `options` (its field names, the
    flags of tools/finetune.py). Data, exactly one of: `train_examples` (and `eval_examples`,
    `test_examples`, optional `label_map`; default from the training examples),
    `config.train_file` (and eval/test files) or `config.tfds_name`.
    """
    config = config or FinetuneConfig(**options)
    config.validate_data_source(has_examples=train_examples is not None)
    os.makedirs(config.output_dir, exist_ok=True)
    write_json(os.path.join(config.output_dir, "flags.json"), config.to_dict())
    keras.utils.set_random_seed(config.seed)

    # Data, label map and features first: bad data fails before the model is built.
    run = _Run(config, train_examples, eval_examples, test_examples, label_map)
    config, task = run.config, run.task
    logging.info("%d train examples -> %d features; %s eval; %s test", len(run.train),
                 run.record["train_features"], len(run.evaluation or []), len(run.test or []))
    strategy = strategy_lib.create_strategy(config.distribution_strategy)
    train_ds = task.dataset(run.train_features, config.train_batch_size, shuffle=True,
                            seed=config.seed, pad_id=run.tokenizer.pad_id)
    lengths = [len(r) for r in run.train_features["input_word_ids"]]
    steps_per_epoch = len(batching.batch_indices(lengths, config.train_batch_size, shuffle=True))
    run.record["steps_per_epoch"] = steps_per_epoch
    total_steps = steps_per_epoch * config.num_train_epochs
    with dtype_policy(config.dtype), strategy.scope():
        encoder = BertEncoder.from_pretrained(config.init_checkpoint)
        model = task.build_model(encoder, run.label_map, config.dropout,
                                 checkpoint=config.init_checkpoint)
        optimizer = create_optimizer(
            "adamw", learning_rate=config.learning_rate, num_train_steps=total_steps,
            num_warmup_steps=int(config.warmup_proportion * total_steps),
            weight_decay=config.weight_decay, layerwise_lr_decay=config.layerwise_lr_decay,
            num_layers=encoder.num_layers if config.layerwise_lr_decay else None)
        model.compile(optimizer=optimizer, jit_compile=config.jit_compile)

    epoch_end = _EpochEnd(run)
    model.fit(train_ds, epochs=config.num_train_epochs, callbacks=[epoch_end],
              verbose=config.verbose, shuffle=False)  # the dataset reshuffles itself every epoch

    record = run.record
    if epoch_end.best_weights is not None and record["best_epoch"] != config.num_train_epochs:
        model.set_weights(epoch_end.best_weights)
    if run.evaluation:
        record["eval"] = record["epochs"][record["best_epoch"] - 1]["eval"]
        write_jsonl(os.path.join(config.output_dir, "eval_predictions.jsonl"), epoch_end.best_rows)
    if run.test:
        rows, predicted = task.predict(model, run.test, run.test_features, run.label_map, config)
        write_jsonl(os.path.join(config.output_dir, "test_predictions.jsonl"), rows)
        if task.is_labeled(run.test):
            record["test"] = task.score(run.test, predicted, run.label_map)
    record["seconds"] = round(time.time() - run.started, 1)
    write_json(os.path.join(config.output_dir, "metrics.json"), record)
    return record
