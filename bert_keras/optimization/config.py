"""OptimizerConfig: the optimizer options of a training run (pretraining and fine-tuning),
and the optimizer they make.

>>> config = OptimizerConfig(learning_rate=5e-5)
>>> type(config.make_optimizer(num_train_steps=100, num_warmup_steps=10)).__name__
'AdamW'
>>> OptimizerConfig(adam_epsilon=0)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --adam_epsilon must be > 0, got 0.0.
"""

import dataclasses
import math

from bert_keras.configs import Config, check, option
from bert_keras.optimization.optimizers import create_optimizer

OPTIMIZERS = ("adamw", "lamb")


@dataclasses.dataclass(frozen=True)
class OptimizerConfig(Config):
    """AdamW or LAMB (`create_optimizer`) with warmup and linear decay."""

    learning_rate: float = option(1e-4, "Peak learning rate (after warmup).")
    optimizer: str = option("adamw", "Optimizer: AdamW, or LAMB (for large batches).",
                            choices=OPTIMIZERS, advanced=True)
    end_learning_rate: float = option(0.0, "Learning rate at the last step.", advanced=True)
    weight_decay: float = option(0.01, "Decoupled weight decay (not LayerNorm, not biases).",
                                 advanced=True)
    adam_beta_2: float = option(0.999, "Adam's second-moment decay (RoBERTa: 0.98, for large "
                                "batches).", advanced=True)
    adam_epsilon: float = option(1e-6, "Adam's epsilon (BERT and RoBERTa: 1e-6).", advanced=True)
    gradient_accumulation_steps: int = option(1, "Micro-batches per update: each is the batch "
                                              "size / this examples.", advanced=True)
    layerwise_lr_decay: float = option(None, "Layer-wise learning-rate decay (e.g. 0.9): layer "
                                       "l of L learns at rate x decay^(L - l).", advanced=True)

    def validate(self):
        check(self.optimizer in OPTIMIZERS,
              f"--optimizer={self.optimizer!r} is not one of {OPTIMIZERS}.")
        check(self.learning_rate > 0 and math.isfinite(self.learning_rate),
              f"--learning_rate must be > 0, got {self.learning_rate}.")
        check(0.0 < self.adam_beta_2 < 1.0,
              f"--adam_beta_2 must be in (0, 1), got {self.adam_beta_2}.")
        check(self.adam_epsilon > 0, f"--adam_epsilon must be > 0, got {self.adam_epsilon}.")
        check(self.gradient_accumulation_steps >= 1, "--gradient_accumulation_steps must be "
              f">= 1, got {self.gradient_accumulation_steps}.")
        check(self.layerwise_lr_decay is None or 0.0 < self.layerwise_lr_decay <= 1.0,
              f"--layerwise_lr_decay must be in (0, 1], got {self.layerwise_lr_decay}.")

    def make_optimizer(self, num_train_steps, num_warmup_steps, num_layers=None):
        """The optimizer of `num_train_steps` updates (`num_layers`: the encoder's, for
        --layerwise_lr_decay)."""
        return create_optimizer(
            self.optimizer, learning_rate=self.learning_rate, num_train_steps=num_train_steps,
            num_warmup_steps=num_warmup_steps, end_learning_rate=self.end_learning_rate,
            weight_decay=self.weight_decay, beta_2=self.adam_beta_2, epsilon=self.adam_epsilon,
            gradient_accumulation_steps=self.gradient_accumulation_steps,
            layerwise_lr_decay=self.layerwise_lr_decay,
            num_layers=num_layers if self.layerwise_lr_decay else None)
