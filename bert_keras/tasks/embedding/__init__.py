"""Sentence embeddings: `model.BertEmbedder` (pooled, normalized vectors; fit on (anchors,
positives) with in-batch negatives), `pooling.SentencePooling`, and `task.Embedding` (the
export's serving function; trained in user code, not by tools/finetune.py).
"""

from bert_keras.tasks.embedding.model import BertEmbedder, MultipleNegativesRankingLoss
from bert_keras.tasks.embedding.pooling import POOLINGS, SentencePooling
from bert_keras.tasks.embedding.task import Embedding

__all__ = ["BertEmbedder", "Embedding", "MultipleNegativesRankingLoss", "POOLINGS",
           "SentencePooling"]
