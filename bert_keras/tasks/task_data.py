"""The data role of a task type (see `base.Task`): the fine-tuning options only it reads, how
its files and TFDS rows become examples, its label map, and its features in length-bucketed
batches.

>>> from bert_keras.tasks.registry import get_task
>>> get_task("tagging").file_format_of("train.conll.gz")
'conll'
"""

import os

from bert_keras.configs import ConfigError
from bert_keras.data.finetuning import batching
from bert_keras.data.finetuning.label_map import LabelMap

DEFAULT_EXTENSION_FORMATS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl",
                             ".json": "squad_json"}


class TaskData:
    """What a task type reads and trains on; the defaults suit single texts or pairs with a
    label per example."""

    file_formats = ("tsv", "csv", "jsonl")  # readable training-file formats
    label_keys = "labels"  # target key(s) of the features (see batching.make_dataset)
    needs_label_map = True
    # A training batch's rows are independent, so the trainer may deal them out over replicas
    # (rows r, r + R, ... to replica r); False: fine-tuning on one replica only.
    splits_over_replicas = True
    # The options only this task type reads (a `configs.Config` of its package, whose fields
    # are flags of tools/finetune.py): FinetuneConfig.task_options. None: it has none.
    options_class = None
    # File extension (".gz" stripped) -> format, over the defaults of every task type.
    extension_formats = {}

    # -- options ------------------------------------------------------------------------------

    def check_config(self, config):
        """ConfigError for options of a fine-tuning run (FinetuneConfig) this task type
        cannot run with, beyond what its options check alone."""

    def file_format_of(self, path):
        """The file format of `path` from its extension; ConfigError if unknown."""
        name = os.fspath(path).lower().removesuffix(".gz")
        ext = os.path.splitext(name)[1]
        formats = {**DEFAULT_EXTENSION_FORMATS, **self.extension_formats}
        if ext not in formats:
            raise ConfigError(f"cannot infer the format of {path!r} (extension {ext!r}); "
                              "pass --format.")
        return formats[ext]

    # -- data ---------------------------------------------------------------------------------

    def read_files(self, paths, file_format, labeled=True, options=None, **reader_options):
        """Examples from files of one format (`reader_options`: columns, fields, header;
        `options`: the run's task options, None: their defaults)."""
        raise NotImplementedError(f"{self.name} does not read files")

    def is_labeled(self, examples):
        return all(ex.label is not None for ex in examples)

    def label_map(self, train_examples):
        """The LabelMap of the task, from its training examples (None if it has none)."""
        return LabelMap.from_examples(train_examples) if self.needs_label_map else None

    def text_fields(self, examples):
        """The serving_default input names for models trained on these examples."""
        return ["text"]

    def resolve_config(self, config, train):
        """The fine-tuning run's config (FinetuneConfig) with the options this task type
        decides from its training examples filled in (unchanged by default)."""
        return config

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, options=None):
        """Feature rows of `examples`; `options`: the run's task options (None: defaults)."""
        raise NotImplementedError

    def dataset(self, features, batch_size, *, shuffle=False, seed=None, pad_id=0):
        """Length-bucketed (inputs, targets) batches for model.fit."""
        return batching.make_dataset(features, batch_size, self.label_keys, shuffle=shuffle,
                                     seed=seed, pad_id=pad_id)

    # -- TFDS datasets (data.finetuning.tfds) ---------------------------------------------------

    def tfds_reader(self, dataset, *, text_a_field=None, text_b_field=None, label_field=None):
        """How this task type reads the rows of `dataset` (a `tfds.TfdsDataset`): an object
        with `example(row, where, split)` and `label_map()` (the ClassLabel order; None:
        from the examples) whose attributes name the features it reads; the fields: the
        --text_a_field / --text_b_field / --label_field flags (None: found from the
        features). InputError (one line) where the features do not make this task."""
        dataset.refuse(f"--task={self.name} does not read TFDS datasets.")

    def reads_tfds(self, dataset, label_field=None):
        """Whether `dataset`'s features make a task of this type (asked when --task is not
        given, in `registry.TFDS_INFERENCE`'s order)."""
        return False
