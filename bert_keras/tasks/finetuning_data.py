"""Fine-tuning task readers: files -> Python lists of examples (labels to ids: `label_map`).

Readers only parse; tokenization and featurization live elsewhere. This module is the public
face `bk.finetuning_data`, nothing but names re-exported: the example types and the readers
of each format, which live in their task type's package (`tasks/classification/reader.py`,
`tasks/span_qa/reader.py`, `tasks/tagging/reader.py`, over the file helpers of
`data/finetuning/task_files.py`), and the bundled tasks (`data/finetuning/bundled.py`). Like
`registry.py` it imports task packages, so no package imports it. Three example types cover
these readers:

* `ClassificationExample(text_a, text_b, label)`: single sentences and pairs,
  single-label (str), multi-label (list of str) or regression (float) labels;
* `TaggingExample(words, tags)`: token classification (NER);
* `SpanExample(qid, question, context, answers, is_impossible)`: extractive QA,
  answers as (text, character start) pairs.

Every example carries `source` ("file:line"), so errors found later (e.g. an
unseen label in `LabelMap.encode`) name the row that caused them.

Formats: TSV/CSV (`read_tsv`, `read_csv`, header optional, columns by name or
index), JSON lines (`read_jsonl`), SQuAD JSON v1.1/v2.0 (`read_squad_json`),
SQuAD-style JSON lines (`read_squad_jsonl`), CoNLL (`read_conll`). Any file may be
gzip-compressed; `pattern` may be a glob or a list of globs; paths go through
`tf.io.gfile`, so gs:// works too. The tasks bundled in bert_keras/assets load with
`load_bundled_task`; TFDS tasks with `bert_keras.data.finetuning.tfds.load_tfds_task`.

Example:
    >>> from bert_keras import finetuning_data as fd
    >>> train = fd.load_bundled_task("bible_paraphrase", "train")
    >>> train[0].label, train[0].text_b is not None
    ('1', True)
    >>> from bert_keras.data.finetuning.label_map import LabelMap
    >>> label_map = LabelMap.from_examples(train)
    >>> label_map.labels
    ['0', '1']
    >>> label_map.encode(train[:3]).tolist()
    [1, 0, 1]
"""

from bert_keras.data.finetuning.bundled import BUNDLED_TASKS, bundled_task_path, load_bundled_task
from bert_keras.data.finetuning.task_files import read_text
from bert_keras.files import expand_patterns
from bert_keras.tasks.classification.reader import (
    ClassificationExample,
    read_csv,
    read_delimited,
    read_jsonl,
    read_tsv,
)
from bert_keras.tasks.span_qa.reader import SpanExample, read_squad_json, read_squad_jsonl
from bert_keras.tasks.tagging.reader import TaggingExample, read_conll

__all__ = [
    "ClassificationExample",
    "TaggingExample",
    "SpanExample",
    "expand_patterns",
    "read_text",
    "read_delimited",
    "read_tsv",
    "read_csv",
    "read_jsonl",
    "read_squad_jsonl",
    "read_squad_json",
    "read_conll",
    "BUNDLED_TASKS",
    "bundled_task_path",
    "load_bundled_task",
]
