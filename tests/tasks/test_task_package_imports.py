"""docs/architecture.md's layering of bert_keras/tasks/, checked on the source (imports inside
functions too): the shared base imports no task package but in registry.py and the public
faces that re-export names; a task package imports another only where its type is built on
that one's (BUILT_ON)."""

import ast
import pathlib

TASKS = pathlib.Path(__file__).resolve().parents[2] / "bert_keras" / "tasks"
PACKAGES = sorted(p.name for p in TASKS.iterdir() if (p / "__init__.py").exists())
# The shared modules that may import task packages: the registry imports them all; the public
# faces only re-export their names.
IMPORTS_PACKAGES = {"registry.py", "finetuning_data.py", "task_features.py"}
# (package, the package it is built on): a reranker is a one-logit BertClassifier with its head
# names; a bare encoder's export serves embeddings with the embedding type's options.
BUILT_ON = {("reranking", "classification"), ("encoder", "embedding")}


def _imported_packages(path):
    """The task packages that the module at `path` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):  # `from bert_keras.tasks import tagging` too
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["bert_keras", "tasks"] and len(parts) > 2 and parts[2] in PACKAGES:
                found.add(parts[2])
    return found


def test_the_shared_base_imports_no_task_package():
    offending = {path.name: _imported_packages(path) for path in TASKS.glob("*.py")
                 if path.name not in IMPORTS_PACKAGES}
    assert {name: found for name, found in offending.items() if found} == {}


def test_a_task_package_imports_another_only_where_it_is_built_on_it():
    edges = {(path.relative_to(TASKS).parts[0], other)
             for package in PACKAGES for path in (TASKS / package).rglob("*.py")
             for other in _imported_packages(path) if other != package}
    assert edges == BUILT_ON


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from bert_keras.tasks.tagging import model\n"
                      "from bert_keras.tasks import span_qa, task_io\n")
    assert _imported_packages(module) == {"tagging", "span_qa"}
