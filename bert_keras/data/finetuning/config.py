"""FinetuneData: where a fine-tuning run's examples come from and how its files are read.

>>> data = FinetuneData(train_file="bert_keras/assets/bible_paraphrase.train.tsv.gz",
...                     text_b_column="2")
>>> data.reader_options()["text_b_column"]
2
>>> FinetuneData(max_train_examples=0)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --max_train_examples must be >= 1 when given, got 0.
"""

import dataclasses

from bert_keras.configs import Config, ConfigError, check, option, section
from bert_keras.data.tfds_source import TfdsSource
from bert_keras.files import expand_patterns

FORMATS = ("auto", "tsv", "csv", "jsonl", "squad_json", "squad_jsonl", "conll")
FILE_OPTIONS = ("train_file", "eval_file", "test_file")


def _column(value):
    """A TSV/CSV column flag: an index ("1", "-1") or a header name."""
    if value is None:
        return None
    return int(value) if str(value).lstrip("+-").isdigit() else value


@dataclasses.dataclass(frozen=True)
class FinetuneData(Config):
    """Files (one format, columns or fields) or a TFDS dataset, and how many examples to use."""

    train_file: str = option(None, "Training data: a file or glob (comma-separated list ok).")
    eval_file: str = option(None, "Evaluation data, scored after every epoch.")
    test_file: str = option(None, "Data to predict with the best model (scored if labeled).")
    format: str = option("auto", "File format; auto: from the extension (.gz stripped).",
                         choices=FORMATS)
    header: bool = option(False, "TSV/CSV: the first row of each file names the columns.")
    text_a_column: str | int = option("1", "TSV/CSV column (index or header name) of the text.")
    text_b_column: str | int = option(None, "TSV/CSV column of the second text of a pair.")
    label_column: str | int = option("0", "TSV/CSV column of the label.")
    text_a_field: str = option("text", "JSONL field (or TFDS feature) of the text.")
    text_b_field: str = option(None, "JSONL field (or TFDS feature) of the second text of a "
                               "pair.")
    label_field: str = option("label", "JSONL field (or TFDS feature) of the label.")
    label_delimiter: str = option(",", "multi_label: separator of the labels of a row.")
    test_unlabeled: bool = option(False, "--test_file has no labels (classification, tagging).")
    tfds: TfdsSource = section(TfdsSource)
    tfds_train_split: str = option("train", "TFDS training split.")
    tfds_eval_split: str = option(None, "TFDS eval split (default: validation, "
                                  "validation_matched for mnli).")
    tfds_test_split: str = option(None, "TFDS split to predict with the best model.")
    max_train_examples: int = option(None, "Use only the first N training examples.")
    max_eval_examples: int = option(None, "Use only the first N eval (and test) examples.")

    def validate(self):
        check(self.format in FORMATS, f"--format={self.format!r} is not one of {FORMATS}.")
        for name in ("max_train_examples", "max_eval_examples"):  # 0 would silently mean all
            value = getattr(self, name)
            check(value is None or value >= 1, f"--{name} must be >= 1 when given, got {value}.")
        given = " and ".join(f"--{name}" for name in FILE_OPTIONS if getattr(self, name))
        check(not (self.tfds.tfds_name and given),
              "give either --tfds_name or --train_file/--eval_file/--test_file, not both: got "
              f"--tfds_name and {given} (an empty value unsets a flagfile's, e.g. --eval_file=).")
        for name in FILE_OPTIONS:
            self.files(name)

    @property
    def has_pairs(self):
        """Whether the examples are pairs of texts (a second text column or field)."""
        return bool(self.text_b_column or self.text_b_field)

    def files(self, name):
        """The files of --train_file / --eval_file / --test_file ([] when unset)."""
        pattern = getattr(self, name)
        if not pattern:
            return []
        try:
            return expand_patterns(pattern)
        except FileNotFoundError as e:
            raise ConfigError(f"--{name}={pattern!r}: {e}") from None

    def reader_options(self):
        """The column / field options of the TSV, CSV and JSONL readers."""
        return dict(header=self.header, text_a_column=_column(self.text_a_column),
                    text_b_column=_column(self.text_b_column),
                    label_column=_column(self.label_column), text_a_field=self.text_a_field,
                    text_b_field=self.text_b_field, label_field=self.label_field,
                    label_delimiter=self.label_delimiter)

    def glue_task(self):
        """"glue/mrpc" for --tfds_name=glue/mrpc(:version), else None."""
        name = self.tfds.tfds_name
        return name.split(":")[0] if name and name.startswith("glue/") else None
