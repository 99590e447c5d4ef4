"""The Task protocol: everything that differs between task types, in one class per type.

A task type owns how its examples are read, featurized and batched (`task_data.TaskData`),
which Keras model it trains, how it predicts and scores (`task_modeling.TaskModeling`), and
its serving functions in the export and its lines in tools/predict.py
(`task_serving.TaskServing`): one small class per role, which `Task` joins. Code above this
package (training, serving, tools) is handed the task object (`registry.get_task(name)`,
`FinetuneConfig.task_type`, `sources.Source.task`) and never switches on a task name. A new
task type is one new package `tasks/<name>/` (its task model, featurizer and `Task` subclass)
plus one line in `registry.py`.

>>> from bert_keras.tasks.registry import get_task
>>> task = get_task("tagging")
>>> isinstance(task, Task), task.main_metric, task.finetunable
(True, 'f1', True)
"""

from bert_keras.tasks.task_data import TaskData
from bert_keras.tasks.task_modeling import TaskModeling
from bert_keras.tasks.task_serving import TaskServing


class Task(TaskData, TaskModeling, TaskServing):
    """Base of the task types. Class attributes describe the type; methods do its work.

    Subclasses set `name` (the --task value and task.json's "task") and override what
    differs, role by role.
    """

    name = None
    finetunable = True  # trained by tools/finetune.py (pretraining and encoder are not)
