"""FillMaskOptions: the flag of tools/export.py that only a pretrainer's export (fill-mask)
reads.

>>> FillMaskOptions().top_k
5
>>> FillMaskOptions(top_k=0)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --top_k must be positive, got 0.
"""

import dataclasses

from bert_keras.configs import Config, check, option


@dataclasses.dataclass(frozen=True)
class FillMaskOptions(Config):
    """How many fillers of each [MASK] the export returns."""

    top_k: int = option(5, "Fill-mask predictions per [MASK].")

    def validate(self):
        check(self.top_k >= 1, f"--top_k must be positive, got {self.top_k}.")
