"""DistilBERT's knowledge distillation (Sanh et al. 2019): a student masked LM learns from a
teacher's soft targets.

Loss = alpha_ce x KL(softmax(teacher / T) || softmax(student / T)) x T^2 over the non-padding
tokens + alpha_mlm x the student's masked-LM loss + alpha_cos x (1 - cosine) between the
teacher's and the student's last hidden states over the non-padding tokens (paper: 5 / 2 / 1,
T = 2, as in Hugging Face's `distiller.py`). The student is a `BertEncoder` with some of the
teacher's layers (`student_from_teacher`: every other one), its embeddings and its MLM head.

Shape legend: B batch, T sequence length, P masked positions, V vocabulary, H hidden size.
"""

import dataclasses

import keras
import tensorflow as tf
from keras import ops

from bert_keras.configs import Config, ConfigError, check, option
from bert_keras.models.encoder import BertEncoder
from bert_keras.models.objectives.losses import (
    Ratio,
    TokenAccuracy,
    TokenCrossEntropy,
    kl_per_token,
)
from bert_keras.models.objectives.objective_model import ObjectiveModel
from bert_keras.names import INPUT_NAMES
from bert_keras.optimization import default_optimizer
from bert_keras.tasks.pretraining.model import BertPretrainer


@dataclasses.dataclass(frozen=True)
class DistillOptions(Config):
    """The options of DistilBERT's distillation (`--objective=distill`); its loss weights and
    temperature are `DistillationPretrainer`'s defaults.

    >>> DistillOptions(teacher_checkpoint=".", student_layers="0,2").student_layer_list()
    [0, 2]
    """

    teacher_checkpoint: str = option(None, "--objective=distill: the teacher, a masked LM with "
                                     "its head: a bert_keras pretraining run's final/ or model "
                                     "dir, or a Hugging Face *ForMaskedLM / Google BERT "
                                     "directory.", advanced=True)
    student_layers: str = option(None, "--objective=distill: the teacher layers the student "
                                 "starts from, e.g. 0,2,4 (default: every other one).",
                                 advanced=True)
    distill_temperature: float = option(2.0, "--objective=distill: softmax temperature of the "
                                        "soft targets.", advanced=True)
    alpha_ce: float = option(5.0, "--objective=distill: weight of the soft-target KL loss.",
                             advanced=True)
    alpha_mlm: float = option(2.0, "--objective=distill: weight of the student's MLM loss.",
                              advanced=True)
    alpha_cos: float = option(1.0, "--objective=distill: weight of the hidden-state cosine "
                              "loss.", advanced=True)

    def validate(self):
        check(bool(self.teacher_checkpoint), "--objective=distill needs --teacher_checkpoint.")
        check(tf.io.gfile.isdir(self.teacher_checkpoint),
              f"--teacher_checkpoint={self.teacher_checkpoint!r} is not a directory.")
        check(self.distill_temperature > 0,
              f"--distill_temperature must be > 0, got {self.distill_temperature}.")
        self.student_layer_list()

    def student_layer_list(self):
        """--student_layers as a list of ints (None: every other teacher layer)."""
        if not self.student_layers:
            return None
        try:
            return [int(i) for i in self.student_layers.split(",")]
        except ValueError:
            raise ConfigError(f"--student_layers={self.student_layers!r} is not a comma-separated "
                              "list of layer numbers.") from None


_DEFAULTS = {field.name: field.default for field in dataclasses.fields(DistillOptions)}


def student_layers(teacher_layers, student_layers=None):
    """The teacher layers the student starts from: every other one by default (0, 2, 4, ...)."""
    layers = list(range(0, teacher_layers, 2)) if student_layers is None else list(student_layers)
    bad = [i for i in layers if not 0 <= i < teacher_layers]
    if not layers or bad or sorted(set(layers)) != layers:
        raise ValueError(f"student layers must be increasing teacher layers in [0, "
                         f"{teacher_layers}), got {layers}.")
    return layers


def student_from_teacher(teacher, layers=None):
    """A `BertEncoder` with the teacher's architecture, its embeddings (and pooler, projection)
    and, as layer i, a copy of teacher layer `layers[i]` (every other layer by default).

    >>> import bert_keras as bk
    >>> teacher = bk.BertEncoder.from_preset("bert_L-4_H-128", vocab_size=50)
    >>> student_from_teacher(teacher).num_layers
    2
    """
    arch = teacher.architecture
    if arch["num_layer_groups"]:
        raise ValueError("The teacher shares its layers (ALBERT, num_layer_groups="
                         f"{arch['num_layer_groups']}); distil a teacher with its own layers.")
    layers = student_layers(arch["num_layers"], layers)
    student = BertEncoder(**{**arch, "num_layers": len(layers)}, dtype=teacher.dtype_policy,
                          name="student")
    teacher_weights = {v.path: v for v in teacher.weights}
    for variable in student.weights:
        path = variable.path
        if path.startswith("transformer_layer_"):
            index, rest = path[len("transformer_layer_"):].split("/", 1)
            path = f"transformer_layer_{layers[int(index)]}/{rest}"
        variable.assign(teacher_weights[path])
    return student


@keras.saving.register_keras_serializable(package="bert_keras")
class DistillationPretrainer(ObjectiveModel):
    """A student masked LM distilled from a teacher `BertPretrainer` (encoder + MLM head).

    Inputs as `ElectraPretrainer`'s (the encoder inputs, masked, + `masked_lm_positions`,
    `masked_lm_ids`, `masked_lm_weights`); `fit` needs no y. The teacher is frozen (not
    trained, no dropout). `.encoder` is the student, `.student_pretrainer` the student with
    its MLM head (a BertPretrainer without a pair task).

    Args:
        teacher: a `BertPretrainer` (its `encoder` and `masked_lm_head` are used).
        student: the student `BertEncoder` (default `student_from_teacher(teacher.encoder)`),
            of the teacher's hidden size (the cosine loss compares hidden states).
        temperature, alpha_ce, alpha_mlm, alpha_cos: as in the paper (2, 5, 2, 1;
            `DistillOptions`' defaults).

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> teacher = bk.BertPretrainer(bk.BertEncoder.from_preset("bert_L-4_H-128", vocab_size=50),
    ...                             next_sentence=False)
    >>> model = DistillationPretrainer(teacher)
    >>> model.encoder.num_layers
    2
    """

    default_learning_rate = 5e-4  # DistilBERT's
    loss_term_names = ("distillation_loss", "masked_lm_loss", "cosine_loss")

    def __init__(self, teacher, student=None, temperature=_DEFAULTS["distill_temperature"],
                 alpha_ce=_DEFAULTS["alpha_ce"], alpha_mlm=_DEFAULTS["alpha_mlm"],
                 alpha_cos=_DEFAULTS["alpha_cos"], **kwargs):
        super().__init__(**kwargs)
        teacher.trainable = False
        self.teacher = teacher
        student = student or student_from_teacher(teacher.encoder)
        if student.hidden_size != teacher.encoder.hidden_size:
            raise ValueError(f"The student's hidden size {student.hidden_size} differs from the "
                             f"teacher's {teacher.encoder.hidden_size}; the cosine loss compares "
                             "their hidden states.")
        # The student's head is a copy of the teacher's (its weights are set below).
        self.student_pretrainer = BertPretrainer(student, next_sentence=False,
                                                 mlm_activation=teacher.masked_lm_head.activation,
                                                 mlm_norm_bias=teacher.masked_lm_head.norm_bias)
        self.student_pretrainer.masked_lm_head.set_weights(teacher.masked_lm_head.get_weights())
        self.encoder = student
        self.temperature = temperature
        self.alphas = dict(ce=alpha_ce, mlm=alpha_mlm, cos=alpha_cos)
        self._masked_lm_loss = TokenCrossEntropy(epsilon=1e-5)
        self.masked_lm_accuracy = TokenAccuracy(name="masked_lm_accuracy")
        self.agreement = Ratio(name="agreement")
        self.built = True  # its layers (the teacher, the student's pretrainer) are
        self.compile(optimizer=default_optimizer(self.default_learning_rate))

    def idle_layers(self):
        return self.student_pretrainer.idle_layers()  # the teacher is frozen

    def transformers_spec(self, generator=False):
        """The student's (`bk.save_transformers`): it is the model distilled."""
        return self.student_pretrainer.transformers_spec(generator)

    def call(self, inputs, training=False):
        encoder_inputs = {name: inputs[name] for name in INPUT_NAMES}
        ids = encoder_inputs["input_word_ids"]
        every_position = ops.broadcast_to(ops.arange(ops.shape(ids)[1], dtype="int32")[None, :],
                                          ops.shape(ids))  # (B, T)
        teacher = self.teacher.encoder(encoder_inputs, training=False)["sequence_output"]
        student = self.encoder(encoder_inputs, training=training)["sequence_output"]
        student_logits = self.student_pretrainer.masked_lm_head(student, every_position)
        positions = ops.cast(inputs["masked_lm_positions"], "int32")[:, :, None]  # (B, P, 1)
        return {
            "teacher_logits": ops.stop_gradient(
                self.teacher.masked_lm_head(teacher, every_position)),
            "student_logits": student_logits,  # (B, T, V)
            "masked_logits": ops.take_along_axis(student_logits, positions, axis=1),  # (B, P, V)
            "teacher_hidden": ops.stop_gradient(ops.cast(teacher, "float32")),
            "student_hidden": ops.cast(student, "float32"),
        }

    def loss_terms(self, x, y_pred):
        """{"distillation_loss", "masked_lm_loss", "cosine_loss", "loss"} of one batch (not
        yet divided by the number of replicas)."""
        mask = ops.cast(x["input_mask"], "float32")  # (B, T)
        tokens = ops.sum(mask)
        t = self.temperature
        kl = kl_per_token(y_pred["teacher_logits"], y_pred["student_logits"], t)  # (B, T)
        distillation = ops.sum(kl * mask) / tokens * t * t
        masked_lm = self._masked_lm_loss.unscaled(x["masked_lm_ids"], y_pred["masked_logits"],
                                                  x["masked_lm_weights"])
        cosine = ops.sum((1.0 - _cosine(y_pred["student_hidden"], y_pred["teacher_hidden"]))
                         * mask) / tokens
        loss = (self.alphas["ce"] * distillation + self.alphas["mlm"] * masked_lm
                + self.alphas["cos"] * cosine)
        return {"distillation_loss": distillation, "masked_lm_loss": masked_lm,
                "cosine_loss": cosine, "loss": loss}

    def update_metrics(self, x, y_pred):
        mask = ops.cast(x["input_mask"], "float32")
        agree = ops.cast(ops.equal(ops.argmax(y_pred["student_logits"], axis=-1),
                                   ops.argmax(y_pred["teacher_logits"], axis=-1)), "float32")
        self.agreement.update_state(ops.sum(agree * mask), ops.sum(mask))
        self.masked_lm_accuracy.update_state(x["masked_lm_ids"], y_pred["masked_logits"],
                                             x["masked_lm_weights"])

    def get_config(self):
        return dict(name=self.name, teacher=keras.saving.serialize_keras_object(self.teacher),
                    student=keras.saving.serialize_keras_object(self.encoder),
                    temperature=self.temperature, alpha_ce=self.alphas["ce"],
                    alpha_mlm=self.alphas["mlm"], alpha_cos=self.alphas["cos"])

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("teacher", "student"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


def _cosine(a, b):
    """Cosine similarity of the last axis (..., H) -> (...)."""
    dot = ops.sum(a * b, axis=-1)
    return dot / ops.maximum(ops.norm(a, axis=-1) * ops.norm(b, axis=-1), 1e-8)


__all__ = ["DistillationPretrainer", "kl_per_token", "student_from_teacher", "student_layers"]
