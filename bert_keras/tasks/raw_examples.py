"""A few raw inputs of a task type's Keras model, as a user gives them (`Task.raw_examples`).

Each task type says once how its model is made and fed raw text, so that whatever runs every
task type (the task-type contract test, tests/tasks/test_task_type_contract.py) needs no code
of its own per type: a new task type gets it all from its `raw_examples` and one registry line.

>>> from bert_keras.tasks.registry import get_task
>>> examples = get_task("regression").raw_examples()
>>> examples.model_class.__name__, examples.arguments
('BertClassifier', {'num_classes': 1, 'problem_type': 'regression'})
"""

import dataclasses

# Short texts shared by the task types' examples.
TEXTS = ["He went home.", "It rained all day."]
PAIRED = ["He left for home.", "The sun shone."]


@dataclasses.dataclass(frozen=True)
class RawExamples:
    """How a task type's Keras model is made and fed raw text.

    Attributes:
      model_class: the public Keras task model (a `BertTaskModel`: `from_pretrained`, and
        `fit` / `predict` on raw text through its preprocessor).
      arguments: keyword arguments of its constructor (after the encoder) and of
        `from_pretrained` that these examples need (e.g. `num_classes`).
      fit: `(x, y)` for `model.fit(x, y)`; y None where it trains without labels.
      predict: x for `model.predict(x)`.
    """

    model_class: type
    arguments: dict
    fit: tuple
    predict: object
