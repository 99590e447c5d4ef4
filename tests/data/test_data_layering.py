"""data/ sits above tasks/ (docs/architecture.md's import order): no module of data/ imports
tasks/, not even inside a function; the task types reach data/ through
`data.finetuning.task_types`, handed down by the task registry."""

import ast
import pathlib

import bert_keras

PACKAGE = pathlib.Path(bert_keras.__file__).parent


def imported_modules(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_data_imports_no_task_package():
    upward = sorted({f"{path.relative_to(PACKAGE)}: {name}"
                     for path in (PACKAGE / "data").rglob("*.py")
                     for name in imported_modules(path)
                     if name == "bert_keras.tasks" or name.startswith("bert_keras.tasks.")})
    assert not upward


def test_the_bundled_tasks_read_through_their_task_types():
    from bert_keras.data.finetuning.bundled import BUNDLED_TASKS, load_bundled_task

    kinds = {name: type(load_bundled_task(name, "dev")[0]).__module__ for name in BUNDLED_TASKS}
    assert kinds == {"bible_paraphrase": "bert_keras.tasks.classification.reader",
                     "wordnet_topics": "bert_keras.tasks.classification.reader",
                     "wordnet_qa": "bert_keras.tasks.span_qa.reader",
                     "bible_ner": "bert_keras.tasks.tagging.reader"}
