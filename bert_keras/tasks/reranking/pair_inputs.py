"""A reranker's raw inputs in user code: `predict((queries, documents))` (N strings each, one
pair per row) and `fit((queries, positives, negatives))` (N queries; N positives, a string or
a list of strings each; N lists of negatives).

>>> is_triples((["q"], ["p"], [["n"]])), is_triples((["q"], ["d"]))
(True, False)
>>> triple_examples((["Who wept?"], ["Jesus wept."], [["Amen."]]), "M")[0].candidates
['Jesus wept.', 'Amen.']
"""

import numpy as np
import tensorflow as tf

from bert_keras.tasks import text_inputs
from bert_keras.tasks.reranking.reader import checked_example


def _strings(values):
    if isinstance(values, tf.Tensor):
        values = values.numpy()
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if isinstance(values, (str, bytes)):
        return values.decode("utf-8") if isinstance(values, bytes) else values
    if isinstance(values, (list, tuple)):
        return [_strings(v) for v in values]
    return values


def is_triples(x):
    """Whether `x` is (queries, positives, negatives)."""
    return (isinstance(x, tuple) and len(x) == 3
            and all(isinstance(part, (list, tuple, np.ndarray, tf.Tensor)) for part in x))


def triple_examples(x, owner):
    """RerankingExamples of (queries, positives, negatives); ValueError naming the first row
    that does not fit."""
    queries, positives, negatives = (_strings(part) for part in x)
    if not (len(queries) == len(positives) == len(negatives)):
        raise ValueError(f"{owner}: {len(queries)} queries, {len(positives)} positives and "
                         f"{len(negatives)} rows of negatives; give one of each per query.")
    if not queries:
        raise ValueError(f"{owner}: no queries: x is empty.")
    return [checked_example(q, [p] if isinstance(p, str) else p, n, f"{owner}: row {i}")
            for i, (q, p, n) in enumerate(zip(queries, positives, negatives))]


def checked_pairs(x, owner):
    """(queries, documents): two lists of N strings; ValueError for rows that differ in
    number, documents given as rows of several, or an empty query."""
    queries, documents = (_strings(part) for part in x)
    if isinstance(queries, str) or isinstance(documents, str):
        raise ValueError(f"{owner}: give (queries, documents) as two lists of strings.")
    if len(queries) != len(documents):
        raise ValueError(f"{owner}: {len(queries)} queries but {len(documents)} documents; give "
                         "one document per query (rank(query, documents) ranks a list).")
    for i, (query, document) in enumerate(zip(queries, documents)):
        if not isinstance(document, str):
            raise ValueError(f"{owner}: document {i} is {document!r}, not a string; documents "
                             "are one string per query.")
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"{owner}: query {i} is {query!r}; a query must be a non-empty "
                             "string.")
    if not queries:
        raise ValueError(f"{owner}: no pairs: x is empty.")
    return queries, documents


def is_pairs(x):
    """Whether `x` is (queries, documents): two lists (arrays, tensors) of texts, or what is
    meant to be (refused by `checked_pairs` where they do not fit)."""
    return (isinstance(x, tuple) and len(x) == 2
            and all(isinstance(part, (list, np.ndarray, tf.Tensor)) for part in x)
            and (text_inputs.is_text(x) or text_inputs.is_text(x[0])))
