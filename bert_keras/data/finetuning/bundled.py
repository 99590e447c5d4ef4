"""The fine-tuning tasks bundled with bert_keras: their files and how to load them.

The files live in bert_keras/assets (see its README.md); `load_bundled_task(name, split)`
reads one as its task type reads files of its format (`Task.read_files`, through the task
types the registry hands down: `task_types`).
"""

from __future__ import annotations

from bert_keras import assets
from bert_keras.data.finetuning import task_types

# name -> (file, task type, file format, reader options)
BUNDLED_TASKS = {
    "bible_paraphrase": ("bible_paraphrase.{split}.tsv.gz", "classification", "tsv",
                         {"text_a_column": 1, "text_b_column": 2, "label_column": 0}),
    "wordnet_topics": ("wordnet_topics.{split}.tsv.gz", "classification", "tsv",
                       {"text_a_column": 1, "label_column": 0}),
    "wordnet_qa": ("wordnet_qa.{split}.jsonl.gz", "span_qa", "squad_jsonl", {}),
    "bible_ner": ("bible_ner.{split}.conll.gz", "tagging", "conll", {}),
}


def bundled_task_path(name: str, split: str) -> str:
    """Path of a bundled task file, e.g. bundled_task_path("bible_ner", "dev")."""
    if name not in BUNDLED_TASKS:
        raise ValueError(f"unknown bundled task {name!r}; known: {sorted(BUNDLED_TASKS)}")
    if split not in ("train", "dev", "test"):
        raise ValueError(f"split must be 'train', 'dev' or 'test', got {split!r}")
    return assets.path(BUNDLED_TASKS[name][0].format(split=split))


def load_bundled_task(name: str, split: str) -> list:
    """Examples of a task bundled with bert_keras.

    bible_paraphrase (sentence pairs, labels "0"/"1"), wordnet_topics (45
    classes), wordnet_qa (SpanExample), bible_ner (TaggingExample, O/B-PER/B-LOC).

    >>> load_bundled_task("bible_ner", "dev")[0].tags[:3]
    ['O', 'O', 'O']
    """
    path = bundled_task_path(name, split)
    _, task, file_format, options = BUNDLED_TASKS[name]
    return task_types.get_task(task).read_files([path], file_format, **options)


__all__ = [
    "BUNDLED_TASKS",
    "bundled_task_path",
    "load_bundled_task",
]
