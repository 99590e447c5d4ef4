"""Extractive question answering (SQuAD v1.1 / v2.0): the answer is a span of the context.

`model.BertSpanQA` (the Keras task model, with `answer()`), `answer_inputs` (questions,
contexts and SQuAD answers in `fit` / `answer`: the windows `task` featurizes for
tools/finetune.py too), `windows` (the served model's context windows, in graph ops) and
`task.SpanQA` (SQuAD files, EM / F1, the serving function).
"""

from bert_keras.tasks.span_qa.model import BertSpanQA
from bert_keras.tasks.span_qa.task import SpanQA

__all__ = ["BertSpanQA", "SpanQA"]
