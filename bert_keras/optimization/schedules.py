"""Learning-rate schedules for BERT: warmup + polynomial decay over steps, layer-wise decay
over depth.

`WarmupDecay` gives the rate at each applied update; `layerwise_lr_multiplier` gives
a variable's multiplier from its layer (embeddings lowest, top transformer layer 1).
The optimizers in `bert_keras.optimization` use both.
"""

import re

import keras
from keras import ops

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
