"""The options of the sequence-classification task types (the flags of tools/finetune.py
that only they read).

>>> MultiLabelOptions().multi_label_threshold
0.5
>>> MultiLabelOptions(multi_label_threshold=1.5)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --multi_label_threshold must be in (0, 1), got 1.5.
"""

import dataclasses

from bert_keras.configs import Config, check, option


@dataclasses.dataclass(frozen=True)
class ClassificationOptions(Config):
    """The head of `BertClassifier` (classification, multi_label, regression)."""


@dataclasses.dataclass(frozen=True)
class MultiLabelOptions(ClassificationOptions):
    """multi_label: the head's options and the probability that predicts a label."""

    multi_label_threshold: float = option(0.5, "multi_label: probability to predict a label.")

    def validate(self):
        super().validate()
        check(0.0 < self.multi_label_threshold < 1.0, "--multi_label_threshold must be in "
              f"(0, 1), got {self.multi_label_threshold}.")
