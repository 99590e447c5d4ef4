"""TaggingOptions: how a tagging run decodes its tags (flags of tools/finetune.py).

>>> TaggingOptions().crf
False
>>> TaggingOptions(crf_constraints="bio")
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --crf_constraints=bio needs --crf.
"""

import dataclasses

from bert_keras.configs import Config, check, option
from bert_keras.tasks.tagging.crf import CONSTRAINTS


@dataclasses.dataclass(frozen=True)
class TaggingOptions(Config):
    """A linear-chain CRF over the word tags (`crf.CRF`), and its constraints."""

    crf: bool = option(False, "tagging: a linear-chain CRF over the words' tags (learned "
                       "transitions), trained on its negative log-likelihood and decoded by "
                       "Viterbi; a transformers checkpoint's head is kept, its CRF starts "
                       "from zeros.")
    crf_constraints: str = option("none", "tagging --crf: 'bio' forbids I-X first or after "
                                  "anything but B-X / I-X (from the tag names).",
                                  choices=list(CONSTRAINTS))
    crf_learning_rate_multiplier: float = option(
        100.0, "tagging --crf: the CRF's scores learn this many times as fast as the encoder "
        "(Adam-style steps): from zeros, at a fine-tuning learning rate, they hardly move "
        "otherwise.", advanced=True)

    def validate(self):
        check(self.crf_constraints in CONSTRAINTS,
              f"--crf_constraints={self.crf_constraints} is not one of {list(CONSTRAINTS)}.")
        check(self.crf or self.crf_constraints == "none",
              f"--crf_constraints={self.crf_constraints} needs --crf.")
        check(self.crf_learning_rate_multiplier > 0, "--crf_learning_rate_multiplier must be "
              f"> 0, got {self.crf_learning_rate_multiplier}.")
