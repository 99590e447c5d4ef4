"""The one registry of task types: task name (--task, task.json "task") -> Task class.

Adding a task type: write `bert_keras/tasks/<name>.py` with a `Task` subclass and add its
class to TASK_TYPES below (see docs/architecture.md).

>>> sorted(FINETUNING_TASKS)
['classification', 'multi_label', 'regression', 'span_qa', 'tagging']
>>> get_task("span_qa").label_keys
('start_positions', 'end_positions')
"""

from bert_keras.tasks.classification import Classification
from bert_keras.tasks.embedding import Embedding
from bert_keras.tasks.encoder import Encoder
from bert_keras.tasks.multi_label import MultiLabel
from bert_keras.tasks.pretraining import Pretraining
from bert_keras.tasks.regression import Regression
from bert_keras.tasks.span_qa import SpanQA
from bert_keras.tasks.tagging import Tagging

TASK_TYPES = {cls.name: cls for cls in (
    Classification, MultiLabel, Regression, Tagging, SpanQA, Pretraining, Encoder, Embedding)}
TASKS = tuple(TASK_TYPES)
FINETUNING_TASKS = tuple(name for name, cls in TASK_TYPES.items() if cls.finetunable)


def task_of_model(model):
    """The Task object whose `builds(model)` is true; ValueError if none."""
    for cls in TASK_TYPES.values():
        if cls().builds(model):
            return cls()
    raise ValueError(f"{type(model).__name__} is not a model of a task type {TASKS}.")


def get_task(name):
    """The Task object of a task name; ValueError naming the known ones."""
    if name not in TASK_TYPES:
        raise ValueError(f"Unknown task {name!r}; expected one of {TASKS}.")
    return TASK_TYPES[name]()
