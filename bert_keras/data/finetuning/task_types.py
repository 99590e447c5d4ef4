"""The task types as data/ sees them: handed down by `bert_keras.tasks.registry` as it loads,
since data/ sits above tasks/ and cannot import it. TFDS datasets (`tfds.py`) and the bundled
tasks (`bundled.py`) read their examples through the Task object of their task type.

>>> get_task("tagging").file_formats
('conll',)
"""

# "get": a task name -> its Task object; "infer": the Task a TFDS dataset's features make.
_task_types = {}


def use_task_types(get_task, infer_task):
    """Called by the task registry: `get_task(name)` -> Task, `infer_task(dataset,
    label_field)` -> the Task its features make (refused in one line if none)."""
    _task_types.update(get=get_task, infer=infer_task)


def get_task(name):
    """The Task object of a task name (ValueError naming the known ones)."""
    return _task_types["get"](name)


def infer_task(dataset, label_field=None):
    """The Task whose features TFDS dataset `dataset` (a `tfds.TfdsDataset`) has."""
    return _task_types["infer"](dataset, label_field)


__all__ = ["use_task_types", "get_task", "infer_task"]
