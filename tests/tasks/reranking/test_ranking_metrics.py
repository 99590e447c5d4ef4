"""The reranking metrics on cases computed by hand with the TREC definitions (binary gains,
discount 1 / log2(rank + 1), cut at k)."""

import math

import pytest

from bert_keras.tasks.reranking import ranking_metrics

# Ranked: 1 (not relevant), 2 (relevant), 0, 3 (relevant).
QUERY_A = ([0.2, 0.9, 0.5, 0.1], [0, 0, 1, 1])
# Its only relevant candidate ranks 11th: past every cutoff.
QUERY_B = ([1.0 - i / 20 for i in range(12)], [0] * 10 + [1, 0])


def test_hand_computed_cases():
    scores, relevance = QUERY_A
    assert ranking_metrics.reciprocal_rank(scores, relevance, 10) == 0.5
    assert ranking_metrics.recall(scores, relevance, 1) == 0.0
    assert ranking_metrics.recall(scores, relevance, 2) == 0.5
    assert ranking_metrics.recall(scores, relevance, 5) == 1.0
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3)
    assert ranking_metrics.ndcg(scores, relevance, 10) == pytest.approx(dcg / ideal)
    assert ranking_metrics.ndcg(scores, relevance, 2) == pytest.approx(
        (1 / math.log2(3)) / ideal)
    scores, relevance = QUERY_B
    assert ranking_metrics.reciprocal_rank(scores, relevance, 10) == 0.0
    assert ranking_metrics.reciprocal_rank(scores, relevance, 11) == pytest.approx(1 / 11)
    assert ranking_metrics.ndcg(scores, relevance, 10) == 0.0
    assert ranking_metrics.recall(scores, relevance, 10) == 0.0


def test_ties_keep_the_candidates_order_and_the_mean_is_over_queries():
    assert ranking_metrics.reciprocal_rank([0.5, 0.5], [0, 1]) == 0.5
    assert ranking_metrics.reciprocal_rank([0.5, 0.5], [1, 0]) == 1.0
    result = ranking_metrics.ranking_metrics([QUERY_A[0], QUERY_B[0]], [QUERY_A[1], QUERY_B[1]])
    dcg, ideal = 1 / math.log2(3) + 1 / math.log2(5), 1 + 1 / math.log2(3)
    assert result == pytest.approx({"mrr@10": 0.25, "ndcg@10": dcg / ideal / 2,
                                    "recall@1": 0.0, "recall@5": 0.5, "recall@10": 0.5})
