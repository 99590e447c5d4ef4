"""Questions, contexts and SQuAD answers in `fit` and `evaluate` of a span-QA model, and the
answers of its `answer` (transformers' question-answering pipeline, as a Keras method).

A context longer than the model's seq_length is cut into windows that start every
`DOC_STRIDE` tokens after the question (`featurizer.span_features`: the rows
`tools/finetune.py --task=span_qa` trains on); a window that does not hold the whole answer
is trained to point at [CLS] ("no answer"), as Google's run_squad.py does, and `answer`
takes the best span over an example's windows (`decoding`).

Answers are SQuAD's: one dict per question with "text" and "answer_start" (the character
offset in the context), each a value or a list of them, as Hugging Face datasets' squad
column holds them (the first answer trains); empty lists: no answer (SQuAD 2.0).

>>> answers = [{"text": ["Jesus"], "answer_start": [0]}, {"text": [], "answer_start": []}]
>>> is_answers(answers), is_answers({"start_positions": [1, 0]})
(True, False)
>>> examples = span_examples(["Who wept?", "Who ate?"], ["Jesus wept.", "Nobody."], answers, "QA")
>>> [(ex.answers, ex.is_impossible) for ex in examples]
[([('Jesus', 0)], False), ([], True)]
"""

import numbers

import numpy as np

from bert_keras.data.finetuning import batching
from bert_keras.tasks.span_qa.decoding import decode_feature_answers
from bert_keras.tasks.span_qa.featurizer import span_features
from bert_keras.tasks.span_qa.reader import SpanExample
from bert_keras.tasks.text_inputs import DEFAULT_BATCH_SIZE, text_column

# How a context is cut and answered here (`BertSpanQA.answer()`), and by an export of a model
# whose task directory does not say (`task.SpanQA.serving_options`): tools/finetune.py's
# defaults.
DOC_STRIDE = 128
MAX_QUERY_LENGTH = 64
MAX_ANSWER_LENGTH = 30
OUTPUTS = ("start_logits", "end_logits")
TARGETS = ("start_positions", "end_positions")


def is_answers(y):
    """Whether `y` is SQuAD answers (a list or 1-D array of dicts), not token positions."""
    if isinstance(y, np.ndarray) and y.dtype.kind == "O" and y.ndim == 1:
        y = list(y)
    return isinstance(y, (list, tuple)) and len(y) > 0 and all(isinstance(a, dict) for a in y)


def _strings(texts):
    """Texts ([batch] or a [batch, 1] column) as a list of str, checked by
    `text_inputs.text_column`."""
    return [text.decode("utf-8") for text in text_column(texts).numpy()]


def _first_answer(answer, context, owner, i):
    """(text, char_start) of answer dict `answer`, or None for no answer; ValueError unless
    it is SQuAD's and the text is at that offset of the context."""
    if not {"text", "answer_start"} <= set(answer):
        raise ValueError(f"{owner}: answer {i} is {answer!r}; an answer is a dict with 'text' "
                         "and 'answer_start' (the character offset in the context).")
    text, start = answer["text"], answer["answer_start"]
    if not isinstance(text, str):  # a list of answers: the first trains
        text, start = list(text), list(np.asarray(start).reshape(-1))
        if not text:
            return None
        text, start = text[0], start[0]
    if not isinstance(start, numbers.Integral) or not isinstance(text, str):
        raise ValueError(f"{owner}: answer {i} has text {text!r} at {start!r}; it takes a "
                         "string and a whole character offset.")
    found = context[int(start):int(start) + len(text)]
    if found != text:
        raise ValueError(f"{owner}: answer {i}, {text!r}, is not at character {start} of its "
                         f"context (found {found!r}).")
    return text, int(start)


def span_examples(questions, contexts, answers, owner):
    """SpanExamples of the questions and contexts (and answers); ValueError naming the first
    one that does not fit."""
    questions, contexts = _strings(questions), _strings(contexts)
    if answers is not None and len(answers) != len(questions):
        raise ValueError(f"{owner}: {len(questions)} question(s) but {len(answers)} answer(s).")
    if len(contexts) != len(questions):
        raise ValueError(f"{owner}: {len(questions)} question(s) but {len(contexts)} "
                         "context(s).")
    examples = []
    for i, (question, context) in enumerate(zip(questions, contexts)):
        answer = None if answers is None else _first_answer(answers[i], context, owner, i)
        examples.append(SpanExample(str(i), question, context, [answer] if answer else [],
                                    is_impossible=answers is not None and answer is None))
    return examples


def span_rows(preprocessor, x, answers, owner):
    """(`featurizer.span_features` rows, contexts) of text pair `x` = (questions, contexts) for a
    model's preprocessor (its tokenizer and seq_length)."""
    examples = span_examples(*x, answers, owner)
    seq_length = preprocessor.seq_length
    rows = span_features(examples, preprocessor.tokenizer, seq_length, DOC_STRIDE,
                         min(MAX_QUERY_LENGTH, seq_length // 2))
    return rows, [ex.context for ex in examples]


def span_dataset(rows, batch_size=None, shuffle=False):
    """Batches of `span_rows` windows for Keras: (inputs, {start_positions, end_positions}),
    each padded to its longest row, shuffled from length buckets every epoch when `shuffle`."""
    return batching.make_dataset(rows, batch_size or DEFAULT_BATCH_SIZE, label_keys=TARGETS,
                                 shuffle=shuffle)


def best_answers(model, rows, contexts, batch_size=None, **options):
    """`decode_answers` of the model's logits over the windows: one dict per question."""
    logits = batching.predict(model, rows, batch_size or DEFAULT_BATCH_SIZE,
                              token_outputs=OUTPUTS)
    return decode_feature_answers(logits, rows, contexts, **options)
