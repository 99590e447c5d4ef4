"""The shared base of AdamW and Lamb: exclusions, per-variable LR, clipping, gradient accumulation.

`_BertOptimizer` decides which variables are decayed (`DEFAULT_WEIGHT_DECAY_EXCLUSIONS`),
gives each its layer-wise learning-rate multiplier, clips the all-reduced gradient to a
global norm, accumulates micro-step gradients and runs the Adam step; the subclasses in
`bert_keras.optimization` (which explains why and gives the update rules) only
add their own scaling of the update.
"""

import contextlib
import functools

import keras
import tensorflow as tf
from keras import ops

from bert_keras.optimization.schedules import layerwise_lr_multiplier

# Variables whose path contains one of these are not decayed (Google BERT's list,
# plus Keras' names for LayerNorm's scale/offset).
DEFAULT_WEIGHT_DECAY_EXCLUSIONS = ("layer_norm", "LayerNorm", "bias", "beta", "gamma")


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

    Subclasses may scale the update (`_scale_update`) or update some variables by another
    rule (`_update_kind`, `_step_scalars`, `update_step`); the scalars that all variables
    share are computed once per step, in `_backend_update_step`.
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
        if (int(gradient_accumulation_steps) != gradient_accumulation_steps
                or gradient_accumulation_steps < 1):
            raise ValueError(
                "gradient_accumulation_steps must be an integer >= 1, got "
                f"gradient_accumulation_steps={gradient_accumulation_steps!r}"
            )
        if layerwise_lr_decay is not None:
            if not 0 < layerwise_lr_decay <= 1:
                raise ValueError(
                    "layerwise_lr_decay must be in (0, 1], got "
                    f"layerwise_lr_decay={layerwise_lr_decay!r}"
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
        """Number of `apply` calls (micro-batches) so far; equals `iterations` without
        accumulation."""
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
                # Built on the first apply, which Keras traces when fit has no strategy:
                # tf.function gives each variable made in a trace an is-initialized tf.cond,
                # lifted out of the step afterwards (~13 ms of tracing apiece: 1.5 s of a tiny
                # ELECTRA's first fit, 128 slots); made outside the trace, none is built.
                with _outside_the_trace(), keras.name_scope(self.name, caller=self):
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
        # One divisor per dtype, shared by the variables (functools.cache: made once each).
        k = functools.cache(lambda dtype: tf.constant(float(self.accumulation_steps), dtype))
        out = []
        for g, v in zip(grads, variables):
            if g is None:
                out.append(None)
                continue
            acc = ops.convert_to_tensor(self._accumulators[self._get_variable_index(v)])
            out.append((g + ops.cast(acc, g.dtype)) / k(g.dtype))
        return out

    def _reset_accumulators(self, variables):
        zeros = functools.cache(ops.zeros)  # one per shape and dtype, shared by accumulators
        for v in variables:
            acc = self._accumulators[self._get_variable_index(v)]
            acc.assign(zeros(tuple(acc.shape), acc.dtype))

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
            global_scale = ops.minimum(1.0, self.clip_global_norm / ops.maximum(norm, 1e-12))
            scale = functools.cache(lambda dtype: ops.cast(global_scale, dtype))  # per dtype
            grads = [None if g is None else g * scale(g.dtype) for g in grads]
        super().apply(grads, variables)

    # --------------------------------------------------------------- update step
    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        """Keras' loop of `update_step` over the variables, given the scalars that their updates
        share (the learning rate times each multiplier, Adam's bias corrections, constants),
        computed here once per step, not once per variable: a traced step then holds only each
        variable's own elementwise ops."""
        indices_by_kind = {}
        for variable in trainable_variables:
            indices_by_kind.setdefault(self._update_kind(variable), []).append(
                self._get_variable_index(variable))
        step_scalars = {kind: self._step_scalars(kind, learning_rate, indices)
                        for kind, indices in indices_by_kind.items()}
        if tf.distribute.has_strategy():
            # Keras all-reduces the gradients and updates each variable under the strategy;
            # the scalars travel (per replica) as its learning-rate argument.
            super()._backend_update_step(grads, trainable_variables, step_scalars)
            return
        # One replica: Keras' all-reduce would only add an identity op per gradient.
        for gradient, variable in zip(grads, trainable_variables):
            if isinstance(variable, keras.Variable):
                variable = variable.value
            self.update_step(gradient, variable, step_scalars)

    def _update_kind(self, variable):
        """(rule, dtype): which rule updates `variable` and in which dtype; the variables of
        one kind share their step scalars. 16-bit variables are updated in float32: in
        bfloat16, 1 - 0.999^t is 0 and the Adam step would vanish, leaving only the decay."""
        return ("elementwise", "float64" if variable.dtype == "float64" else "float32")

    def _learning_rates(self, learning_rate, dtype, indices):
        """{multiplier: learning rate times it} for the multipliers of the variables `indices`."""
        learning_rate = ops.cast(learning_rate, dtype)
        multipliers = sorted({self._lr_multipliers[i] for i in indices})
        return {m: learning_rate * m for m in multipliers}

    def _beta_powers(self, dtype):
        """beta_1^t and beta_2^t, t the 1-based number of this update."""
        t = ops.cast(self.iterations + 1, dtype)
        return (ops.power(ops.cast(self.beta_1, dtype), t),
                ops.power(ops.cast(self.beta_2, dtype), t))

    def _step_scalars(self, kind, learning_rate, indices):
        """What `update_step` needs for the variables `indices` of `kind`, as tensors: the
        Python constants once, not as one constant op per variable."""
        dtype = kind[1]
        scalars = {
            "lr": self._learning_rates(learning_rate, dtype, indices),
            "beta_1": tf.constant(self.beta_1, dtype),
            "one_minus_beta_1": tf.constant(1.0 - self.beta_1, dtype),
            "beta_2": tf.constant(self.beta_2, dtype),
            "one_minus_beta_2": tf.constant(1.0 - self.beta_2, dtype),
            "epsilon": tf.constant(self.epsilon, dtype),
            "weight_decay": tf.constant(self.weight_decay_rate, dtype),
        }
        if self._bias_correction:
            beta_1_power, beta_2_power = self._beta_powers(dtype)
            scalars["bias_correction_1"] = 1.0 - beta_1_power
            scalars["bias_correction_2"] = 1.0 - beta_2_power
        return scalars

    def update_step(self, gradient, variable, step_scalars):
        """The rule in `bert_keras.optimization` as elementwise ops; `step_scalars` (from
        `_backend_update_step`) holds what all variables share."""
        index = self._get_variable_index(variable)
        kind = self._update_kind(variable)
        dtype = kind[1]
        scalars = step_scalars[kind]
        weights = ops.cast(tf.convert_to_tensor(variable), dtype)  # one read for all uses
        gradient = ops.cast(gradient, dtype)
        m = (scalars["beta_1"] * ops.cast(self._momentums[index], dtype)
             + scalars["one_minus_beta_1"] * gradient)
        v = (scalars["beta_2"] * ops.cast(self._velocities[index], dtype)
             + scalars["one_minus_beta_2"] * ops.square(gradient))
        self.assign(self._momentums[index], m)
        self.assign(self._velocities[index], v)
        if self._bias_correction:
            m = m / scalars["bias_correction_1"]
            v = v / scalars["bias_correction_2"]
        update = m / (ops.sqrt(v) + scalars["epsilon"])
        if self._decay_flags[index]:
            update = update + scalars["weight_decay"] * weights
        update = self._scale_update(update, weights, self._excluded_flags[index], scalars)
        self.assign(variable, weights - scalars["lr"][self._lr_multipliers[index]] * update)

    _bias_correction = True

    def _scale_update(self, update, weights, excluded, scalars):
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


def _outside_the_trace():
    """tf.init_scope when no distribution strategy is in effect; under one, nothing: Keras
    builds the optimizer before tracing there, and a strategy makes its variables in its own
    cross-replica context."""
    if tf.distribute.has_strategy():
        return contextlib.nullcontext()
    return tf.init_scope()
