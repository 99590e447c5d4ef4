"""`BertReranker`: a cross-encoder, one relevance score per (query, document) pair
(sentence-transformers' `CrossEncoder`; a transformers `*ForSequenceClassification` with one
label).

Shape legend: N pairs, B groups (queries), K candidates of a group, T sequence length.

It is a `BertClassifier` with one output (the family's classification head, read from a
transformers or CrossEncoder checkpoint) that scores pairs packed (query, document) as the
family packs a pair, trains on groups of candidates (`losses`), and applies its `activation`
to the logits of raw text (`predict`, `rank`, the export).
"""

import keras
import numpy as np

from bert_keras.tasks import text_inputs
from bert_keras.tasks.classification import BertClassifier, head_checkpoint
from bert_keras.tasks.reranking import activations, featurizer, pair_inputs
from bert_keras.tasks.reranking.losses import LOSSES
from bert_keras.tasks.reranking.options import RANKING_LOSSES


@keras.saving.register_keras_serializable(package="bert_keras")
class BertReranker(BertClassifier):
    """Cross-encoder reranking: float32 logits (N, 1), one per packed (query, document) row.

    Args:
      encoder: a `BertEncoder`.
      activation: what turns a logit into the score of `predict` / `rank` / the export:
        "sigmoid" (CrossEncoder's default for one label), "identity" or "tanh";
        from_pretrained reads it from a CrossEncoder directory.
      ranking_loss: the default loss: "listwise" (softmax cross entropy over a positive and
        its negatives) or "pointwise" (binary cross entropy of each pair's logit).
      max_negatives, in_batch_negatives: how `fit` groups (query, positives, negatives):
        each positive with its query's first `max_negatives` negatives, and the positives
        of the batch's other queries when `in_batch_negatives`.
      dropout, hidden_activation, preprocessor, pooling, head_*: as `BertClassifier`'s.

    x of `fit`: `(queries, positives, negatives)` (with the model's tokenizer), or dicts of
    ids (B*K, T) with y the relevance (B, K) (1, 0; -1 absent). x of `predict`:
    `(queries, documents)` -> float32 scores (N,), the activation applied; dicts of ids ->
    the logits (N, 1).

    Example:
    >>> import bert_keras as bk
    >>> reranker = BertReranker.from_pretrained("tests/fixtures/families/distilbert")
    >>> history = reranker.fit((["Who wept?"], ["Jesus wept."], [["Amen.", "Rome."]]),
    ...                        verbose=0)
    >>> reranker.predict((["Who wept?", "Who wept?"], ["Jesus wept.", "Amen."]),
    ...                  verbose=0).shape
    (2,)
    >>> [hit["corpus_id"] for hit in reranker.rank("Who wept?", ["Amen.", "Jesus wept."])]
    ... # doctest: +SKIP
    [1, 0]
    """

    def __init__(self, encoder, dropout=0.1, hidden_activation=None, preprocessor=None,
                 activation=activations.DEFAULT_ACTIVATION, ranking_loss="listwise",
                 max_negatives=7, in_batch_negatives=False, **kwargs):
        activations.check_activation(activation)
        if ranking_loss not in RANKING_LOSSES:
            raise ValueError(f"BertReranker: ranking_loss must be one of {RANKING_LOSSES}, got "
                             f"{ranking_loss!r}.")
        # One score, no labels: what the classifier's options could say only as the reranker
        # has them (from_pretrained and from_config pass them so), anything else by name.
        for name, fixed in (("num_classes", 1), ("problem_type", "regression"), ("labels", None)):
            given = kwargs.pop(name, None)
            if given not in (None, fixed):
                raise TypeError(f"BertReranker() got {name}={given!r}: a reranker gives one "
                                "score a pair and has no labels.")
        self.activation = activation
        self.ranking_loss = ranking_loss
        self.max_negatives = max_negatives
        self.in_batch_negatives = in_batch_negatives
        super().__init__(encoder, 1, problem_type="regression", dropout=dropout,
                         hidden_activation=hidden_activation, preprocessor=preprocessor,
                         **kwargs)

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        kwargs["num_classes"] = 1
        if isinstance(trained, cls):
            for key in ("activation", "ranking_loss", "max_negatives", "in_batch_negatives"):
                kwargs.setdefault(key, getattr(trained, key))
        elif trained is None:
            kwargs.setdefault("activation", activations.checkpoint_activation(path))
        return super()._pretrained_arguments(path, trained, None, kwargs)

    # --- raw inputs ------------------------------------------------------------------------
    def _takes_text(self, x):
        return pair_inputs.is_triples(x) or super()._takes_text(x)

    def _need_tokenizer(self):
        if self.preprocessor is None:
            owner = type(self).__name__
            raise ValueError(f"{owner}: raw text needs the model's tokenizer; build it with "
                             f"{owner}.from_pretrained(path), or pass preprocessor=.")

    def _text(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
              training=False):
        owner = type(self).__name__
        if pair_inputs.is_triples(x):
            self._need_tokenizer()
            if y is not None or sample_weight is not None:
                raise ValueError(f"{owner}: (queries, positives, negatives) are their own "
                                 "targets; give no y or sample_weight.")
            examples = pair_inputs.triple_examples(x, owner)
            features = featurizer.pair_features(examples, self.preprocessor.tokenizer,
                                                self.preprocessor.seq_length)
            dataset = featurizer.group_dataset(
                features, batch_size or text_inputs.DEFAULT_BATCH_SIZE,
                max_negatives=self.max_negatives, in_batch_negatives=self.in_batch_negatives,
                shuffle=shuffle, pad_id=self.preprocessor.tokenizer.pad_id)
            return dataset, None, None, None
        return super()._text(x, y, sample_weight, batch_size, shuffle, training)

    def _refuse_pairs(self, x):
        if pair_inputs.is_pairs(x) or (self._takes_text(x) and not pair_inputs.is_triples(x)):
            raise ValueError(f"{type(self).__name__}: fit and evaluate take (queries, positives, "
                             "negatives); predict takes (queries, documents).")

    def fit(self, x=None, y=None, **kwargs):
        """Keras `fit`; `x` may be (queries, positives, negatives) (see the class)."""
        self._refuse_pairs(x)
        return super().fit(x, y, **kwargs)

    def evaluate(self, x=None, y=None, **kwargs):
        """Keras `evaluate`; `x` may be (queries, positives, negatives)."""
        self._refuse_pairs(x)
        return super().evaluate(x, y, **kwargs)

    def _split_off(self, x, y, sample_weight, fraction):
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"validation_split must be in (0, 1), got {fraction!r}.")
        cut = int(len(x[0]) * (1.0 - fraction))
        if cut == 0:
            raise ValueError(f"validation_split={fraction!r} of {len(x[0])} queries leaves no "
                             "training queries.")
        return ((tuple(p[:cut] for p in x), y, sample_weight),
                (tuple(p[cut:] for p in x),))

    def predict(self, x, batch_size=None, **kwargs):
        """Keras `predict`; for `(queries, documents)` the float32 scores (N,) of the pairs,
        the activation applied, as `CrossEncoder.predict` gives them."""
        if pair_inputs.is_pairs(x):
            self._need_tokenizer()
            queries, documents = pair_inputs.checked_pairs(x, type(self).__name__)
            self.preprocessor.text_fields = ("text_a", "text_b")
            logits = super().predict((queries, documents), batch_size=batch_size, **kwargs)
            return activations.activate(np.asarray(logits).reshape(-1), self.activation)
        return super().predict(x, batch_size=batch_size, **kwargs)

    def rank(self, query, documents, top_k=None, batch_size=None):
        """[{"corpus_id": i, "score": s}, ...] of `documents` for `query`, best first (ties
        in the documents' order), the first `top_k` (None: all), as `CrossEncoder.rank`."""
        if isinstance(documents, str) or not len(documents):
            raise ValueError(f"{type(self).__name__}.rank: documents must be a non-empty list "
                             f"of strings, got {documents!r}.")
        scores = self.predict(([query] * len(documents), list(documents)),
                              batch_size=batch_size, verbose=0)
        order = np.argsort(-scores.astype(np.float64), kind="stable")[:top_k]
        return [{"corpus_id": int(i), "score": float(scores[i])} for i in order]

    # --- bk.save_transformers: a CrossEncoder ------------------------------------------------
    def transformers_head_config(self):
        """config.json's head keys: one label and the activation, no problem_type (a
        CrossEncoder's; BertClassifier's "regression" would be a regression model's)."""
        return activations.cross_encoder_files(self.activation)[0]

    def transformers_extra_files(self):
        """config_sentence_transformers.json, which names the activation."""
        return activations.cross_encoder_files(self.activation)[1]

    def transformers_spec(self, generator=False):
        """A one-label `*ForSequenceClassification` with the CrossEncoder's files."""
        return head_checkpoint.classifier_spec(
            self, generator, head_config=lambda labels, what: self.transformers_head_config(),
            extra_files=self.transformers_extra_files)

    # --- compile defaults -------------------------------------------------------------
    def _checked_targets(self, y):
        y = np.asarray(y, np.float32)
        if y.ndim != 2:
            raise ValueError(f"{type(self).__name__}: y must be the relevance of each group's "
                             f"candidates (B, K), got shape {y.shape}.")
        return y

    def _default_loss(self):
        return LOSSES[self.ranking_loss]()

    def _default_weighted_metrics(self):
        return None

    def _task_config(self):
        config = super()._task_config()
        for unused in ("num_classes", "problem_type", "labels"):
            config.pop(unused)
        return dict(config, activation=self.activation, ranking_loss=self.ranking_loss,
                    max_negatives=self.max_negatives,
                    in_batch_negatives=self.in_batch_negatives)
