"""Pretraining: the models a pretraining run trains (`model.BertPretrainer`: masked LM + NSP /
SOP; `electra.ElectraPretrainer`; `distillation.DistillationPretrainer`) and
`task.Pretraining`, what a trained pretrainer serves (fill-mask).

The runs themselves (data, objectives by --objective, the loop) are
`bert_keras.training.pretraining`.
"""

from bert_keras.tasks.pretraining.distillation import (
    DistillationPretrainer,
    DistillOptions,
    student_from_teacher,
)
from bert_keras.tasks.pretraining.electra import ElectraPretrainer
from bert_keras.tasks.pretraining.electra_options import ElectraOptions
from bert_keras.tasks.pretraining.model import BertPretrainer
from bert_keras.tasks.pretraining.task import Pretraining

__all__ = ["BertPretrainer", "DistillOptions", "DistillationPretrainer", "ElectraOptions",
           "ElectraPretrainer", "Pretraining", "student_from_teacher"]
