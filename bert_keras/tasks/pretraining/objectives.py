"""The pretraining objectives, one class each, by `--objective` name (`OBJECTIVES`): the model
an objective trains, the batches it takes, what watches its run, and what a finished run keeps
of it (the encoder it saves, the masked LM it serves as fill-mask).

A new objective is one class here and one entry in `OBJECTIVES`; the run
(`bert_keras.training.pretraining`) asks the objective and never compares its name.

>>> sorted(OBJECTIVES)
['distill', 'electra', 'mlm']
>>> OBJECTIVES["mlm"].pair_task, OBJECTIVES["distill"].teacher
(True, True)
"""

from bert_keras.errors import InputError
from bert_keras.models.encoder import BertEncoder
from bert_keras.tasks.pretraining import electra_monitor, head_checkpoint
from bert_keras.tasks.pretraining.distillation import (
    DistillationPretrainer,
    DistillOptions,
    student_from_teacher,
)
from bert_keras.tasks.pretraining.electra import ElectraPretrainer, with_masked_lm_inputs
from bert_keras.tasks.pretraining.electra_options import ElectraOptions
from bert_keras.tasks.pretraining.model import BertPretrainer


def new_encoder(config, tokenizer):
    """The encoder a run of `config` starts from: --init_checkpoint's, or a new one of the
    configured size over `tokenizer`'s vocabulary."""
    choice = config.encoder
    if choice.init_checkpoint:
        encoder = BertEncoder.from_pretrained(choice.init_checkpoint, **choice.overrides())
        encoder.check_tokenizer(tokenizer, f"--init_checkpoint={choice.init_checkpoint}")
        return encoder
    return BertEncoder(choice.config(tokenizer.vocab_size))


class Objective:
    """One `--objective`: the model it trains, its batches, what watches its run and what a
    finished run keeps."""

    name = None
    help = None  # what --objective's help says of it
    pair_task = False  # trains BERT's sentence-pair task (--pair_mode; nsp by default)
    teacher = False  # learns from --teacher_checkpoint, and its student starts from it
    # head_checkpoint's loader of this model's heads: continued pretraining (--init_checkpoint)
    # keeps the checkpoint's heads where it has them.
    load_heads = None
    # The options only this objective reads (PretrainConfig.objective_options), or None.
    options_class = None

    def model(self, config, tokenizer, teacher=None):
        """The uncompiled pretraining model of `config`; `teacher`: the loaded
        --teacher_checkpoint of an objective that learns from one."""
        raise NotImplementedError

    def inputs(self, dataset):
        """The pretraining batches (x, y, sample_weight) as this objective's model takes them."""
        return dataset.map(with_masked_lm_inputs)

    def reports(self, config):
        """Callbacks that watch a run of `config` for a known failure."""
        return []

    def final_encoder(self, model):
        """The encoder a finished run saves (the model trains no further after this)."""
        return model.encoder

    def fill_mask_model(self, model):
        """The masked LM a finished run keeps in final/ for tools/export.py to serve as
        fill-mask; None where the objective trains none."""
        return None


class MaskedLM(Objective):
    """BERT's masked LM (+ NSP / SOP / none), `BertPretrainer`."""

    name, pair_task = "mlm", True
    help = "BERT's masked LM (+ --pair_mode)"
    load_heads = staticmethod(head_checkpoint.load_pretraining_heads)

    def model(self, config, tokenizer, teacher=None):
        init_checkpoint = config.encoder.init_checkpoint
        activation = (head_checkpoint.masked_lm_activation(init_checkpoint)
                      if init_checkpoint else None)
        return BertPretrainer(new_encoder(config, tokenizer),
                              next_sentence=config.data.pair_mode != "none",
                              mlm_activation=activation)

    def inputs(self, dataset):
        return dataset

    def fill_mask_model(self, model):
        return model


class ReplacedTokenDetection(Objective):
    """ELECTRA, `ElectraPretrainer`."""

    name = "electra"
    help = "replaced-token detection with a generator of --generator_size"
    load_heads = staticmethod(head_checkpoint.load_replaced_token_head)
    options_class = ElectraOptions

    def model(self, config, tokenizer, teacher=None):
        return ElectraPretrainer(new_encoder(config, tokenizer), config.objective_options,
                                 curriculum_steps=config.curriculum_steps(), seed=config.seed)

    def reports(self, config):
        # A discriminator stuck at the all-original baseline.
        detector = electra_monitor.StuckDiscriminatorDetector(
            advice=config.objective_options.stuck_advice())
        return [electra_monitor.StuckDiscriminatorReport(config.log_every, detector)]

    def final_encoder(self, model):
        # The discriminator, with the disentangled embedding deltas folded into it.
        model.fold_embedding_deltas()
        return model.encoder


class Distillation(Objective):
    """DistilBERT's distillation of a teacher masked LM, `DistillationPretrainer`."""

    name, teacher = "distill", True
    help = ("a student of half the layers of --teacher_checkpoint learns its soft targets "
            "(DistilBERT)")
    options_class = DistillOptions

    def model(self, config, tokenizer, teacher=None):
        if teacher is None:
            raise ValueError("The distill objective's model needs its teacher (a BertPretrainer "
                             "of --teacher_checkpoint).")
        options = config.objective_options
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

    def fill_mask_model(self, model):
        return model.student_pretrainer


OBJECTIVES = {objective.name: objective
              for objective in (MaskedLM(), ReplacedTokenDetection(), Distillation())}
