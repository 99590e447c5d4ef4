"""Optimizers for BERT: AdamW and LAMB with warmup + decay, exclusions, layer-wise LR decay.

Everything here is a plain `keras.optimizers.Optimizer` that works in `model.fit`,
under `tf.distribute.MirroredStrategy`, and inside Keras' `LossScaleOptimizer`
(mixed_float16). Public names: `WarmupDecay`, `AdamW`, `Lamb`, `create_optimizer`,
`layerwise_lr_multiplier`, `DEFAULT_WEIGHT_DECAY_EXCLUSIONS`. This module holds the
optimizers and `create_optimizer`; their shared machinery (exclusions, clipping,
accumulation, the Adam step) is in `bert_keras.optimization.base` and the
schedules (`WarmupDecay`, `layerwise_lr_multiplier`) in `bert_keras.optimization.schedules`,
both re-exported here.

Why our own classes instead of `keras.optimizers.AdamW` / `keras.optimizers.Lamb`
(Keras 3.15, checked by tests/optimization/test_optimization.py and by reading its source):

* Keras' built-in `gradient_accumulation_steps` evaluates the learning-rate
  schedule (and the weight decay) at the *micro*-step counter, so a schedule
  advances k times per applied update; and under `MirroredStrategy` on CPU it
  fails (`merge_call` inside a `cond` in replica context) and would accumulate
  the un-reduced per-replica gradients.
* Keras clips (`global_clipnorm`) each replica's *local* gradient before the
  all-reduce, so under a strategy the clipping differs from one device. We clip
  the all-reduced gradient, like Google BERT's `clip_by_global_norm`.
* Keras' `exclude_from_weight_decay(var_names=...)` matches the short variable
  name ("gamma"), never the path, and its decoupled decay uses the global learning
  rate, so it cannot follow a per-variable (layer-wise) learning rate.
* `keras.optimizers.Lamb` has no weight decay in the trust ratio and no exclusions:
  its weight decay is applied outside the layer adaptation.
* Speed: our AdamW runs TensorFlow's fused Adam kernel, and an update of BERT's weights
  takes less than half the time of `keras.optimizers.AdamW`'s (`python -m benchmarks.optimizer`).

Our update rules (t = number of applied updates, 1-based; lr = schedule(t - 1) * multiplier):

AdamW (decoupled weight decay, Loshchilov & Hutter; BERT's `AdamWeightDecay`)::

    m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
    m_hat = m / (1 - b1^t);  v_hat = v / (1 - b2^t)      # bias_correction=True (default)
    update = m_hat / (sqrt(v_hat) + eps) + wd * w          # wd only if not excluded
    w = w - lr * update

Google's TF1 BERT `AdamWeightDecayOptimizer` has no bias correction
(`bias_correction=False` reproduces it exactly); Model Garden's TF2 BERT and
Hugging Face correct the bias, which is our default. Defaults follow BERT:
eps 1e-6, beta_2 0.999, weight decay 0.01, excluded variables: LayerNorm and bias.

LAMB (You et al. 2019, Algorithm 2; Model Garden's `LAMB`)::

    r = m_hat / (sqrt(v_hat) + eps) + wd * w               # wd only if not excluded
    ratio = ||w|| / ||r||  (1 if either norm is 0, or if the variable is excluded)
    w = w - lr * ratio * r

Gradient accumulation (`gradient_accumulation_steps=k`): each call of `apply`
is one micro-step; the gradients of k micro-steps are summed in accumulators
and their mean is applied once, on the k-th call. `optimizer.iterations` counts
*applied updates* (not micro-steps): the schedule, Adam's bias correction, and
checkpoints all see updates. `optimizer.micro_steps` counts calls of `apply`
(also checkpointed). For a mean loss this makes k micro-batches of b examples
equal one batch of k*b examples. Under `LossScaleOptimizer`, a micro-step whose
gradients are not finite is skipped (not counted).
"""

import math

import keras
import tensorflow as tf
from keras import ops

from bert_keras.optimization.base import DEFAULT_WEIGHT_DECAY_EXCLUSIONS, _BertOptimizer
from bert_keras.optimization.schedules import WarmupDecay, layerwise_lr_multiplier

# The weight dtypes AdamW sends to TensorFlow's fused Adam kernel (on bfloat16 weights it
# returned NaN); 16-bit weights take the base class's elementwise rule, computed in float32.
_FUSED_DTYPES = ("float32", "float64")

__all__ = [
    "DEFAULT_WEIGHT_DECAY_EXCLUSIONS",
    "AdamW",
    "Lamb",
    "WarmupDecay",
    "create_optimizer",
    "layerwise_lr_multiplier",
]


@keras.saving.register_keras_serializable(package="bert_keras")
class AdamW(_BertOptimizer):
    """Adam with decoupled weight decay, BERT's exclusions, layer-wise LR decay, accumulation.

    Args:
        learning_rate: float or schedule (e.g. `WarmupDecay`), evaluated at the number of
            applied updates.
        weight_decay: decoupled decay rate (times the variable's learning rate).
        beta_1, beta_2, epsilon: Adam's constants (BERT: 0.9, 0.999, 1e-6).
        bias_correction: divide the moments by `1 - beta^t` (True, as Model Garden and
            Hugging Face); False reproduces Google's TF1 `AdamWeightDecayOptimizer`.
        fused: update float32 weights with TensorFlow's fused Adam kernel (True, the faster);
            False runs the same rule as elementwise ops, as Lamb and 16-bit weights do.
        global_clipnorm: clip the (all-reduced, accumulated) gradient to this global norm.
        gradient_accumulation_steps: apply the mean gradient of k `apply` calls once.
        exclude_from_weight_decay: substrings of variable paths that are not decayed.
        layerwise_lr_decay, num_layers: per-variable multiplier
            `layerwise_lr_decay ** (num_layers - layer)`, see `layerwise_lr_multiplier`.

    Example:
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> opt = AdamW(learning_rate=1e-3, weight_decay=0.01)
    >>> model.compile(optimizer=opt, loss="mse")
    >>> _ = model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    >>> opt.uses_weight_decay(model.layers[0].kernel), opt.uses_weight_decay(model.layers[0].bias)
    (True, False)
    """

    def __init__(self, learning_rate=1e-4, bias_correction=True, fused=True, name="adamw",
                 **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.bias_correction = bool(bias_correction)
        self.fused = bool(fused)

    @property
    def _bias_correction(self):
        return self.bias_correction

    def _update_kind(self, variable):
        if self.fused and variable.dtype in _FUSED_DTYPES:
            return ("fused", "float64" if variable.dtype == "float64" else "float32")
        return super()._update_kind(variable)

    def _step_scalars(self, kind, learning_rate, indices):
        """The fused kernel's arguments that all variables share, and each multiplier's decay
        factor 1 - lr * wd."""
        if kind[0] != "fused":
            return super()._step_scalars(kind, learning_rate, indices)
        dtype = kind[1]
        lrs = self._learning_rates(learning_rate, dtype, indices)
        if self.bias_correction:
            beta_1_power, beta_2_power = self._beta_powers(dtype)
        else:  # the kernel's correction factors become 1
            beta_1_power = beta_2_power = ops.zeros((), dtype)
        decayed = sorted({self._lr_multipliers[i] for i in indices if self._decay_flags[i]})
        return {
            "lr": lrs,
            "beta_1": ops.cast(self.beta_1, dtype),
            "beta_2": ops.cast(self.beta_2, dtype),
            "beta_1_power": beta_1_power,
            "beta_2_power": beta_2_power,
            "epsilon": self.epsilon * ops.sqrt(1.0 - beta_2_power),
            "decay": {m: 1.0 - lrs[m] * self.weight_decay_rate for m in decayed},
        }

    def update_step(self, gradient, variable, step_scalars):
        """The rule above on TensorFlow's fused Adam kernel: one pass over the weights and
        moments instead of ~15 elementwise ops (`python -m benchmarks.optimizer`).
        The kernel's step is lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps'), ours
        with eps' = eps * sqrt(1 - b2^t); the decay does not depend on the Adam term, so it
        is applied first."""
        kind = self._update_kind(variable)
        if kind[0] != "fused":
            return super().update_step(gradient, variable, step_scalars)
        scalars = step_scalars[kind]
        index = self._get_variable_index(variable)
        multiplier = self._lr_multipliers[index]
        if self._decay_flags[index]:  # (an in-place kernel would copy the variable first)
            variable.assign(variable * scalars["decay"][multiplier])
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=self._momentums[index].value.handle,
            v=self._velocities[index].value.handle, beta1_power=scalars["beta_1_power"],
            beta2_power=scalars["beta_2_power"], lr=scalars["lr"][multiplier],
            beta1=scalars["beta_1"], beta2=scalars["beta_2"], epsilon=scalars["epsilon"],
            grad=ops.cast(gradient, kind[1]))

    def get_config(self):
        config = super().get_config()
        config["bias_correction"] = self.bias_correction
        config["fused"] = self.fused
        return config


@keras.saving.register_keras_serializable(package="bert_keras")
class Lamb(_BertOptimizer):
    """LAMB (You et al. 2019) with BERT's weight-decay exclusions, as in Model Garden.

    The Adam direction plus the decoupled weight decay is scaled per variable by the
    trust ratio `||w|| / ||update||` (1 if either norm is 0). Variables excluded from
    weight decay (LayerNorm, biases) are excluded from this layer adaptation too.
    Same arguments as `AdamW` (bias correction is always on, as in the paper).

    Example:
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer=Lamb(learning_rate=1e-3), loss="mse")
    >>> _ = model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    """

    def __init__(self, learning_rate=1e-3, name="lamb", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def _step_scalars(self, kind, learning_rate, indices):
        scalars = super()._step_scalars(kind, learning_rate, indices)
        dtype = kind[1]
        scalars.update(zero=tf.constant(0.0, dtype), one=tf.constant(1.0, dtype),
                       tiny=tf.constant(1e-30, dtype))
        return scalars

    def _scale_update(self, update, weights, excluded, scalars):
        if excluded:
            return update
        w_norm = ops.sqrt(ops.sum(ops.square(weights)))
        u_norm = ops.sqrt(ops.sum(ops.square(update)))
        ratio = ops.where(
            ops.logical_and(w_norm > scalars["zero"], u_norm > scalars["zero"]),
            w_norm / ops.maximum(u_norm, scalars["tiny"]),
            scalars["one"],
        )
        return ratio * update


def default_optimizer(learning_rate):
    """AdamW (weight decay 0.01 except LayerNorm and biases, eps 1e-6, clip norm 1.0): what the
    task models and pretrainers compile with by default."""
    return AdamW(learning_rate=learning_rate, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)


def create_optimizer(
    name="adamw",
    learning_rate=1e-4,
    num_train_steps=None,
    num_warmup_steps=0,
    end_learning_rate=0.0,
    power=1.0,
    weight_decay=0.01,
    epsilon=1e-6,
    beta_1=0.9,
    beta_2=0.999,
    global_clipnorm=1.0,
    gradient_accumulation_steps=1,
    layerwise_lr_decay=None,
    num_layers=None,
    bias_correction=True,
):
    """BERT's optimizer: AdamW or LAMB with linear warmup and polynomial decay.

    `num_train_steps` and `num_warmup_steps` count *applied updates* (with gradient
    accumulation, one update per `gradient_accumulation_steps` batches).

    Example:
    >>> opt = create_optimizer("adamw", learning_rate=2e-5, num_train_steps=1000,
    ...                        num_warmup_steps=100)
    >>> round(float(opt.learning_rate), 8)  # step 0 of the warmup
    0.0
    """
    if name not in ("adamw", "lamb"):
        raise ValueError(f"unknown optimizer name={name!r}; expected 'adamw' or 'lamb'")
    if num_train_steps is None:
        raise ValueError("num_train_steps is required (the number of optimizer updates)")
    if not isinstance(learning_rate, (int, float)) or math.isnan(learning_rate):
        raise ValueError(f"learning_rate must be a number, got learning_rate={learning_rate!r}")
    schedule = WarmupDecay(
        learning_rate,
        decay_steps=num_train_steps,
        warmup_steps=num_warmup_steps,
        end_learning_rate=end_learning_rate,
        power=power,
    )
    kwargs = dict(
        learning_rate=schedule,
        weight_decay=weight_decay,
        epsilon=epsilon,
        beta_1=beta_1,
        beta_2=beta_2,
        global_clipnorm=global_clipnorm,
        gradient_accumulation_steps=gradient_accumulation_steps,
        layerwise_lr_decay=layerwise_lr_decay,
        num_layers=num_layers,
    )
    if name == "lamb":
        if not bias_correction:
            raise ValueError("bias_correction=False is only available for name='adamw'")
        return Lamb(**kwargs)
    return AdamW(bias_correction=bias_correction, **kwargs)
