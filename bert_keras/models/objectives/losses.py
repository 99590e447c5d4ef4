"""Token-level loss and accuracy of the task models: weighted (masked LM) or ignoring labels
(`IGNORE_LABEL`, any negative label: token tagging), normalized like Google BERT.

The masked-LM loss is `sum(w * ce) / (sum(w) + 1e-5)` per batch, not Keras' mean over all
B*P slots. Under a distribution strategy each replica normalizes by its own weights and the
result is divided by the number of replicas, as Keras does for its own losses.

`kl_per_token` is the soft-target term of both distillations (the pretrainer's,
`tasks.pretraining.distillation`, and fine-tuning's, `task_distillation`).
"""

import keras
import tensorflow as tf
from keras import ops


def scale_for_replicas(loss):
    # Keras' TF trainer sums the replicas' gradients: each replica's loss carries 1/N.
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    return loss / replicas if replicas > 1 else loss


def _weighted_cross_entropy_sum(labels, logits, weights):
    """sum(weights * sparse cross entropy) of float32 `logits` (..., V), `labels` and `weights`
    (...), with its gradient as two XLA-compiled passes: the forward reads the logits for
    their row log-sum-exp, the gradient writes (softmax - one_hot) * weight in one pass.
    TensorFlow's kernel (or XLA's lowering of it) writes the softmax gradient in the forward
    and scales it after: 26 against 16 ms for 640 x 30,522 logits."""

    @tf.custom_gradient
    def weighted_sum(logits):
        cross_entropy, log_sum_exp = _cross_entropy(labels, logits)
        total = tf.reduce_sum(cross_entropy * weights)
        return total, lambda dy: _cross_entropy_gradient(labels, logits, log_sum_exp, weights * dy)

    return weighted_sum(logits)


# autograph=False: no Python control flow on tensors to convert (as in the layers' compiled
# functions, models/layers/dropout_mask.py).
@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _cross_entropy(labels, logits):
    """(cross entropy, log-sum-exp of the logits), each shaped like `labels`."""
    top = tf.reduce_max(logits, axis=-1, keepdims=True)
    log_sum_exp = top[..., 0] + tf.math.log(tf.reduce_sum(tf.exp(logits - top), axis=-1))
    return log_sum_exp - tf.gather(logits, labels, batch_dims=len(labels.shape)), log_sum_exp


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _cross_entropy_gradient(labels, logits, log_sum_exp, scale):
    softmax = tf.exp(logits - log_sum_exp[..., None])
    one_hot = tf.one_hot(labels, tf.shape(logits)[-1], dtype=logits.dtype)
    return (softmax - one_hot) * scale[..., None]


@keras.saving.register_keras_serializable(package="bert_keras")
class TokenCrossEntropy(keras.losses.Loss):
    """Sparse cross entropy from logits, averaged over weighted positions:
    sum(w*ce) / (sum(w) + eps).

    y_true int (B, P), y_pred logits (B, P, V), sample_weight (B, P) (None: all ones).
    Positions whose label is negative get weight 0 when `ignore_negative_labels` is set
    (their label is never looked up). With `epsilon=1e-5` this is Google BERT's masked-LM
    loss exactly; with `epsilon=0` (and 0/0 = 0) the mean over the scored tokens.

    Example:
    >>> import numpy as np
    >>> loss = TokenCrossEntropy()
    >>> logits = np.zeros((1, 2, 4), "float32")           # uniform: ce = log(4) each
    >>> round(float(loss(np.array([[1, 2]]), logits, np.array([[1.0, 0.0]]))), 4)
    1.3863
    """

    def __init__(self, epsilon=1e-5, ignore_negative_labels=False, name="token_cross_entropy",
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.epsilon = epsilon
        self.ignore_negative_labels = ignore_negative_labels

    def __call__(self, y_true, y_pred, sample_weight=None):
        return scale_for_replicas(self.unscaled(y_true, y_pred, sample_weight))

    def unscaled(self, y_true, y_pred, sample_weight=None):
        """The loss of this replica's batch, not divided by the number of replicas."""
        logits = ops.cast(y_pred, "float32")  # (B, P, V)
        labels = ops.cast(y_true, "int32")  # (B, P)
        weights = ops.ones_like(labels, dtype="float32")
        if self.ignore_negative_labels:
            weights = ops.cast(labels >= 0, "float32")
            labels = ops.maximum(labels, 0)
        if sample_weight is not None:
            weights = weights * ops.reshape(ops.cast(sample_weight, "float32"), ops.shape(labels))
        # The compiled cross entropy has no range check of its own (XLA clamps an outside
        # label: a finite, wrong loss): refuse one here, as TensorFlow's kernel did.
        tf.debugging.assert_less(
            tf.cast(labels, tf.uint32), tf.cast(tf.shape(logits)[-1], tf.uint32),
            message=f"{self.name}: a label is outside [0, number of logits)")
        total = _weighted_cross_entropy_sum(labels, logits, weights)
        if self.epsilon:
            return total / (ops.sum(weights) + self.epsilon)
        return ops.divide_no_nan(total, ops.sum(weights))

    def call(self, y_true, y_pred):  # Unused: __call__ does the weighting itself.
        raise NotImplementedError("TokenCrossEntropy is used through __call__.")

    def get_config(self):
        return dict(name=self.name, epsilon=self.epsilon,
                    ignore_negative_labels=self.ignore_negative_labels)


@keras.saving.register_keras_serializable(package="bert_keras")
class TokenAccuracy(keras.metrics.Metric):
    """Weighted accuracy of (B, T) labels against (B, T, C) logits; negative labels are skipped.

    Example:
    >>> import numpy as np
    >>> m = TokenAccuracy()
    >>> m.update_state(np.array([[1, -1, 0]]), np.array([[[0., 1.], [1., 0.], [0., 1.]]]))
    >>> float(m.result())
    0.5
    """

    def __init__(self, name="accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels = ops.cast(y_true, "int32")
        weights = ops.cast(labels >= 0, "float32")
        if sample_weight is not None:
            weights = weights * ops.reshape(ops.cast(sample_weight, "float32"), ops.shape(labels))
        # tf.argmax: Keras' ops.argmax first maps -0.0 to 0.0, four more passes over the
        # (B, P, V) logits (about 2% of a pretraining step's op time).
        predictions = tf.argmax(y_pred, axis=-1, output_type=tf.int32)
        hits = ops.cast(predictions == labels, "float32")
        self.correct.assign_add(ops.sum(hits * weights))
        self.count.assign_add(ops.sum(weights))

    def result(self):
        return ops.divide_no_nan(self.correct, self.count)

    def reset_state(self):
        self.correct.assign(0.0)
        self.count.assign(0.0)


@keras.saving.register_keras_serializable(package="bert_keras")
class Ratio(keras.metrics.Metric):
    """sum(numerators) / sum(denominators) over the updates (0 while the denominator is 0):
    accuracies, precision and recall from counts.

    >>> m = Ratio(); m.update_state(3.0, 4.0); m.update_state(1.0, 4.0)
    >>> float(m.result())
    0.5
    """

    def __init__(self, name="ratio", **kwargs):
        super().__init__(name=name, **kwargs)
        self.numerator = self.add_variable(shape=(), initializer="zeros", name="numerator")
        self.denominator = self.add_variable(shape=(), initializer="zeros", name="denominator")

    def update_state(self, numerator, denominator):
        self.numerator.assign_add(ops.cast(numerator, "float32"))
        self.denominator.assign_add(ops.cast(denominator, "float32"))

    def result(self):
        return ops.divide_no_nan(self.numerator, self.denominator)

    def reset_state(self):
        self.numerator.assign(0.0)
        self.denominator.assign(0.0)


def kl_per_token(teacher_logits, student_logits, temperature):
    """KL(softmax(teacher / T) || softmax(student / T)) per row (..., V) -> (...)."""
    teacher_log_probs = ops.log_softmax(teacher_logits / temperature, axis=-1)
    student_log_probs = ops.log_softmax(student_logits / temperature, axis=-1)
    return ops.sum(ops.exp(teacher_log_probs) * (teacher_log_probs - student_log_probs), axis=-1)
