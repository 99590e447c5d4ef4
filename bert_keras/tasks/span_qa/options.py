"""SpanQAOptions: how a span-QA run cuts contexts into windows and picks answers;
SpanQAExportOptions: how its export does (the flags of tools/export.py that only span_qa reads).

>>> SpanQAOptions().doc_stride
128
>>> SpanQAOptions(doc_stride=0)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --doc_stride must be >= 1, got 0.
>>> SpanQAExportOptions().doc_stride is None, SpanQAExportOptions().max_windows
(True, 64)
"""

import dataclasses

from bert_keras.configs import Config, check, option
from bert_keras.tasks.task_serving import WindowOptions


@dataclasses.dataclass(frozen=True)
class SpanQAOptions(Config):
    """Google's run_squad.py windows and SQuAD's answer rules."""

    doc_stride: int = option(128, "span_qa: tokens between the starts of two context windows.")
    max_query_length: int = option(64, "span_qa: question tokens kept.")
    max_answer_length: int = option(30, "span_qa: longest answer in tokens.")
    n_best_size: int = option(20, "span_qa: candidate answers kept per question.")
    version_2_with_negative: bool = option(
        None, "span_qa: questions may be unanswerable (SQuAD 2.0); default: whether the "
        "training data has such questions.")
    null_score_diff_threshold: float = option(0.0, "span_qa v2: predict '' when null score - "
                                              "best span score exceeds this.")

    def validate(self):
        for name in ("doc_stride", "max_query_length", "max_answer_length", "n_best_size"):
            value = getattr(self, name)
            check(value >= 1, f"--{name} must be >= 1, got {value}.")

    def check_room(self, max_seq_length):
        """ConfigError unless a row of `max_seq_length` holds a question, 3 special tokens and
        context."""
        check(max_seq_length > self.max_query_length + 3,
              f"--max_seq_length={max_seq_length} leaves no room for the context after "
              f"--max_query_length={self.max_query_length}.")


@dataclasses.dataclass(frozen=True)
class SpanQAExportOptions(WindowOptions):
    """An export's windows and answers; unset, as the run that trained it (task.json's
    "decoding")."""

    max_answer_length: int = option(None, "Longest answer span in tokens; default: the run's "
                                    "--max_answer_length (task.json), else 30.",
                                    former_names=("max_answer_tokens",))
    doc_stride: int = option(None, "Tokens between the starts of two windows of a long "
                             "context; default: the run's --doc_stride (task.json), else 128.")

    def validate(self):
        super().validate()
        for name in ("max_answer_length", "doc_stride"):
            value = getattr(self, name)
            check(value is None or value >= 1, f"--{name} must be positive, got {value}.")
