"""RerankingOptions: the flags of tools/finetune.py that only --task=reranking reads;
RerankingExportOptions: those of tools/export.py that only a reranker's export reads.

>>> RerankingOptions().ranking_loss
'listwise'
>>> RerankingOptions(ranking_loss="pairwise")
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --ranking_loss='pairwise' is not one of ('listwise', 'pointwise').
>>> RerankingExportOptions().max_pairs
1024
"""

import dataclasses

from bert_keras.configs import Config, check, option

RANKING_LOSSES = ("listwise", "pointwise")


@dataclasses.dataclass(frozen=True)
class RerankingOptions(Config):
    """How a reranker trains on (query, positives, negatives) examples."""

    ranking_loss: str = option(
        "listwise", "reranking: listwise (softmax cross entropy over a positive and its "
        "negatives: sentence-transformers' MultipleNegativesRanking / ListNet family) or "
        "pointwise (binary cross entropy of each pair's logit).", choices=RANKING_LOSSES)
    max_negatives: int = option(7, "reranking: most negatives of a query trained with each of "
                                "its positives (the first ones of the line).")
    in_batch_negatives: bool = option(False, "reranking: also train each query against the "
                                      "positives of the other queries of its batch.")

    def validate(self):
        check(self.ranking_loss in RANKING_LOSSES,
              f"--ranking_loss={self.ranking_loss!r} is not one of {RANKING_LOSSES}.")
        check(self.max_negatives >= 0,
              f"--max_negatives must be 0 or more, got {self.max_negatives}.")


@dataclasses.dataclass(frozen=True)
class RerankingExportOptions(Config):
    """A reranker's export: the bound on a request's cost."""

    max_pairs: int = option(1024, "Most (query, document) pairs one request may hold (batch x "
                            "documents per query); a larger one is refused (InvalidArgument).")

    def validate(self):
        check(self.max_pairs >= 1, f"--max_pairs must be positive, got {self.max_pairs}.")
