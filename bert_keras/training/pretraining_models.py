"""The model a pretraining run trains: its --objective's (tasks/pretraining/objectives.py),
with the teacher of --teacher_checkpoint where the objective learns from one, the heads of
--init_checkpoint where it has them, compiled with the run's optimizer."""

from absl import logging

from bert_keras.checkpoints import CheckpointError
from bert_keras.errors import InputError
from bert_keras.models.encoder import BertEncoder
from bert_keras.tasks import registry, task_io
from bert_keras.tasks.pretraining import BertPretrainer, head_checkpoint
from bert_keras.tasks.pretraining.objectives import OBJECTIVES
from bert_keras.text.tokenizers import load_tokenizer, tokenizer_difference


def load_teacher(path):
    """A `BertPretrainer` (encoder + MLM head) from a bert_keras pretraining run (its model dir
    or final/), or a Hugging Face *ForMaskedLM / *ForPreTraining or Google BERT directory."""
    task_dir = task_io.find_task_directory(path, "final")
    if task_dir:
        model, _, _ = registry.load_task(task_dir)
        if not isinstance(model, BertPretrainer):
            raise InputError(f"--teacher_checkpoint={path!r} holds a {type(model).__name__}, not "
                             "a masked LM (a pretraining run's final/).")
        return model
    teacher = BertPretrainer(BertEncoder.from_pretrained(path), next_sentence=False,
                             mlm_activation=head_checkpoint.masked_lm_activation(path))
    try:
        head_checkpoint.load_pretraining_heads(teacher, path)
    except (CheckpointError, ValueError) as e:
        raise InputError(f"--teacher_checkpoint={path!r} has no masked-LM head to distil from "
                         f"({e}).") from None
    return teacher


def check_teacher_tokenizer(config, teacher, tokenizer):
    """InputError unless `tokenizer` (the run's: --tokenizer_dir, --vocab_file or the
    teacher's own) gives the ids the teacher reads: the student starts from the teacher's
    embeddings and learns its predictions over the teacher's vocabulary. The vocabularies are
    compared, not the families' names (a teacher directory without tokenizer files gives only
    its embedding's size to compare)."""
    teacher_checkpoint = config.objective_options.teacher_checkpoint
    flag = f"--teacher_checkpoint={teacher_checkpoint!r}"
    if teacher.encoder.vocab_size != tokenizer.vocab_size:
        raise InputError(f"{flag}: the teacher's token embedding has "
                         f"{teacher.encoder.vocab_size:,} rows but the vocab "
                         f"{tokenizer.vocab_file!r} has {tokenizer.vocab_size:,} entries.")
    data = config.data
    source = (data.tokenizer_dir and f"--tokenizer_dir={data.tokenizer_dir!r}"
              or data.vocab_file and f"--vocab_file={data.vocab_file!r}")
    if not source:
        return  # the teacher's own tokenizer
    directory = task_io.find_task_directory(teacher_checkpoint, "final")
    try:
        theirs = load_tokenizer(directory or teacher_checkpoint)
    except FileNotFoundError:
        return
    difference = tokenizer_difference(theirs, tokenizer)
    if difference:
        raise InputError(f"{flag}: the teacher's tokenizer and {source} differ: {difference}; "
                         "the student learns the teacher's predictions, so both need the "
                         "teacher's tokenizer.")


def objective_of(config):
    """The `Objective` of `config`'s --objective (tasks/pretraining/objectives.py)."""
    return OBJECTIVES[config.objective]


def build_model(config, tokenizer):
    """The compiled pretraining model of `config` (call it in the strategy's scope)."""
    objective = objective_of(config)
    teacher = None
    if objective.teacher:
        teacher = load_teacher(config.objective_options.teacher_checkpoint)
        check_teacher_tokenizer(config, teacher, tokenizer)
    model = objective.model(config, tokenizer, teacher)
    init_checkpoint = config.encoder.init_checkpoint
    if init_checkpoint and objective.load_heads:
        _try_load_heads(objective.load_heads, model, init_checkpoint)
    model.compile(optimizer=config.optimizer.make_optimizer(
        config.train_steps, config.warmup_steps, model.encoder.num_layers))
    return model


def _try_load_heads(load, model, init_checkpoint):
    """Continued pretraining keeps the checkpoint's heads where it has them."""
    try:
        load(model, init_checkpoint)
        logging.info("Loaded the pretraining heads of %s", init_checkpoint)
    except (CheckpointError, ValueError, OSError) as e:
        logging.info("Pretraining heads start from scratch (%s)", e)
