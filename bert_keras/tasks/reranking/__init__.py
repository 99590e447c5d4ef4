"""Reranking (sentence-transformers' `CrossEncoder`; transformers' `*ForSequenceClassification`
with one label): a query and candidate documents in, a relevance score per document out.

`model.BertReranker` (the Keras task model), `pair_inputs` (pairs in `predict`, (queries,
positives, negatives) in `fit`), `featurizer` (each candidate packed as the pair (query,
document); training groups), `losses` (listwise, pointwise), `activations` (the score of a
logit; which one a CrossEncoder names), `reader` (JSON lines, TSV), `ranking_metrics`
(MRR@10, NDCG@10, Recall@k), `options` and `task.Reranking` (the serving function).
"""

from bert_keras.tasks.reranking.model import BertReranker
from bert_keras.tasks.reranking.task import Reranking

__all__ = ["BertReranker", "Reranking"]
