"""The model a pretraining run trains, per `--objective`: BERT's `BertPretrainer` (masked LM +
NSP / SOP / none), `ElectraPretrainer` (replaced-token detection) or `DistillationPretrainer`
(a student of a teacher masked LM). Each is compiled with the run's optimizer and has
`.encoder`, the encoder the run saves."""

from absl import logging

from bert_keras.checkpoints import CheckpointError
from bert_keras.errors import InputError
from bert_keras.models.encoder import BertEncoder
from bert_keras.tasks import registry, task_io
from bert_keras.tasks.pretraining import (
    BertPretrainer,
    electra_monitor,
    head_checkpoint,
)
from bert_keras.tasks.pretraining.distillation import (
    DistillationPretrainer,
    DistillOptions,
    student_from_teacher,
)
from bert_keras.tasks.pretraining.electra import (
    ElectraOptions,
    ElectraPretrainer,
    with_masked_lm_inputs,
)
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


def _encoder(config, tokenizer):
    choice = config.encoder
    if choice.init_checkpoint:
        encoder = BertEncoder.from_pretrained(choice.init_checkpoint, **choice.overrides())
        encoder.check_tokenizer(tokenizer, f"--init_checkpoint={choice.init_checkpoint}")
        return encoder
    return BertEncoder(choice.config(tokenizer.vocab_size))


class Objective:
    """One `--objective`: the model it trains, its batches, and what watches its run."""

    name = None
    pair_task = False  # trains BERT's sentence-pair task (--pair_mode; nsp by default)
    teacher = False  # learns from --teacher_checkpoint, and its student starts from it
    # head_checkpoint's loader of this model's heads: continued pretraining (--init_checkpoint)
    # keeps the checkpoint's heads where it has them.
    load_heads = None
    # The options only this objective reads (PretrainConfig.objective_options), or None.
    options_class = None

    def model(self, config, tokenizer):
        """The uncompiled pretraining model of `config`."""
        raise NotImplementedError

    def inputs(self, dataset):
        """The pretraining batches (x, y, sample_weight) as this objective's model takes them."""
        return dataset.map(with_masked_lm_inputs)

    def reports(self, config):
        """Callbacks that watch a run of `config` for a known failure."""
        return []


class MaskedLM(Objective):
    """BERT's masked LM (+ NSP / SOP / none), `BertPretrainer`."""

    name, pair_task = "mlm", True
    load_heads = staticmethod(head_checkpoint.load_pretraining_heads)

    def model(self, config, tokenizer):
        init_checkpoint = config.encoder.init_checkpoint
        activation = (head_checkpoint.masked_lm_activation(init_checkpoint)
                      if init_checkpoint else None)
        return BertPretrainer(_encoder(config, tokenizer),
                              next_sentence=config.data.pair_mode != "none",
                              mlm_activation=activation)

    def inputs(self, dataset):
        return dataset


class ReplacedTokenDetection(Objective):
    """ELECTRA, `ElectraPretrainer`."""

    name = "electra"
    load_heads = staticmethod(head_checkpoint.load_replaced_token_head)
    options_class = ElectraOptions

    def model(self, config, tokenizer):
        return ElectraPretrainer(_encoder(config, tokenizer), config.objective_options,
                                 curriculum_steps=config.curriculum_steps(), seed=config.seed)

    def reports(self, config):
        # A discriminator stuck at the all-original baseline.
        detector = electra_monitor.StuckDiscriminatorDetector(
            advice=config.objective_options.stuck_advice())
        return [electra_monitor.StuckDiscriminatorReport(config.log_every, detector)]


class Distillation(Objective):
    """DistilBERT's distillation of a teacher masked LM, `DistillationPretrainer`."""

    name, teacher = "distill", True
    options_class = DistillOptions

    def model(self, config, tokenizer):
        options = config.objective_options
        teacher = load_teacher(options.teacher_checkpoint)
        check_teacher_tokenizer(config, teacher, tokenizer)
        try:
            student = student_from_teacher(teacher.encoder, options.student_layer_list())
        except ValueError as e:  # a teacher of shared layers (ALBERT), or layers it lacks
            layers = (f" (--student_layers={options.student_layers})" if options.student_layers
                      else "")
            raise InputError(f"--teacher_checkpoint={options.teacher_checkpoint!r}{layers}: "
                             f"{e}") from None
        return DistillationPretrainer(
            teacher, student, temperature=options.distill_temperature, alpha_ce=options.alpha_ce,
            alpha_mlm=options.alpha_mlm, alpha_cos=options.alpha_cos)


OBJECTIVES = {objective.name: objective
              for objective in (MaskedLM(), ReplacedTokenDetection(), Distillation())}


def build_model(config, tokenizer):
    """The compiled pretraining model of `config` (call it in the strategy's scope)."""
    objective = OBJECTIVES[config.objective]
    model = objective.model(config, tokenizer)
    init_checkpoint = config.encoder.init_checkpoint
    if init_checkpoint and objective.load_heads:
        _try_load_heads(objective.load_heads, model, init_checkpoint)
    model.compile(optimizer=config.optimizer.make_optimizer(
        config.train_steps, config.warmup_steps, model.encoder.num_layers))
    return model


def model_inputs(config, dataset):
    """The pretraining data's (x, y, sample_weight) batches as `config`'s model takes them."""
    return OBJECTIVES[config.objective].inputs(dataset)


def reports(config):
    """The callbacks that watch a run of `config` for a known failure (ELECTRA: a
    discriminator stuck at the all-original baseline)."""
    return OBJECTIVES[config.objective].reports(config)


def final_encoder(model):
    """The encoder a finished run saves: `.encoder`, with ELECTRA's disentangled embedding
    deltas folded into it (the model trains no further after this)."""
    if isinstance(model, ElectraPretrainer):
        model.fold_embedding_deltas()
    return model.encoder


def masked_lm_model(model):
    """The part of a trained model that tools/export.py serves as fill-mask (None: ELECTRA's
    discriminator is not a masked LM)."""
    if isinstance(model, DistillationPretrainer):
        return model.student_pretrainer
    return model if isinstance(model, BertPretrainer) else None


def _try_load_heads(load, model, init_checkpoint):
    """Continued pretraining keeps the checkpoint's heads where it has them."""
    try:
        load(model, init_checkpoint)
        logging.info("Loaded the pretraining heads of %s", init_checkpoint)
    except (CheckpointError, ValueError, OSError) as e:
        logging.info("Pretraining heads start from scratch (%s)", e)
