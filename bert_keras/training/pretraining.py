"""Pretraining: `run_pretraining(config)` over `loop.train`, for each `--objective`: BERT's
masked LM + NSP / SOP / none, ELECTRA's replaced-token detection, DistilBERT's distillation
(the objectives: tasks/pretraining/objectives.py; the model of a run: `pretraining_models`).

Data: `--train_data` (static TFRecords, e.g. from tools/create_pretraining_data.py) or
`--train_text` (raw text, one sentence per line, blank line between documents; pairs and
masks are made on the fly) or `--tfds_name` (a TFDS text dataset prepared in
`--tfds_data_dir`, read as raw text: one example = one document; one that is not prepared
is refused before any work). Held-out data, `--eval_data` (TFRecords) or `--eval_text` (raw
text), is evaluated every `--eval_every` steps and at the end of each phase on its first
`--eval_steps` batches, the same ones each time (`pretraining_eval`). The encoder is
`BertEncoder.from_preset(preset, **overrides)` with the vocab's size, or the weights of
`init_checkpoint` to continue pretraining. With `phase2_seq_length`, the last
`phase2_fraction` of the steps use that sequence length (BERT's 128 then 512 recipe). The
learning-rate schedule (linear warmup, linear decay to `end_learning_rate` at `train_steps`)
spans both phases. Rerunning the same call resumes.

MODEL_DIR/ as `loop.train` writes it, plus encoder/ (the final encoder: BERT's, ELECTRA's
discriminator, the distilled student), final/ (the masked LM with its heads as a task
directory, which tools/export.py serves as fill-mask; not for ELECTRA), history.json
([step, {metric: value}] per logging window) and, with held-out data, eval_metrics.json
([step, {metric: value}] per evaluation, the whole run's across resumes; also in eval/ of
TensorBoard, under the training metrics' names). A run that fails before it saved anything
removes the MODEL_DIR it created (`output_dirs`).

Example:
    >>> import bert_keras as bk
    >>> result = bk.run_pretraining(  # doctest: +SKIP
    ...     model_dir="/tmp/bert_mini", train_text="bert_keras/assets/web_bible_corpus.txt.gz",
    ...     train_steps=300, global_batch_size=32, checkpoint_every=100)
    >>> result["encoder_dir"]  # doctest: +SKIP
    '/tmp/bert_mini/encoder'
"""

import contextlib
import os

import keras
import tensorflow as tf
from absl import logging

from bert_keras.data.pretraining import documents, pipeline, records
from bert_keras.errors import InputError
from bert_keras.files import exists, expand_patterns, read_json, write_json
from bert_keras.tasks import task_io
from bert_keras.tasks.pretraining import Pretraining
from bert_keras.text.tokenizer import WordPieceTokenizer
from bert_keras.text.tokenizers import load_tokenizer
from bert_keras.training import output_dirs, pretraining_eval, pretraining_models
from bert_keras.training import strategy as strategy_lib
from bert_keras.training.loop import train
from bert_keras.training.pretraining_config import PretrainConfig

# What a run writes in MODEL_DIR before its first checkpoint: nothing worth keeping.
RUN_RECORDS = ("run_config.json", "train/events.out.tfevents.*", "eval/events.out.tfevents.*")


def _dataset_fn(config, tokenizer, *, train_data, train_text, max_seq_length,
                max_predictions_per_seq):
    data = config.data
    next_sentence = data.pair_mode != "none"

    def dataset_fn(batch_size, input_context):
        if train_data:
            dataset = records.read_pretraining_tfrecords(
                [p.strip() for p in train_data.split(",") if p.strip()], batch_size,
                max_seq_length, max_predictions_per_seq, input_context=input_context,
                seed=config.seed, next_sentence=next_sentence)
        else:
            dataset = pipeline.dynamic_pretraining_dataset(
                train_text, tokenizer, batch_size, max_seq_length=max_seq_length,
                max_predictions_per_seq=max_predictions_per_seq,
                masked_lm_prob=data.masked_lm_prob, whole_word_mask=data.whole_word_mask,
                ngram=data.ngram, pair_mode=data.pair_mode, seed=config.seed,
                documents_per_chunk=data.documents_per_chunk,
                input_context=input_context, check_text=False)  # run_pretraining checked it
        return pretraining_models.objective_of(config).inputs(dataset)

    return dataset_fn


def _tokenizer(config):
    data = config.data
    if data.tokenizer_dir:
        return load_tokenizer(data.tokenizer_dir)
    teacher = (pretraining_models.objective_of(config).teacher
               and config.objective_options.teacher_checkpoint)
    source = config.encoder.init_checkpoint or (
        teacher and (task_io.find_task_directory(teacher, "final") or teacher))
    if data.vocab_file is None and source:
        return load_tokenizer(source)
    return WordPieceTokenizer(data.vocab_file or pipeline.default_vocab_file(),
                              lower_case=data.lower_case)


def _model_fn(config, tokenizer):
    return lambda: pretraining_models.build_model(config, tokenizer)


def _train_naming_a_corrupt_file(config, train_phase):
    """train_phase(), with a truncated or corrupt --train_data file named (TF's DataLossError
    names only a byte offset); the checkpoints up to that point stay for a resume."""
    try:
        return train_phase()
    except tf.errors.DataLossError as e:
        found = records.corrupt_file(_train_data_files(config.data))
        raise _corrupt_file_error(found or e.message.splitlines()[0]) from None


def _train_data_files(data):
    """The files of --train_data and --phase2_train_data."""
    options = [name for name in ("train_data", "phase2_train_data") if getattr(data, name)]
    return [path for name in options for path in data.files(name)]


def _corrupt_file_error(found):
    """The one line for a truncated or corrupt TFRecord file; `found`: "PATH: TF'S REASON"."""
    return InputError(f"{found}: a TFRecord file is truncated or corrupt; recreate it "
                      "(tools/create_pretraining_data.py) or leave it out of --train_data.")


def run_pretraining(config=None, *, strategy=None, progress=True, **options):
    """Pretrains an encoder and saves it to model_dir/encoder; rerunning resumes.

    `config`: a PretrainConfig, or None to make one from `options` (its option names, the
    flags of tools/pretrain.py). `strategy`: a tf.distribute.Strategy (default: made from
    `config.runtime.distribution_strategy`). Returns a dict: step, initial_step, history (windows
    of both phases), evaluations ([(step, {metric: value})] of the whole run), encoder_dir.
    """
    config = config or PretrainConfig.from_options(**options)
    data, runtime = config.data, config.runtime
    if data.train_text:  # bad text fails here, once, before the model directory is made
        documents.check_corpus(expand_patterns(data.train_text), data.pair_mode)
    if data.tfds.tfds_name:  # so does a TFDS dataset that is not prepared, or too little text
        documents.check_tfds_corpus(data.tfds_text(), data.pair_mode)
    if data.train_data:  # so does a cut-off TFRecord file (TF would find it on reaching its end)
        found = records.cut_off_file(_train_data_files(data))
        if found:
            raise _corrupt_file_error(found)
    # One seed for everything random: initial weights, dropout, data, ELECTRA's sampling.
    keras.utils.set_random_seed(config.seed)
    if strategy is None:
        strategy = strategy_lib.create_strategy(runtime.distribution_strategy, tpu=runtime.tpu)
    # Only the chief writes MODEL_DIR. A run that fails before it saved anything (bad eval
    # data, Ctrl-C before the first checkpoint) leaves none that it made.
    made_here = (output_dirs.removed_if_failed(config.model_dir, records=RUN_RECORDS)
                 if strategy_lib.is_chief(strategy) else contextlib.nullcontext())
    with made_here:
        return _pretrain(config, strategy, progress)


def _pretrain(config, strategy, progress):
    """`run_pretraining` once its text is checked and its strategy made."""
    data, runtime = config.data, config.runtime
    tokenizer = _tokenizer(config)
    # The held-out batches, read once before any training (bad eval data fails here); each
    # evaluation goes to model_dir/eval_metrics.json.
    evaluation = pretraining_eval.evaluation(config, tokenizer)
    model_fn = _model_fn(config, tokenizer)
    phase1 = config.phase1_steps()
    phases = [(phase1, 0, _dataset_fn(
        config, tokenizer, train_data=data.train_data,
        train_text=data.train_text or data.tfds_text(),
        max_seq_length=data.max_seq_length,
        max_predictions_per_seq=data.max_predictions_per_seq))]
    if data.phase2_seq_length:
        phases.append((config.train_steps, phase1, _dataset_fn(
            config, tokenizer,
            train_data=data.phase2_train_data if data.train_data else None,
            train_text=None if data.train_data else (data.train_text or data.tfds_text()),
            max_seq_length=data.phase2_seq_length,
            max_predictions_per_seq=(data.phase2_max_predictions_per_seq
                                     or data.max_predictions_per_seq))))
    results = []
    objective = pretraining_models.objective_of(config)
    reports = objective.reports(config)  # one set for both phases: each warns once
    for phase_steps, start_step, dataset_fn in phases:
        if start_step:
            print(f"Phase 2: sequence length {data.phase2_seq_length} from step {start_step}.",
                  flush=True)
        results.append(_train_naming_a_corrupt_file(config, lambda: train(
            model_fn, dataset_fn, model_dir=config.model_dir, train_steps=phase_steps,
            global_batch_size=config.global_batch_size, strategy=strategy, dtype=runtime.dtype,
            jit_compile=runtime.jit_compile, checkpoint_every=config.checkpoint_every,
            keep_checkpoints=config.keep_checkpoints,
            gradient_accumulation_steps=config.optimizer.gradient_accumulation_steps,
            steps_per_execution=config.steps_per_execution, log_every=config.log_every,
            dataset_start_step=start_step, config=config.to_dict(), progress=progress,
            extra_callbacks=reports, evaluation=evaluation)))
    result = results[-1]
    history = [entry for r in results for entry in r.history]
    encoder_dir = os.path.join(config.model_dir, "encoder")
    if result.chief:
        _append_history(os.path.join(config.model_dir, "history.json"), history,
                        results[0].initial_step)
        objective.final_encoder(result.model).save_pretrained(encoder_dir, tokenizer)
        logging.info("Saved the encoder to %s", encoder_dir)
        masked_lm = objective.fill_mask_model(result.model)
        if masked_lm is not None:  # tools/export.py serves it as fill-mask
            task_io.save_task(os.path.join(config.model_dir, "final"), masked_lm, tokenizer,
                              task=Pretraining.name,
                              seq_length=data.phase2_seq_length or data.max_seq_length)
            logging.info("Saved the masked LM to %s/final", config.model_dir)
    return dict(step=result.step, initial_step=results[0].initial_step, history=history,
                evaluations=result.evaluations, encoder_dir=encoder_dir)


def _append_history(path, history, initial_step):
    """Keeps model_dir/history.json ([step, {metric: value}] per logging window) whole across
    resumes: windows before this run's first step come from the earlier runs."""
    earlier = []
    if exists(path):  # at a URL too (tf.io.gfile): os.path would miss it and drop the windows
        earlier = [entry for entry in read_json(path, expect=list) if entry[0] <= initial_step]
    write_json(path, earlier + [[step, values] for step, values in history])
