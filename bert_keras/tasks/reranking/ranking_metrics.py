"""Ranking metrics of one query's candidates, as TREC's `trec_eval` (and `ir_measures`) define
them for binary relevance, averaged over the queries: the reciprocal rank of the first
relevant candidate within the top k (RR@k, whose mean is MRR@k), NDCG@k with gain = relevance
and discount 1 / log2(rank + 1) over the ideal ordering of the query's relevant candidates,
and Recall@k, the share of the query's relevant candidates in its top k.

Candidates are ranked by score, best first; equal scores keep the candidates' order (the
stable sort of `CrossEncoder.rank`).

>>> reciprocal_rank([0.1, 0.9, 0.5], [0, 0, 1], k=10)  # the relevant one ranks 2nd
0.5
>>> recall([0.1, 0.9, 0.5], [1, 0, 1], k=2)
0.5
>>> round(ndcg([0.1, 0.9, 0.5], [1, 0, 1], k=10), 4)  # (1/2 + 1/log2(4)) / (1 + 1/log2(3))
0.6934
"""

import numpy as np

# The metrics that tools/finetune.py reports, name -> (function, k); "mrr@10" is the main one.
CUTOFFS = {"mrr@10": ("reciprocal_rank", 10), "ndcg@10": ("ndcg", 10),
           "recall@1": ("recall", 1), "recall@5": ("recall", 5), "recall@10": ("recall", 10)}


def ranking(scores):
    """Candidate indices, best score first, ties in the candidates' order."""
    return np.argsort(-np.asarray(scores, np.float64), kind="stable")


def _ranked_relevance(scores, relevance):
    return (np.asarray(relevance) > 0)[ranking(scores)]


def reciprocal_rank(scores, relevance, k=10):
    """1 / the rank of the first relevant candidate in the top k; 0 if none is."""
    hits = np.flatnonzero(_ranked_relevance(scores, relevance)[:k])
    return float(1.0 / (hits[0] + 1)) if len(hits) else 0.0


def ndcg(scores, relevance, k=10):
    """DCG@k / the ideal DCG@k (binary gains); 0 for a query without relevant candidates."""
    ranked = _ranked_relevance(scores, relevance).astype(np.float64)
    discounts = 1.0 / np.log2(np.arange(2, len(ranked) + 2))
    ideal = np.sort(ranked)[::-1]
    best = float((ideal[:k] * discounts[:k]).sum())
    return float((ranked[:k] * discounts[:k]).sum()) / best if best else 0.0


def recall(scores, relevance, k=10):
    """The share of the relevant candidates ranked in the top k; 0 when there are none."""
    ranked = _ranked_relevance(scores, relevance)
    total = int(ranked.sum())
    return float(ranked[:k].sum()) / total if total else 0.0


def ranking_metrics(scores, relevance):
    """{"mrr@10", "ndcg@10", "recall@1", "recall@5", "recall@10"}: each the mean over the
    queries; `scores`, `relevance`: one sequence per query, its candidates' scores and 0/1
    relevance."""
    functions = {"reciprocal_rank": reciprocal_rank, "ndcg": ndcg, "recall": recall}
    return {name: float(np.mean([functions[fn](s, r, k) for s, r in zip(scores, relevance)]))
            for name, (fn, k) in CUTOFFS.items()}
