"""The export options of the task types, from the registry: each type's own Config class
(`Task.export_options_class`, in its package), their options as the flat fields of
`TaskExportOptions` (which ExportConfig's flags are made of), and the one object of a
source's type made of the options given (`options_of`), another type's refused by name, and
what they change in what is served (`served`).

An option two types share is one field of a base class both inherit (span QA's and tagging's
`max_windows`: `task_serving.WindowOptions`), listed once; two definitions of one name fail
at import.

>>> from bert_keras.tasks.registry import get_task
>>> options_of(get_task("span_qa"), {"doc_stride": 64}).doc_stride
64
>>> try:
...     options_of(get_task("span_qa"), {"max_pairs": 64}, "runs/qa/best")
... except ConfigError as e:
...     print(e)
--max_pairs is an option of reranking exports, not of runs/qa/best's span_qa model.
"""

import dataclasses
import difflib
import typing

from bert_keras.configs import Config, ConfigError
from bert_keras.tasks.registry import TASK_TYPES, task_of_model

# {task name: its export options class} of the task types that have one.
TASK_EXPORT_OPTIONS = {name: cls.export_options_class for name, cls in TASK_TYPES.items()
                       if cls.export_options_class is not None}


def _owners():
    """{option name: (its dataclass field, the task names that read it)}, in registry order."""
    owners = {}
    for task, cls in TASK_EXPORT_OPTIONS.items():
        for field in dataclasses.fields(cls):
            known, tasks = owners.get(field.name, (field, []))
            if known is not field:  # one name, two definitions: one place for each option
                raise TypeError(f"Export option {field.name!r} of {cls.__name__} ({task}) is "
                                f"defined again by {', '.join(tasks)}'s; give both one base "
                                "class (as task_serving.WindowOptions).")
            owners[field.name] = (field, tasks + [task])
    return owners


OWNERS = _owners()


def _listed(names):
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _union():
    """A Config class with every task type's export options as its fields (the help of each
    says which types read it); its `validate` is every options class's."""
    fields = []
    for name, (field, tasks) in OWNERS.items():
        owner = TASK_EXPORT_OPTIONS[tasks[0]]
        meta = dict(field.metadata, help=f"{_listed(tasks)}: {field.metadata['help']}")
        fields.append((name, typing.get_type_hints(owner)[name],
                       dataclasses.field(default=field.default, metadata=meta)))

    def validate(self):
        for cls in dict.fromkeys(TASK_EXPORT_OPTIONS.values()):
            cls(**{f.name: getattr(self, f.name) for f in dataclasses.fields(cls)})

    def task_options(self):
        """{option name: value} of the task types' options set here (not their defaults)."""
        return {name: getattr(self, name) for name, (field, _) in OWNERS.items()
                if getattr(self, name) != field.default}

    return dataclasses.make_dataclass(
        "TaskExportOptions", fields, bases=(Config,), frozen=True,
        namespace=dict(validate=validate, task_options=task_options, __module__=__name__,
                       __doc__="Every task type's export options, as flat fields."))


TaskExportOptions = _union()


def options_of(task, given, source=None):
    """The export options object of `task` (a Task; None if its type has none) made of
    `given` ({option name: value}, None meaning its default): an option of another task
    type is a ConfigError in one line (naming `source`, the exported directory), a name no
    type has a TypeError naming the close one."""
    cls = task.export_options_class
    mine = {f.name for f in dataclasses.fields(cls)} if cls else set()
    given = {name: value for name, value in given.items() if value is not None}
    for name in given:
        if name in mine:
            continue
        if name not in OWNERS:
            close = difflib.get_close_matches(name, list(OWNERS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"unknown export option {name!r}{hint}; the task types read "
                            f"{sorted(OWNERS)}.")
        model = f"{source}'s {task.name} model" if source else f"a {task.name} model"
        raise ConfigError(f"--{name} is an option of {_listed(OWNERS[name][1])} exports, not "
                          f"of {model}.")
    return cls.from_options(**given) if cls else None


def served(task, model, info, options, source=None):
    """(model, info, task, options) as an export serves them: `task.with_export_options`
    applied (`source`: the exported directory, named in errors); where the options make
    another model of it (an encoder's embedder), that model's task type with its default
    options."""
    changed, info = task.with_export_options(model, info, options, source)
    if changed is model:
        return model, info, task, options
    task = task_of_model(changed)
    return changed, dict(info, task=task.name), task, None
