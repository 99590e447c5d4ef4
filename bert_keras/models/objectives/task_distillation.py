"""Task distillation: a student task model learns from a fine-tuned teacher's outputs on the
task's own inputs (Hinton et al. 2015, "Distilling the knowledge in a neural network";
DistilBERT's task-specific distillation, Sanh et al. 2019).

Loss = alpha x soft + (1 - alpha) x the student's own task loss on the labels, where `soft`
compares the student's logits with the teacher's, by the kind of output of the task type
(`Task.soft_targets`):

- "softmax" (classification, tagging): KL(softmax(teacher / T) || softmax(student / T)) x T^2,
- "sigmoid" (multi_label): the same for the Bernoulli distribution of each label, averaged
  over the labels, x T^2,
- "mse" (regression): (student - teacher)^2 (no temperature),

averaged over the examples (token tagging: over the scored tokens, the first piece of each
word). The x T^2 keeps the soft term's gradients at the scale of the hard term's as T changes
(Hinton et al.). Defaults T = 2 and alpha = 0.5: Hugging Face's task distillation of DistilBERT
(`run_squad_w_distillation.py`: --temperature 2, --alpha_ce 0.5, --alpha_squad 0.5).

The teacher is not part of the model: its logits arrive as a target next to the labels (see
`bert_keras.training.finetuning_teacher` for why they are computed once per example).

Shape legend: B batch, T tokens, C classes (or labels, or 1 for regression).
"""

import tensorflow as tf
from keras import ops

from bert_keras.models.objectives.losses import Ratio, kl_per_token
from bert_keras.models.objectives.objective_model import ObjectiveModel
from bert_keras.names import INPUT_NAMES

SOFT_TARGETS = ("softmax", "sigmoid", "mse")
TEACHER_LOGITS = "teacher_logits"  # the target key of the teacher's logits, next to "labels"


def soft_target_loss(kind, teacher_logits, student_logits, temperature):
    """The soft-target loss per row (..., C) -> (...) of `kind` (one of SOFT_TARGETS), the
    x T^2 included.

    >>> import numpy as np
    >>> float(soft_target_loss("softmax", np.array([1.0, 2.0]), np.array([1.0, 2.0]), 2.0))
    0.0
    >>> float(soft_target_loss("mse", np.array([1.0]), np.array([3.0]), 2.0))
    4.0
    """
    teacher = ops.cast(teacher_logits, "float32")
    student = ops.cast(student_logits, "float32")
    t = temperature
    if kind == "softmax":
        return kl_per_token(teacher, student, t) * t * t
    if kind == "sigmoid":
        # KL of Bernoulli(sigmoid(teacher / T)) from Bernoulli(sigmoid(student / T)) per label,
        # in log space: log p = log_sigmoid(x), log (1 - p) = log_sigmoid(-x).
        p = ops.sigmoid(teacher / t)
        kl = (p * (ops.log_sigmoid(teacher / t) - ops.log_sigmoid(student / t))
              + (1.0 - p) * (ops.log_sigmoid(-teacher / t) - ops.log_sigmoid(-student / t)))
        return ops.mean(kl, axis=-1) * t * t
    if kind == "mse":
        return ops.mean(ops.square(student - teacher), axis=-1)
    raise ValueError(f"soft targets must be one of {SOFT_TARGETS}, got {kind!r}.")


def _replicas():
    return tf.distribute.get_strategy().num_replicas_in_sync


class TaskDistiller(ObjectiveModel):
    """Trains a student task model (a `BertClassifier`, `BertTokenClassifier`) on its labels and
    a teacher's logits. Not saved itself: the student is the model to keep (and to export).

    Data: `(inputs, {"labels": ..., "teacher_logits": ...})`, the labels as the student's own
    loss takes them, the teacher logits of the student's output shape (B, C) or (B, T, C).
    Metrics: `soft_loss`, `hard_loss` and (except for "mse") `teacher_agreement`, the fraction
    of argmax decisions (multi_label: label decisions; tagging: scored tokens) that agree.

    Args:
        student: the compiled task model; its loss (`student.loss`) is the hard-label loss.
        soft_targets: one of SOFT_TARGETS, the task type's `soft_targets`.
        temperature: T of the softened distributions (not used by "mse").
        alpha: the weight of the soft loss; (1 - alpha) weighs the hard loss.
        token_level: per-token outputs (tagging): only tokens with a label >= 0 count.

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> student = bk.BertClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100), 2)
    >>> distiller = TaskDistiller(student, "softmax")
    >>> distiller.compile(optimizer="adam")
    >>> x = {"input_word_ids": np.ones((4, 6), "int32"), "input_mask": np.ones((4, 6), "int32"),
    ...      "input_type_ids": np.zeros((4, 6), "int32")}
    >>> y = {"labels": np.array([0, 1, 1, 0]), "teacher_logits": np.zeros((4, 2), "float32")}
    >>> sorted(distiller.fit(x, y, verbose=0).history)
    ['hard_loss', 'loss', 'soft_loss', 'teacher_agreement']
    """

    loss_term_names = ("soft_loss", "hard_loss")

    def __init__(self, student, soft_targets, temperature=2.0, alpha=0.5, token_level=False,
                 **kwargs):
        super().__init__(**kwargs)
        if soft_targets not in SOFT_TARGETS:
            raise ValueError(f"soft_targets must be one of {SOFT_TARGETS}, got {soft_targets!r}.")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}.")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}.")
        self.student = student
        self.soft_targets = soft_targets
        self.temperature = float(temperature)
        self.alpha = float(alpha)
        self.token_level = bool(token_level)
        self.hard_loss = student.loss
        self.teacher_agreement = None if soft_targets == "mse" else Ratio(name="teacher_agreement")
        self.built = student.built  # no weights of its own

    def idle_layers(self):
        return self.student.idle_layers()

    def call(self, inputs, training=False):
        return self.student({name: inputs[name] for name in INPUT_NAMES}, training=training)

    # The labels and teacher logits are the targets (y); ObjectiveModel hands its loss terms
    # and metrics their first argument, so y goes there.
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return super().compute_loss(y, None, y_pred, sample_weight, training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(y, None, y_pred, sample_weight)

    def _weights(self, labels):
        """1 per example, or per scored token (label >= 0) of token-level outputs: (B,) or
        (B, T)."""
        if self.token_level:
            return ops.cast(ops.greater_equal(labels, 0), "float32")
        return ops.ones(ops.shape(labels)[:1], "float32")

    def loss_terms(self, targets, y_pred):
        """{"soft_loss", "hard_loss", "loss"} of one replica's batch (not divided by the number
        of replicas)."""
        labels = targets["labels"]
        weights = self._weights(labels)
        soft = soft_target_loss(self.soft_targets, targets[TEACHER_LOGITS], y_pred,
                                self.temperature)  # (B,) or (B, T)
        soft = ops.sum(soft * weights) / ops.maximum(ops.sum(weights), 1.0)
        # The task's own loss. Called, Keras' losses and bert_keras' token losses alike divide
        # by the number of replicas (Keras' train_step sums the replicas' gradients); the terms
        # here are per replica, and ObjectiveModel.compute_loss divides their sum once.
        hard = ops.cast(self.hard_loss(labels, y_pred), "float32") * _replicas()
        return {"soft_loss": soft, "hard_loss": hard,
                "loss": self.alpha * soft + (1.0 - self.alpha) * hard}

    def update_metrics(self, targets, y_pred):
        if self.teacher_agreement is None:
            return
        teacher = ops.cast(targets[TEACHER_LOGITS], "float32")
        student = ops.cast(y_pred, "float32")
        if self.soft_targets == "sigmoid":  # label decisions at probability 0.5
            agree = ops.mean(ops.cast(ops.equal(student > 0, teacher > 0), "float32"), axis=-1)
        else:
            agree = ops.cast(ops.equal(ops.argmax(student, axis=-1), ops.argmax(teacher, axis=-1)),
                             "float32")
        weights = self._weights(targets["labels"])
        self.teacher_agreement.update_state(ops.sum(agree * weights), ops.sum(weights))


__all__ = ["SOFT_TARGETS", "TEACHER_LOGITS", "TaskDistiller", "soft_target_loss"]
