"""The commands behind docs/retrieval.md and docs/embeddings.md' Matryoshka table
(python -m benchmarks.retrieval, python -m benchmarks.retrieval_matryoshka), end to end on a
tiny encoder and a few queries, so that they cannot rot; the figures are not re-measured."""

import doctest

import numpy as np

import bert_keras as bk
from benchmarks import retrieval, retrieval_matryoshka, retrieval_task


def test_the_search_and_its_metrics():
    assert doctest.testmod(retrieval_task).failed == 0


def test_retrieve_then_rerank_from_the_exports(tiny_encoder_dir, tmp_path):
    reranker = bk.BertReranker.from_pretrained(str(tiny_encoder_dir), seq_length=32)
    bk.save_task(str(tmp_path / "reranker"), reranker, reranker.preprocessor.tokenizer,
                 "reranking", 32, text_fields=("query", "documents"))
    rows, search = retrieval.run(tiny_encoder_dir, tmp_path / "reranker", str(tmp_path),
                                 rerank_ks=(3,), max_queries=3, seq_length=32)

    assert [row["name"] for row in rows] == ["retrieve", "retrieve, rerank top 3"]
    assert len(rows[1]["rerank_ms"]) == len(rows[0]["retrieve_ms"]) == 3
    # The served embedder ranks the corpus as the embedder in Python does.
    embedder = bk.BertEmbedder.from_pretrained(str(tiny_encoder_dir), pooling="mean",
                                               normalize=True, seq_length=32)
    scores = embedder.predict(search.queries, verbose=0) @ \
        embedder.predict(search.corpus, verbose=0).T
    orders = [np.argsort(-row, kind="stable") for row in scores]
    expected = retrieval_task.search_metrics(orders, search.relevant, (1, 3, 5, 10))
    assert rows[0]["metrics"] == expected
    # Reranking reorders the top 3 only: what is in it stays.
    assert rows[1]["metrics"]["recall@3"] == rows[0]["metrics"]["recall@3"]
    assert "| retrieve, rerank top 3 |" in retrieval.table(rows, (3,))


def test_matryoshka_recalls_per_dimension(tiny_encoder_dir):
    said = []
    rows, _ = retrieval_matryoshka.run(tiny_encoder_dir, [32, 8], train_queries=8, batch_size=4,
                                       seq_length=32, max_queries=3, say=said.append)

    assert [name for name, _ in rows] == ["as shipped", "fine-tuned",
                                          "fine-tuned, matryoshka_dims=[32, 8]"]
    for _, results in rows:
        assert sorted(results) == [8, 32]
        assert all(0 <= m["recall@1"] <= m["recall@10"] <= 1 for m in results.values())
    assert sum(", loss " in line for line in said) == 2  # both fits ran
    assert "| as shipped |" in retrieval_matryoshka.table(rows, [32, 8])
