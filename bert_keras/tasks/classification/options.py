"""The options of the sequence-classification task types: the flags of tools/finetune.py
that only they read, and of tools/export.py (`ClassificationExportOptions`).

>>> ClassificationOptions().pooling, MultiLabelOptions(pooling="mean").pooling
('cls', 'mean')
>>> ClassificationOptions(head_hidden_layers=-1)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --head_hidden_layers must be >= 0, got -1.
>>> MultiLabelOptions().multi_label_threshold
0.5
>>> MultiLabelOptions(multi_label_threshold=1.5)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --multi_label_threshold must be in (0, 1), got 1.5.
>>> ClassificationExportOptions().pairs
False
"""

import dataclasses

from bert_keras.configs import Config, check, option
from bert_keras.tasks.classification.model import (
    DEFAULT_HEAD_ACTIVATION,
    HEAD_ACTIVATIONS,
    POOLINGS,
)


@dataclasses.dataclass(frozen=True)
class ClassificationOptions(Config):
    """The head of `BertClassifier` (classification, multi_label, regression)."""

    pooling: str = option(
        "cls", "What the classifier reads: cls (the pooler on [CLS], as transformers), or the "
        "real tokens' mean, max or attention (a learned weight per token).", choices=POOLINGS)
    head_hidden_layers: int = option(
        0, "Layers dense -> --head_activation -> dropout before the classifier's output layer.")
    head_hidden_size: int = option(
        None, "Width of the --head_hidden_layers; default: the encoder's hidden size.",
        advanced=True)
    head_activation: str = option(
        DEFAULT_HEAD_ACTIVATION, "Activation of the --head_hidden_layers.",
        choices=HEAD_ACTIVATIONS, advanced=True)

    def validate(self):
        super().validate()
        check(self.head_hidden_layers >= 0,
              f"--head_hidden_layers must be >= 0, got {self.head_hidden_layers}.")
        check(self.head_hidden_size is None or self.head_hidden_size >= 1,
              f"--head_hidden_size must be >= 1, got {self.head_hidden_size}.")

    def model_arguments(self):
        """The BertClassifier arguments these options set."""
        return dict(pooling=self.pooling, head_hidden_layers=self.head_hidden_layers,
                    head_hidden_size=self.head_hidden_size, head_activation=self.head_activation)


@dataclasses.dataclass(frozen=True)
class MultiLabelOptions(ClassificationOptions):
    """multi_label: the head's options and the probability that predicts a label."""

    multi_label_threshold: float = option(0.5, "multi_label: probability to predict a label.")

    def validate(self):
        super().validate()
        check(0.0 < self.multi_label_threshold < 1.0, "--multi_label_threshold must be in "
              f"(0, 1), got {self.multi_label_threshold}.")


@dataclasses.dataclass(frozen=True)
class ClassificationExportOptions(Config):
    """What a classifier's export serves beyond what its source says."""

    pairs: bool = option(False, "Serve a classifier of text pairs (inputs text_a, text_b): for "
                         "a fine-tuned transformers *ForSequenceClassification checkpoint, "
                         "which does not say; a task directory says it in task.json.")
