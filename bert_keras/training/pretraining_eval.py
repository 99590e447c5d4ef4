"""Held-out evaluation during pretraining (`--eval_data` / `--eval_text`, `--eval_every`,
`--eval_steps`), Google run_pretraining's do_eval.

`eval_batches(config, tokenizer)` reads the first `--eval_steps` batches of the held-out data
through the training pipeline (TFRecords: `records.read_pretraining_tfrecords` without shuffle
or repeat; raw text: `pipeline.dynamic_pretraining_dataset` with the run's --seed, one pass)
and keeps them in memory, so every evaluation scores the very same examples, masks and pairs
(the pipelines' shuffles and masks draw anew on each pass). A batch holds
`global_batch_size / gradient_accumulation_steps` examples (one micro-step's: what fits in
memory in training fits here); fewer batches than --eval_steps are all used, no batch at all
is an InputError naming the option and its files.

The sequence length is phase 1's (--max_seq_length, --max_predictions_per_seq) in both phases
of a two-phase run: the figures of the whole run are over the same batches, so they compare
(and --eval_data needs TFRecords of one length only). The model of phase 2 reads the shorter
sequences as they are.

`PretrainingEvaluation.evaluate(model)` is the compiled model's `evaluate` over them: the
same names as the training metrics (loss, masked_lm_accuracy, next_sentence_accuracy, ...;
ELECTRA's discriminator_accuracy, replaced_precision, replaced_recall, ...), which
TensorBoard's eval/ run draws on the same charts as train/'s. Each evaluation is added to
MODEL_DIR/eval_metrics.json ([[step, {metric: value}], ...], the whole run's: the trainer keeps
the list in its checkpoints, so a resumed run goes on with it) once its checkpoint is written. The
random state an evaluation reads (ELECTRA samples its replacements with a seed generator) is
set to a fixed value for the evaluation and put back after it: evaluations of one model agree,
and the training run is the same with or without them.

Example (a few seconds on a CPU):
>>> from bert_keras.training.pretraining import run_pretraining
>>> import tempfile
>>> result = run_pretraining(  # doctest: +SKIP
...     model_dir=tempfile.mkdtemp(), train_text="bert_keras/assets/web_bible_corpus.txt.gz",
...     eval_text="bert_keras/assets/web_bible_corpus.txt.gz", eval_every=3, eval_steps=2,
...     preset="bert_tiny", max_seq_length=32, max_predictions_per_seq=5, train_steps=6,
...     global_batch_size=8, warmup_steps=2, documents_per_chunk=100, progress=False)
>>> [step for step, _ in result["evaluations"]]  # doctest: +SKIP
[3, 6]
"""

import numpy as np
import tensorflow as tf

from bert_keras import files
from bert_keras.data.pretraining import documents, pipeline, records
from bert_keras.errors import InputError
from bert_keras.metrics.logs import scalar_floats
from bert_keras.training import pretraining_models
from bert_keras.training.loop import Evaluation, seed_states

EVAL_METRICS_FILE = "eval_metrics.json"


def eval_batch_size(config):
    """Examples per evaluation batch: one micro-step's over all replicas."""
    return config.global_batch_size // config.optimizer.gradient_accumulation_steps


def eval_dataset(config, tokenizer, batch_size):
    """The held-out data as the model takes it: one deterministic pass (no shuffle of
    TFRecords, no repeat), full batches of `batch_size`, the run's masking and pairs."""
    data = config.data
    option = data.eval_source()
    paths = data.files(option)
    if option == "eval_data":
        try:
            dataset = records.read_pretraining_tfrecords(
                paths, batch_size, data.max_seq_length, data.max_predictions_per_seq,
                is_training=False, seed=config.seed, next_sentence=data.pair_mode != "none")
        except ValueError as e:  # a file of another length or schema, all files empty
            raise InputError(f"--eval_data={data.eval_data!r}: {e}") from None
    else:
        try:  # run_pretraining read and checked --train_text already: held out the same, once
            if not (data.train_text and paths == data.files("train_text")):
                documents.check_corpus(paths, data.pair_mode)
        except InputError as e:
            raise InputError(f"--eval_text={data.eval_text!r}: {e}") from None
        dataset = pipeline.dynamic_pretraining_dataset(
            paths, tokenizer, batch_size, max_seq_length=data.max_seq_length,
            max_predictions_per_seq=data.max_predictions_per_seq,
            masked_lm_prob=data.masked_lm_prob, whole_word_mask=data.whole_word_mask,
            ngram=data.ngram, pair_mode=data.pair_mode, seed=config.seed,
            documents_per_chunk=data.documents_per_chunk, repeat=False, check_text=False)
    return pretraining_models.objective_of(config).inputs(dataset)


def eval_batches(config, tokenizer):
    """The first `--eval_steps` batches of the held-out data, as a list of numpy structures;
    InputError naming the option and files if there is not one full batch."""
    data = config.data
    batch_size = eval_batch_size(config)
    dataset = eval_dataset(config, tokenizer, batch_size).take(config.eval_steps)
    batches = list(dataset.as_numpy_iterator())
    if not batches:
        option = data.eval_source()
        raise InputError(f"--{option}={getattr(data, option)!r} gives no batch of {batch_size} "
                         "examples to evaluate on; give more held-out data.")
    return batches


def as_dataset(batches):
    """A tf.data.Dataset of the batches (the same elements on every pass)."""
    stacked = tf.nest.map_structure(lambda *parts: np.stack(parts), *batches)
    return tf.data.Dataset.from_tensor_slices(stacked)


def _random_states(model):
    """The states of the model's seed generators (of its variables that are not weights)."""
    return [v for v in seed_states(model) if v.path.endswith("seed_generator_state")]


class PretrainingEvaluation(Evaluation):
    """Every `--eval_every` steps (and at the end of each phase): the compiled metrics of the
    model over the held-out batches."""

    def __init__(self, config, batches):
        super().__init__(config.eval_every)
        self.dataset = as_dataset(batches)
        self.num_batches, self.seed = len(batches), config.seed
        self.examples = self.num_batches * eval_batch_size(config)
        self.path = files.join(config.model_dir, EVAL_METRICS_FILE)

    def after_checkpoint(self, step, better):
        if self.chief:  # up to date during the run; a kill before this leaves the last one
            files.write_json(self.path, [[s, values] for s, values in self.evaluations])

    def evaluate(self, model):
        states = _random_states(model)
        saved = [np.array(v.numpy()) for v in states]
        try:
            for variable, value in zip(states, saved):  # the same draws in every evaluation
                variable.assign(np.full_like(value, self.seed))
            result = model.evaluate(self.dataset, return_dict=True, verbose=0)
        finally:
            for variable, value in zip(states, saved):
                variable.assign(value)
        return scalar_floats(result)

    def describe(self, step, result, train_metrics):
        names = [name for name in ("loss", "masked_lm_accuracy", "next_sentence_accuracy",
                                   "discriminator_accuracy", "replaced_recall",
                                   "generator_accuracy") if name in result]
        names += [name for name in result if name not in names]
        figures = " ".join(f"{name} {result[name]:.4g}" for name in names)
        return f"step {step}: eval ({self.examples} held-out examples) {figures}"


def evaluation(config, tokenizer):
    """The `PretrainingEvaluation` of `config`, or None without --eval_data / --eval_text."""
    if not config.data.eval_source():
        return None
    return PretrainingEvaluation(config, eval_batches(config, tokenizer))
