"""RuntimeConfig: where and in which precision a training run computes (both tools).

>>> RuntimeConfig().distribution_strategy
'one_device'
>>> RuntimeConfig(distribution_strategy="tpu")
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --distribution_strategy=tpu needs --tpu (an address, or 'local').
"""

import dataclasses
import os

from bert_keras.configs import Config, check, option
from bert_keras.training.precision import AUTO, DTYPES
from bert_keras.training.strategy import STRATEGIES


@dataclasses.dataclass(frozen=True)
class RuntimeConfig(Config):
    """The distribution strategy, the dtype policy and XLA."""

    dtype: str = option(AUTO, "Compute dtype policy (variables, layer norm, softmax and logits "
                        "stay float32); auto: mixed_bfloat16 where the CPU has AMX or "
                        "AVX512-BF16 (or the GPU bfloat16), float32 elsewhere.",
                        choices=(AUTO,) + DTYPES)
    distribution_strategy: str = option(
        "one_device", "tf.distribute strategy: one_device; mirrored (all local GPUs); "
        "multi_worker_mirrored (cluster from the TF_CONFIG environment variable); tpu (needs "
        "--tpu).", choices=STRATEGIES)
    tpu: str = option(None, "TPU address for --distribution_strategy=tpu ('local' on a TPU VM).",
                      advanced=True)
    jit_compile: bool = option(False, "XLA-compile the train step (good on GPU/TPU; on CPU it "
                               "loses bfloat16's speed).", advanced=True)

    def validate(self):
        check(self.dtype in (AUTO,) + DTYPES,
              f"--dtype={self.dtype!r} is not one of {(AUTO,) + DTYPES}.")
        check(self.distribution_strategy in STRATEGIES, f"--distribution_strategy="
              f"{self.distribution_strategy!r} is not one of {STRATEGIES}.")
        check(self.distribution_strategy != "tpu" or self.tpu,
              "--distribution_strategy=tpu needs --tpu (an address, or 'local').")
        check(not self.tpu or self.distribution_strategy == "tpu",
              f"--tpu={self.tpu!r} needs --distribution_strategy=tpu, got "
              f"{self.distribution_strategy!r}.")
        check(self.distribution_strategy != "multi_worker_mirrored" or os.environ.get("TF_CONFIG"),
              "--distribution_strategy=multi_worker_mirrored reads the cluster from the "
              "TF_CONFIG environment variable, which is not set.")
