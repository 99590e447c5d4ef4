"""One ProblemType per variant of sequence classification, mapped once to every name of it:
the task type, BertClassifier's problem_type (and back from a saved model), transformers'
config.json and the readers' label_type."""

import pytest

import bert_keras as bk
from bert_keras.tasks.classification import problem_types
from bert_keras.tasks.registry import get_task, task_of_model


@pytest.mark.parametrize("problem", problem_types.PROBLEM_TYPES, ids=problem_types.NAMES)
def test_a_problem_type_names_its_task_model_and_transformers_config(problem):
    task = get_task(problem.task)
    assert task.problem_type is problem
    encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=50)
    model = task.build_model(encoder,
                             bk.LabelMap(["a", "b"], multi_label=problem.label_type == "multi"))
    assert model.problem_type == problem.name and model.problem is problem
    assert task_of_model(model).name == problem.task
    loaded = bk.BertClassifier.from_config(model.get_config())  # as a .keras file names it
    assert loaded.problem is problem
    config = {"problem_type": problem.transformers, "id2label": {"0": "a", "1": "b"}}
    readers = [name for name in ("classification", "multi_label", "regression")
               if get_task(name).reads_transformers("BertForSequenceClassification", config)]
    assert readers == [problem.task]


def test_transformers_defaults_without_a_problem_type():
    assert problem_types.from_transformers({}) is problem_types.SINGLE_LABEL
    assert problem_types.from_transformers({"id2label": {"0": "x"}}) is problem_types.REGRESSION
    assert problem_types.from_transformers({"problem_type": "ranking"}) is None
