"""The reranking task type (`--task=reranking`): a query and candidate documents in, a
relevance score per document and their order out (sentence-transformers' `CrossEncoder`).

Shape legend (serving functions): B queries, K documents of a query, R the real (non-empty)
documents of a request, T packed sequence length.
"""

import numpy as np
import tensorflow as tf
from absl import logging

from bert_keras.configs import check
from bert_keras.errors import InputError
from bert_keras.models import head_checkpoints
from bert_keras.tasks.base import Task
from bert_keras.tasks.classification import head_checkpoint, problem_types
from bert_keras.tasks.input_lines import InputLine
from bert_keras.tasks.raw_examples import PAIRED, TEXTS, RawExamples
from bert_keras.tasks.reranking import activations, featurizer, ranking_metrics, reader
from bert_keras.tasks.reranking.model import BertReranker
from bert_keras.tasks.reranking.options import RerankingExportOptions, RerankingOptions
from bert_keras.tasks.task_serving import listed

WARMUP_PAIRS = 9  # the largest warmup request: 3 queries of 3 documents
RANDOM_ORDERS = 20  # shuffles averaged by the random-ranking baseline


class Reranking(Task):
    """Reads JSON lines / TSV of (query, positives, negatives), trains `BertReranker`, scores
    MRR@10 (main), NDCG@10 and Recall@1/5/10 over each query's candidates.

    Serving: `serving_default(query [B], documents [B, K]) -> scores float32 [B, K] (the
    activation applied; -inf for "" documents, the padding of a shorter list), order int32
    [B, K] (document indices, best first, padding last)`, any K >= 1, at most --max_pairs
    B*K pairs a request.

    >>> from bert_keras.tasks.registry import get_task
    >>> get_task("reranking").main_metric
    'mrr@10'
    """

    name = "reranking"
    output_docs = {"scores": "relevance of each document to its query (the model's activation "
                             "of its logit), -inf for a '' document",
                   "order": "document indices, the best-scored first"}
    main_metric = "mrr@10"
    needs_label_map = False
    file_formats = ("tsv", "jsonl")
    transformers_head = "ForSequenceClassification"
    options_class = RerankingOptions
    serving_ranks = {"documents": 2}  # [B, K]
    export_options_class = RerankingExportOptions
    # A batch is B query groups flattened to B*K rows beside relevance (B, K): dealing its
    # rows out over replicas would tear the groups apart.
    splits_over_replicas = False
    input_line_help = "query<TAB>document<TAB>document... (1 or more documents)"

    # -- options ------------------------------------------------------------------------------

    def check_config(self, config):
        check(not config.data.tfds.tfds_name, f"--task={self.name} reads JSON lines or TSV "
              f"files (--train_file), not --tfds_name={config.data.tfds.tfds_name}.")
        check(config.max_seq_length >= 5, f"--max_seq_length={config.max_seq_length} leaves no "
              "room for a query and a document: at least 5.")

    # -- data ---------------------------------------------------------------------------------

    def read_files(self, paths, file_format, labeled=True, options=None, **reader_options):
        """Examples of JSON lines ({"query", "positives", "negatives"}) or TSV
        (query<TAB>positive<TAB>negative...) files."""
        if file_format == "tsv":
            return reader.read_reranking_tsv(paths)
        if file_format == "jsonl":
            return reader.read_reranking_jsonl(paths)
        raise InputError(f"--task={self.name} reads JSON lines or TSV files, not "
                         f"--format={file_format} ({paths[0]}).")

    def text_fields(self, examples):
        return ["query", "documents"]

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, options=None,
                  **unused):
        """A feature per query (its candidates' rows), and how `options` group them for
        training (`dataset`)."""
        options = options or RerankingOptions()
        features = featurizer.pair_features(examples, tokenizer, max_seq_length)
        features["max_negatives"] = np.array(options.max_negatives)
        features["in_batch_negatives"] = np.array(options.in_batch_negatives)
        return features

    def dataset(self, features, batch_size, *, shuffle=False, seed=None, pad_id=0):
        return featurizer.group_dataset(
            features, batch_size, max_negatives=int(features["max_negatives"]),
            in_batch_negatives=bool(features["in_batch_negatives"]), shuffle=shuffle,
            seed=seed, pad_id=pad_id)

    # -- model and evaluation -----------------------------------------------------------------

    def reads_transformers(self, architecture, config):
        """A `*ForSequenceClassification` of one label that names no problem type (a
        sentence-transformers CrossEncoder; transformers' trainer writes "regression" for a
        regression head), or one whose config.json names CrossEncoder's activation."""
        if not super().reads_transformers(architecture, config):
            return False
        if config.get("sentence_transformers") or config.get(
                "sbert_ce_default_activation_function"):
            return True
        return (not config.get("problem_type")
                and problem_types.from_transformers(config) is problem_types.REGRESSION)

    def load_transformers_head(self, model, path):
        BertReranker.load_transformers_head(model, path)

    def builds(self, model):
        return isinstance(model, BertReranker)

    def raw_examples(self):  # fit: (queries, positives, negatives); predict: (queries, documents)
        return RawExamples(BertReranker, {}, fit=((TEXTS, PAIRED, [PAIRED[::-1], ["Amen."]]), None),
                           predict=(TEXTS * 2, PAIRED + PAIRED[::-1]))

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None, options=None):
        """BertReranker with the classification head of the checkpoint's family (its weights
        when it is a fine-tuned one-label classifier) and its CrossEncoder activation."""
        options = options or RerankingOptions()
        model = BertReranker(
            encoder, dropout=dropout,  # the family's head (and ModernBERT's pooling)
            **(head_checkpoint.head_arguments(checkpoint) if checkpoint else {}),
            activation=(activations.checkpoint_activation(checkpoint) if checkpoint
                        else activations.DEFAULT_ACTIVATION),
            ranking_loss=options.ranking_loss, max_negatives=options.max_negatives,
            in_batch_negatives=options.in_batch_negatives)
        if checkpoint and head_checkpoints.try_load_head(self.load_transformers_head, model,
                                                         checkpoint):
            logging.info("Loaded the reranking head of %s", checkpoint)
        return model

    def predict(self, model, examples, features, label_map, config):
        """(a row per query: its candidates, their relevance, scores and ranking; the logits
        of each query's candidates)."""
        logits = featurizer.candidate_logits(model, features, config.eval_batch_size)
        rows = []
        for ex, row_logits in zip(examples, logits):
            scores = activations.activate(row_logits, model.activation)
            rows.append(dict(query=ex.query, documents=ex.candidates, relevance=ex.relevance,
                             scores=[round(float(s), 6) for s in scores],
                             ranking=ranking_metrics.ranking(row_logits).tolist()))
        return rows, logits

    def score(self, examples, predicted, label_map, glue_task=None):
        return ranking_metrics.ranking_metrics(predicted, [ex.relevance for ex in examples])

    def baselines(self, train, examples, label_map):
        """The metrics of candidates ranked at random (the mean of seeded shuffles)."""
        rng = np.random.default_rng(0)
        runs = [ranking_metrics.ranking_metrics(
            [rng.random(len(ex.candidates)) for ex in examples],
            [ex.relevance for ex in examples]) for _ in range(RANDOM_ORDERS)]
        return {f"random_{name}": float(np.mean([r[name] for r in runs])) for name in runs[0]}

    # -- serving ------------------------------------------------------------------------------

    def serving_text_fields(self, info):
        return ("query", "documents")

    def serving_labels(self, model, labels):
        return None

    def input_line(self, signature, inputs):
        """The query, then each document, tab-separated; the shorter lists of a batch padded
        with "" (documents the export does not score)."""
        return InputLine(inputs, padding="")

    def check_serving(self, fns):
        if max_pairs(fns) < WARMUP_PAIRS:
            raise InputError(f"--max_pairs={max_pairs(fns)} leaves no room for the export's "
                             f"warmup requests ({WARMUP_PAIRS} pairs): at least {WARMUP_PAIRS}.")

    def export_metadata(self, fns):
        return {"max_pairs": max_pairs(fns), "activation": fns.model.activation}

    def warmup_texts(self, fields):
        return {"query": "query", "documents": "choices"}

    def warmup_longest(self, fns, field, text):
        if field == "documents":  # a row of documents, each longer than a packed row
            return [" ".join([document or "document"] * fns.seq_length) for document in text]
        return super().warmup_longest(fns, field, text)

    def _pairs(self, fns, query, documents):
        """The flat (query, document) pairs of a request, [B*K] each, after its checks."""
        batch, k = tf.shape(documents)[0], tf.shape(documents)[1]
        limit = max_pairs(fns)
        checks = [
            tf.debugging.Assert(tf.equal(tf.shape(query)[0], batch), [
                "query and documents must have one row per query; got shapes",
                tf.shape(query), tf.shape(documents)]),
            tf.debugging.Assert(tf.logical_or(tf.equal(batch, 0), k >= 1), [
                "documents must hold at least 1 document per query [batch, K >= 1]; got shape",
                tf.shape(documents)]),
            tf.debugging.Assert(tf.reduce_all(tf.strings.length(tf.strings.strip(query)) > 0), [
                "every query must be a non-empty string"]),
            tf.debugging.Assert(batch * k <= limit, [
                f"a request may hold at most --max_pairs={limit} (query, document) pairs "
                "(batch x K); got shape", tf.shape(documents)]),
        ]
        with tf.control_dependencies(checks):
            queries = tf.reshape(tf.tile(query[:, None], [1, k]), [-1])  # [B*K]
            flat = tf.reshape(documents, [-1])  # [B*K]
        return queries, flat

    def preprocess(self, fns, texts):
        """(query [B], documents [B, K]) -> (the three int32 [B*K, T] rows, one per pair;
        kept segment lengths)."""
        queries, flat = self._pairs(fns, *texts)
        return fns.pack([fns.tokenizer.tokenize(queries), fns.tokenizer.tokenize(flat)])

    def serve(self, fns, texts):
        query, documents = texts
        queries, flat = self._pairs(fns, query, documents)
        real = tf.where(tf.not_equal(flat, ""))  # (R, 1): "" documents are not scored
        inputs, _ = fns.pack([fns.tokenizer.tokenize(tf.gather_nd(queries, real)),
                              fns.tokenizer.tokenize(tf.gather_nd(flat, real))])
        logits = tf.cast(fns.run(inputs), tf.float32)[:, 0]  # (R,)
        scores = activations.activate(logits, fns.model.activation)
        padding = tf.fill(tf.shape(flat), float("-inf"))
        scores = tf.reshape(tf.tensor_scatter_nd_update(padding, real, scores),
                            tf.shape(documents))  # (B, K)
        order = tf.argsort(scores, axis=-1, direction="DESCENDING", stable=True)
        return {"scores": scores, "order": tf.cast(order, tf.int32)}

    def prediction_rows(self, outputs):
        """Each query's own documents: scores None and no place in the order for the ""
        ones, the trailing ones (a shorter list's padding) left out."""
        rows = []
        for scores, order in zip(outputs["scores"], outputs["order"]):
            real = np.isfinite(scores)
            own = int(np.flatnonzero(real)[-1]) + 1 if real.any() else 0
            rows.append({"order": [int(i) for i in order if real[i]],
                         "scores": [listed(s) if ok else None
                                    for s, ok in zip(scores[:own], real[:own])]})
        return rows


def max_pairs(fns):
    """The most (query, document) pairs one request may hold: the export's `max_pairs`."""
    return fns.options.max_pairs
