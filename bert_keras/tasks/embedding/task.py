"""Sentence embeddings in an export: text in, one pooled (and normalized) vector out."""

import tensorflow as tf

from bert_keras.tasks.base import Task
from bert_keras.tasks.embedding.model import BertEmbedder
from bert_keras.tasks.raw_examples import PAIRED, TEXTS, RawExamples


class Embedding(Task):
    """Serves `text` -> embeddings float32 [B, H]: `BertEmbedder`'s pooling (mean, cls or
    max over the real tokens, cut to its first truncate_dim values if set, L2-normalized with
    normalize), computed in the graph.

    >>> from bert_keras.tasks.registry import get_task
    >>> get_task("embedding").finetunable
    False
    """

    name = "embedding"
    output_docs = {"embeddings": "sentence embedding: the pooled sequence output (mean, cls or "
                                 "max over the real tokens; its first truncate_dim values if "
                                 "the metadata sets it; L2-normalized if the metadata says "
                                 "normalize)"}
    finetunable = False  # trained in user code: BertEmbedder.fit((anchors, positives))
    needs_label_map = False

    def builds(self, model):
        return isinstance(model, BertEmbedder)

    def raw_examples(self):  # trained on (anchor, positive) pairs, without labels
        return RawExamples(BertEmbedder, dict(pooling="mean"), fit=((TEXTS, PAIRED), None),
                           predict=TEXTS)

    def export_metadata(self, fns):
        return {"pooling": fns.model.pooling, "normalize": fns.model.normalize,
                "truncate_dim": fns.model.truncate_dim}

    def serve(self, fns, texts):
        inputs, _ = self.preprocess(fns, texts)
        return {"embeddings": tf.cast(fns.run(inputs), tf.float32)}  # (B, H)
