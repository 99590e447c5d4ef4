"""TaskDistillationConfig: a fine-tuning run that also learns a fine-tuned teacher's outputs.

>>> TaskDistillationConfig().teacher_dir is None
True
>>> TaskDistillationConfig(distill_alpha=2.0)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --distill_alpha must be in [0, 1], got 2.0.
"""

import dataclasses

from bert_keras.configs import Config, check, option


@dataclasses.dataclass(frozen=True)
class TaskDistillationConfig(Config):
    """The teacher and the soft-target loss (`finetuning_teacher.Teacher`)."""

    teacher_dir: str = option(
        None, "Task distillation: a fine-tuned teacher of this --task (a tools/finetune.py "
        "output dir or its best/) whose outputs on the training data the model learns too; "
        "same vocabulary, labels among the teacher's.")
    distill_temperature: float = option(
        2.0, "--teacher_dir: softmax temperature T of the soft targets (the KL is scaled by "
        "T^2; regression uses the squared error to the teacher's value, no T).")
    distill_alpha: float = option(
        0.5, "--teacher_dir: weight of the soft-target loss; 1 - alpha weighs the task's own "
        "loss on the labels (0.5 and T=2: Hugging Face's DistilBERT task distillation).")

    def validate(self):
        check(self.distill_temperature > 0,
              f"--distill_temperature must be > 0, got {self.distill_temperature}.")
        check(0.0 <= self.distill_alpha <= 1.0,
              f"--distill_alpha must be in [0, 1], got {self.distill_alpha}.")
