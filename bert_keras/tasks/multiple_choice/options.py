"""MultipleChoiceOptions: where a multiple-choice file holds its endings (the flags of
tools/finetune.py that only --task=multiple_choice reads; the context and the label take the
readers' --text_a_column / --text_a_field and --label_column / --label_field).

>>> MultipleChoiceOptions(ending_columns="ending0,ending1").ending_column_list()
['ending0', 'ending1']
>>> MultipleChoiceOptions(ending_columns="3")
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --ending_columns='3' names 1 column; a question needs at least 2 \
endings.
"""

import dataclasses

from bert_keras.configs import Config, check, option


@dataclasses.dataclass(frozen=True)
class MultipleChoiceOptions(Config):
    """The ending columns of CSV/TSV files and the choices field of JSON lines."""

    ending_columns: str = option(
        None, "multiple_choice: CSV/TSV columns (indices or header names, comma-separated) of "
        "the endings; default: the header's ending0, ending1, ... (SWAG's), or without a "
        "header every column but the context and the label.")
    choices_field: str = option("choices", "multiple_choice: JSONL field of the list of "
                                "endings.")

    def validate(self):
        if self.ending_columns is not None:
            count = len(self.ending_column_list())
            check(count >= 2, f"--ending_columns={self.ending_columns!r} names {count} column"
                  f"{'s' if count != 1 else ''}; a question needs at least 2 endings.")
        check(bool(self.choices_field), "--choices_field must name a JSONL field.")

    def ending_column_list(self):
        """--ending_columns as a list of names and indices (None: the reader's default)."""
        if self.ending_columns is None:
            return None
        return [int(c) if c.lstrip("+-").isdigit() else c
                for c in (part.strip() for part in self.ending_columns.split(",")) if c]
