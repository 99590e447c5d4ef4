"""Optimizers for BERT: AdamW and LAMB with warmup + decay, exclusions, layer-wise LR decay.

Everything here is a plain `keras.optimizers.Optimizer` that works in `model.fit`,
under `tf.distribute.MirroredStrategy`, and inside Keras' `LossScaleOptimizer`
(mixed_float16). Public names: `WarmupDecay`, `AdamW`, `Lamb`, `create_optimizer`,
`layerwise_lr_multiplier`, `DEFAULT_WEIGHT_DECAY_EXCLUSIONS`.

Why our own classes instead of `keras.optimizers.AdamW` / `keras.optimizers.Lamb`
(Keras 3.15, checked by tests/test_optimization.py and by reading its source):

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
import re

import keras
import tensorflow as tf
from keras import ops

# Variables whose path contains one of these are not decayed (Google BERT's list,
# plus Keras' names for LayerNorm's scale/offset).
DEFAULT_WEIGHT_DECAY_EXCLUSIONS = ("layer_norm", "LayerNorm", "bias", "beta", "gamma")

# Top-level layer names of the encoder's embeddings (layer-wise LR decay: layer 0).
_EMBEDDING_LAYERS = (
    "token_embedding",
    "position_embedding",
    "segment_embedding",
    "embeddings_layer_norm",
    "embedding_projection",
)
_EMBEDDING_RE = re.compile(r"(^|/)(" + "|".join(_EMBEDDING_LAYERS) + r")(/|$)")
_TRANSFORMER_RE = re.compile(r"(^|/)transformer_layer_(\d+)(/|$)")


@keras.saving.register_keras_serializable(package="bert_keras")
class WarmupDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to `learning_rate`, then polynomial decay to `end_learning_rate`.

    `step` is the number of applied updates so far (`optimizer.iterations`, 0-based):

    * `step < warmup_steps`: `learning_rate * step / warmup_steps`
    * else: `(learning_rate - end) * (1 - p) ** power + end`, with
      `p = min(step - warmup_steps, D) / D`, `D = decay_steps - warmup_steps`;
      after `decay_steps` the rate stays at `end_learning_rate`.

    `power=1.0` is linear decay. Like Model Garden's BERT (and unlike Google's TF1
    BERT, which decays from step 0 and so drops at the end of warmup), the decay
    starts at the peak and the curve is continuous.

    Example:
    >>> s = WarmupDecay(1e-4, decay_steps=100, warmup_steps=10)
    >>> [round(float(s(n)), 8) for n in (0, 5, 10, 55, 100, 200)]
    [0.0, 5e-05, 0.0001, 5e-05, 0.0, 0.0]
    """

    def __init__(
        self,
        learning_rate,
        decay_steps,
        warmup_steps=0,
        end_learning_rate=0.0,
        power=1.0,
        name=None,
    ):
        super().__init__()
        _check_schedule_args(learning_rate, decay_steps, warmup_steps, end_learning_rate, power)
        self.learning_rate = float(learning_rate)
        self.decay_steps = int(decay_steps)
        self.warmup_steps = int(warmup_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.name = name

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak = self.learning_rate
        end = self.end_learning_rate
        warmup = float(self.warmup_steps)
        span = float(max(self.decay_steps - self.warmup_steps, 1))
        done = ops.minimum(ops.maximum(step - warmup, 0.0), span) / span
        decayed = (peak - end) * ops.power(1.0 - done, self.power) + end
        if self.warmup_steps == 0:
            return decayed
        warming = peak * step / warmup
        return ops.where(step < warmup, warming, decayed)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "decay_steps": self.decay_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
            "name": self.name,
        }


def _check_schedule_args(learning_rate, decay_steps, warmup_steps, end_learning_rate, power):
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be > 0, got learning_rate={learning_rate!r}")
    if end_learning_rate < 0 or end_learning_rate > learning_rate:
        raise ValueError(
            f"end_learning_rate must be in [0, learning_rate={learning_rate!r}], "
            f"got end_learning_rate={end_learning_rate!r}"
        )
    if int(decay_steps) < 1:
        raise ValueError(f"num_train_steps/decay_steps must be >= 1, got {decay_steps!r}")
    if int(warmup_steps) < 0 or int(warmup_steps) > int(decay_steps):
        raise ValueError(
            f"num_warmup_steps/warmup_steps must be in [0, {decay_steps}] (the number of "
            f"train steps), got {warmup_steps!r}"
        )
    if not power > 0:
        raise ValueError(f"power must be > 0, got power={power!r}")


def layerwise_lr_multiplier(path, decay_rate, num_layers):
    """Learning-rate multiplier of the variable at `path` for layer-wise LR decay.

    Embeddings (token/position/segment embedding and their LayerNorm) are layer 0,
    `transformer_layer_{i}` is layer i + 1, anything else (pooler, task heads) gets 1.
    The multiplier is `decay_rate ** (num_layers - layer)`, so the top transformer
    layer gets 1 and the embeddings `decay_rate ** num_layers`.

    Example:
    >>> layerwise_lr_multiplier("transformer_layer_0/attention/query/kernel", 0.5, 2)
    0.5
    >>> layerwise_lr_multiplier("token_embedding/embeddings", 0.5, 2)
    0.25
    >>> layerwise_lr_multiplier("pooler/kernel", 0.5, 2)
    1.0
    """
    match = _TRANSFORMER_RE.search(path)
    if match:
        index = int(match.group(2))
        if index >= num_layers:
            raise ValueError(
                f"variable {path!r} is in transformer layer {index}, but num_layers={num_layers}"
            )
        layer = index + 1
    elif _EMBEDDING_RE.search(path):
        layer = 0
    else:
        return 1.0
    return float(decay_rate) ** (num_layers - layer)


def _variable_path(variable):
    """The Keras 3 variable path ("transformer_layer_0/.../gamma"), else the TF name."""
    return getattr(variable, "path", None) or variable.name


def _needs_merge_call():
    """True under a strategy that synchronizes replicas with `merge_call` (e.g. Mirrored on CPU)."""
    if not tf.distribute.has_strategy():
        return False
    return not tf.__internal__.distribute.strategy_supports_no_merge_call()


class _BertOptimizer(keras.optimizers.Optimizer):
    """Shared machinery: exclusions, per-variable LR multipliers, clipping, accumulation.

    Subclasses implement `_update(gradient, variable, lr, decay, adapt)` where `lr`
    already includes the variable's multiplier and `decay`/`adapt` are Python bools.
    """

    def __init__(
        self,
        learning_rate=1e-4,
        weight_decay=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        global_clipnorm=1.0,
        gradient_accumulation_steps=1,
        exclude_from_weight_decay=DEFAULT_WEIGHT_DECAY_EXCLUSIONS,
        layerwise_lr_decay=None,
        num_layers=None,
        name=None,
        **kwargs,
    ):
        # The base class must neither decay, clip nor accumulate: we do it ourselves.
        for key in ("clipnorm", "clipvalue"):
            if kwargs.get(key) is not None:
                raise ValueError(f"{key}={kwargs[key]!r} is not supported; use global_clipnorm")
        super().__init__(
            learning_rate=learning_rate,
            weight_decay=None,
            global_clipnorm=None,
            gradient_accumulation_steps=None,
            name=name,
            **kwargs,
        )
        if weight_decay is None:
            weight_decay = 0.0
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got weight_decay={weight_decay!r}")
        if global_clipnorm is not None and not global_clipnorm > 0:
            raise ValueError(f"global_clipnorm must be > 0 or None, got {global_clipnorm!r}")
        if gradient_accumulation_steps is None:
            gradient_accumulation_steps = 1
        if int(gradient_accumulation_steps) != gradient_accumulation_steps or gradient_accumulation_steps < 1:
            raise ValueError(
                "gradient_accumulation_steps must be an integer >= 1, got "
                f"gradient_accumulation_steps={gradient_accumulation_steps!r}"
            )
        if layerwise_lr_decay is not None:
            if not 0 < layerwise_lr_decay <= 1:
                raise ValueError(
                    f"layerwise_lr_decay must be in (0, 1], got layerwise_lr_decay={layerwise_lr_decay!r}"
                )
            if num_layers is None or int(num_layers) < 1:
                raise ValueError(
                    f"layerwise_lr_decay={layerwise_lr_decay!r} needs num_layers >= 1, "
                    f"got num_layers={num_layers!r}"
                )
        self.weight_decay_rate = float(weight_decay)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.clip_global_norm = global_clipnorm
        self.accumulation_steps = int(gradient_accumulation_steps)
        self.exclude_from_weight_decay_names = tuple(exclude_from_weight_decay or ())
        self.layerwise_lr_decay = layerwise_lr_decay
        self.num_layers = num_layers

    # ----------------------------------------------------------------- variables
    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"]
        )
        self._decay_flags = []
        self._lr_multipliers = []
        for variable in var_list:
            path = _variable_path(variable)
            excluded = any(name in path for name in self.exclude_from_weight_decay_names)
            self._decay_flags.append(self.weight_decay_rate > 0 and not excluded)
            if self.layerwise_lr_decay is None:
                self._lr_multipliers.append(1.0)
            else:
                self._lr_multipliers.append(
                    layerwise_lr_multiplier(path, self.layerwise_lr_decay, self.num_layers)
                )
        self._excluded_flags = [
            any(name in _variable_path(v) for name in self.exclude_from_weight_decay_names)
            for v in var_list
        ]
        if self.accumulation_steps > 1:
            self._accumulators = self.add_optimizer_variables(var_list, "gradient_accumulator")
            self._micro_step = self.add_variable(
                shape=(), dtype="int64", aggregation="only_first_replica", name="micro_step"
            )

    @property
    def micro_steps(self):
        """Number of `apply` calls (micro-batches) so far; equals `iterations` without accumulation."""
        if self.accumulation_steps > 1:
            return self._micro_step
        return self.iterations

    def learning_rate_multiplier(self, variable):
        """The layer-wise LR multiplier used for `variable` (after `build`)."""
        return self._lr_multipliers[self._get_variable_index(variable)]

    def uses_weight_decay(self, variable):
        """Whether `variable` is decayed (after `build`)."""
        return self._decay_flags[self._get_variable_index(variable)]

    # --------------------------------------------------------------------- apply
    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        if trainable_variables is None:
            if not self.built:
                raise ValueError("Pass trainable_variables on the first call to apply().")
            trainable_variables = self._trainable_variables
        else:
            trainable_variables = list(trainable_variables)
            if not self.built:
                with keras.name_scope(self.name, caller=self):
                    self.build(trainable_variables)
                self.built = True
        grads = [_dense(g) for g in grads]
        if self.accumulation_steps == 1:
            self._apply_update(grads, trainable_variables)
        elif _needs_merge_call():
            tf.distribute.get_replica_context().merge_call(
                self._cross_replica_accumulate, args=(grads, trainable_variables)
            )
        else:
            self._replica_accumulate(grads, trainable_variables)

    def _is_update_step(self):
        return ops.equal((self._micro_step + 1) % self.accumulation_steps, 0)

    def _replica_accumulate(self, grads, variables):
        """Accumulation without a strategy (or one that needs no merge_call)."""

        def update():
            self._apply_update(self._averaged(grads, variables), variables)
            self._reset_accumulators(variables)

        def accumulate():
            for g, v in zip(grads, variables):
                if g is not None:
                    self.assign_add(self._accumulators[self._get_variable_index(v)], g)

        ops.cond(self._is_update_step(), update, accumulate)
        self._micro_step.assign_add(1)

    def _cross_replica_accumulate(self, distribution, grads, variables):
        """Accumulation under a merge_call strategy: the cond lives in cross-replica context."""

        def update():
            distribution.extended.call_for_each_replica(
                self._apply_averaged, args=(grads, variables)
            )
            self._reset_accumulators(variables)

        def accumulate():
            # Each replica adds its own (not yet all-reduced) gradient to its own copy.
            for g, v in zip(grads, variables):
                if g is not None:
                    acc = self._accumulators[self._get_variable_index(v)]
                    distribution.extended.update(
                        acc.value, lambda a, x: a.assign_add(x), args=(g,), group=False
                    )

        ops.cond(self._is_update_step(), update, accumulate)
        self._micro_step.assign_add(1)

    def _apply_averaged(self, grads, variables):
        self._apply_update(self._averaged(grads, variables), variables)

    def _averaged(self, grads, variables):
        k = float(self.accumulation_steps)
        out = []
        for g, v in zip(grads, variables):
            if g is None:
                out.append(None)
                continue
            acc = ops.convert_to_tensor(self._accumulators[self._get_variable_index(v)])
            out.append((g + ops.cast(acc, g.dtype)) / k)
        return out

    def _reset_accumulators(self, variables):
        for v in variables:
            acc = self._accumulators[self._get_variable_index(v)]
            acc.assign(ops.zeros(acc.shape, acc.dtype))

    def _apply_update(self, grads, variables):
        """One real update (replica context): clip the global gradient, then the base apply."""
        if self.clip_global_norm:
            present = [g for g in grads if g is not None]
            global_grads = present
            strategy = tf.distribute.get_strategy()
            if tf.distribute.has_strategy() and strategy.num_replicas_in_sync > 1:
                # The base apply all-reduces (sums) the replicas' gradients; clip that sum.
                global_grads = tf.distribute.get_replica_context().all_reduce(
                    tf.distribute.ReduceOp.SUM, present
                )
            norm = tf.linalg.global_norm(global_grads)
            scale = ops.minimum(1.0, self.clip_global_norm / ops.maximum(norm, 1e-12))
            grads = [None if g is None else g * ops.cast(scale, g.dtype) for g in grads]
        super().apply(grads, variables)

    # --------------------------------------------------------------- update step
    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        dtype = variable.dtype
        lr = ops.cast(learning_rate, dtype) * self._lr_multipliers[index]
        gradient = ops.cast(gradient, dtype)
        m = self._momentums[index]
        v = self._velocities[index]
        self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
        m_hat, v_hat = ops.convert_to_tensor(m), ops.convert_to_tensor(v)
        if self._bias_correction:
            t = ops.cast(self.iterations + 1, dtype)
            m_hat = m_hat / (1.0 - ops.power(ops.cast(self.beta_1, dtype), t))
            v_hat = v_hat / (1.0 - ops.power(ops.cast(self.beta_2, dtype), t))
        update = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        if self._decay_flags[index]:
            update = update + self.weight_decay_rate * variable
        update = self._scale_update(update, variable, self._excluded_flags[index])
        self.assign_sub(variable, lr * update)

    _bias_correction = True

    def _scale_update(self, update, variable, excluded):
        return update

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "weight_decay": self.weight_decay_rate,
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "global_clipnorm": self.clip_global_norm,
                "gradient_accumulation_steps": self.accumulation_steps,
                "exclude_from_weight_decay": list(self.exclude_from_weight_decay_names),
                "layerwise_lr_decay": self.layerwise_lr_decay,
                "num_layers": self.num_layers,
            }
        )
        return config


def _dense(g):
    if isinstance(g, tf.IndexedSlices):
        return tf.convert_to_tensor(g)
    return g


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

    def __init__(self, learning_rate=1e-4, bias_correction=True, name="adamw", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.bias_correction = bool(bias_correction)

    @property
    def _bias_correction(self):
        return self.bias_correction

    def get_config(self):
        config = super().get_config()
        config["bias_correction"] = self.bias_correction
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

    def _scale_update(self, update, variable, excluded):
        if excluded:
            return update
        w_norm = ops.sqrt(ops.sum(ops.square(variable)))
        u_norm = ops.sqrt(ops.sum(ops.square(update)))
        ratio = ops.where(
            ops.logical_and(w_norm > 0, u_norm > 0),
            w_norm / ops.maximum(u_norm, 1e-30),
            ops.ones_like(w_norm),
        )
        return ratio * update


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
