"""`BertEmbedder`: sentence embeddings (sentence-transformers' recipe) from any encoder, and
its fine-tuning loss with in-batch negatives (`MultipleNegativesRankingLoss`).

Shape legend: N texts, B batch (pairs), T sequence length, H hidden size.

The model is encoder -> `pooling.SentencePooling` (mean, cls or max over the real tokens,
optionally cut to its first `truncate_dim` values, then optionally L2 normalization):
float32 (B, H) (or (B, truncate_dim)). `predict(texts)` embeds raw texts with the
preprocessor it carries; `fit((anchors, positives))` trains on pairs of texts that mean the
same, without labels: each batch is the B anchors followed by their B positives (2B rows,
one forward pass), and the loss asks each anchor to pick its own positive among the
batch's B positives (the other B - 1 are its negatives). `fit(...,
matryoshka_dims=[...])` takes that loss on each cut of the embeddings and sums them
(`matryoshka.py`).
"""

import keras
import tensorflow as tf
from keras import ops

from bert_keras.models.layers.pooling import SentencePooling
from bert_keras.tasks import text_inputs
from bert_keras.tasks.embedding.matryoshka import matryoshka_cuts, matryoshka_loss
from bert_keras.tasks.embedding.pooling import check_pooling
from bert_keras.tasks.task_model import BertTaskModel, encoder_inputs
from bert_keras.tasks.text_preprocessor import TEXT_FIELDS


@keras.saving.register_keras_serializable(package="bert_keras")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """sentence-transformers' `MultipleNegativesRankingLoss` (in-batch negatives, InfoNCE):
    `y_pred` (2B, H) holds B anchors then their B positives; the loss is the cross entropy of
    `scale * cos(anchor_i, positive_j)` over j, with label j = i, averaged over the anchors.
    `y_true` is not read. `scale` = 1 / temperature (20: sentence-transformers' default).

    >>> import numpy as np
    >>> anchors = np.array([[1., 0.], [0., 1.]], "float32")
    >>> loss = MultipleNegativesRankingLoss(scale=20.0)
    >>> round(float(loss(np.zeros(4), np.concatenate([anchors, anchors]))), 6)  # each finds its own
    0.0
    >>> round(float(loss(np.zeros(4), np.concatenate([anchors, anchors[::-1]]))), 6)  # swapped
    20.0
    """

    def __init__(self, scale=20.0, name="multiple_negatives_ranking_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        y_pred = ops.cast(y_pred, "float32")
        half = ops.shape(y_pred)[0] // 2
        anchors, positives = y_pred[:half], y_pred[half:]  # (B, H) each

        def unit(x):
            return x / ops.maximum(ops.sqrt(ops.sum(ops.square(x), -1, keepdims=True)), 1e-12)

        scores = self.scale * ops.matmul(unit(anchors), ops.transpose(unit(positives)))  # (B, B)
        labels = ops.arange(half, dtype="int32")  # (B,): the diagonal
        return keras.losses.sparse_categorical_crossentropy(labels, scores, from_logits=True)

    def get_config(self):
        return dict(super().get_config(), scale=self.scale)


def pair_dataset(x, preprocess, batch_size=None, shuffle=False):
    """Batches of `(preprocess(anchors + positives),)` (2B rows, anchors first) from text
    pairs `x` = (anchors, positives): two lists or arrays of as many strings, or a
    tf.data.Dataset of such pairs (batched first if its elements are single pairs)."""
    def joined(pairs):
        return tf.concat([tf.reshape(pairs[0], [-1]), tf.reshape(pairs[1], [-1])], 0)  # (2B,)

    if not isinstance(x, tf.data.Dataset):
        anchors, positives = (text_inputs.text_column(t) for t in x)
        if anchors.shape[0] != positives.shape[0]:
            raise ValueError(f"{anchors.shape[0]} anchors but {positives.shape[0]} positives: "
                             "give one positive per anchor.")
        # Shuffled, the pairs stay pairs; the batches (and so the negatives) change.
        return text_inputs.packed_batches((anchors, positives), preprocess, combine=joined,
                                          batch_size=batch_size, shuffle=shuffle)
    dataset = x
    if dataset.element_spec[0].shape.rank == 0:
        dataset = dataset.batch(batch_size or text_inputs.DEFAULT_BATCH_SIZE)
    return dataset.map(lambda *pairs: (preprocess(joined(pairs)),),
                       num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


@keras.saving.register_keras_serializable(package="bert_keras")
class BertEmbedder(BertTaskModel):
    """Sentence embeddings: the encoder's sequence output pooled over the real tokens
    (`SentencePooling`: "mean", "cls" or "max"), L2-normalized with `normalize`. Outputs
    float32 (B, H); with `normalize` a dot product of two embeddings is their cosine.

    `from_pretrained(path, pooling="mean", normalize=True, seq_length=128)` takes every
    checkpoint directory the other task models take (transformers, Google TF1, ours, task
    directories); mean pooling + normalize is the recipe of sentence-transformers' models
    such as all-MiniLM-L6-v2 (whose own truncation is 256 tokens: pass seq_length=256 to
    match it on longer texts).

    `fit((anchors, positives))`: two lists of texts, the i-th positive a paraphrase (answer,
    ...) of the i-th anchor, no labels; default compile AdamW at 2e-5 and
    `MultipleNegativesRankingLoss(scale)` (in-batch negatives: larger batches give more).
    `fit(..., matryoshka_dims=[D1, D2, ...], matryoshka_weights=None)` trains with the sum
    of the compiled loss over those cuts of the embeddings (sentence-transformers'
    `MatryoshkaLoss`, 1 each unless weighted), for that fit only.
    `evaluate((anchors, positives))` reports that loss. `predict(texts)`: (N, H) numpy, or
    (N, truncate_dim).

    Args:
      encoder: a `BertEncoder`.
      pooling: "mean", "cls" or "max".
      normalize: divide each embedding by its L2 norm.
      truncate_dim: keep each embedding's first `truncate_dim` values, cut before
        `normalize` (sentence-transformers' `truncate_dim`); None: all H.
      scale: the loss's 1 / temperature.
      preprocessor: a `TextPreprocessor` (from_pretrained makes it), or None for ids only.

    Example:
    >>> import numpy as np
    >>> embedder = BertEmbedder.from_pretrained("tests/fixtures/families/distilbert",
    ...                                         seq_length=16)
    >>> vectors = embedder.predict(["Jesus wept.", "In the beginning was the Word."], verbose=0)
    >>> vectors.shape, vectors.dtype, np.round(np.linalg.norm(vectors, axis=1), 5).tolist()
    ((2, 32), dtype('float32'), [1.0, 1.0])
    >>> history = embedder.fit((["Jesus wept.", "God said."], ["Jesus cried.", "God spoke."]),
    ...                        verbose=0)
    >>> sorted(history.history)
    ['loss']

    >>> history = embedder.fit((["Jesus wept.", "God said."], ["Jesus cried.", "God spoke."]),
    ...                        matryoshka_dims=[32, 16, 8], verbose=0)  # to be cut short

    Over ids, without a tokenizer, cut to the first 64 of 128 values:
    >>> import bert_keras as bk
    >>> embedder = BertEmbedder(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100),
    ...                         pooling="max", normalize=False, truncate_dim=64)
    >>> ones = np.ones((2, 5), "int32")
    >>> embedder.predict(dict(input_word_ids=ones, input_mask=ones, input_type_ids=0 * ones),
    ...                  verbose=0).shape
    (2, 64)
    """

    default_learning_rate = 2e-5  # sentence-transformers' default
    # The transformers class-name ending of a checkpoint of this model: the bare `*Model`
    # (e.g. BertModel), which has no fine-tuned head and so no labels for from_pretrained.
    transformers_head = "Model"

    def __init__(self, encoder, pooling="mean", normalize=True, scale=20.0, preprocessor=None,
                 truncate_dim=None, **kwargs):
        check_pooling(pooling, "BertEmbedder")
        layer = SentencePooling(pooling, normalize, truncate_dim, name="pooling")
        hidden_size = encoder.encoder_config.hidden_size
        if layer.truncate_dim is not None and layer.truncate_dim > hidden_size:
            raise ValueError(f"BertEmbedder: truncate_dim={truncate_dim} is more than the "
                             f"encoder's hidden size {hidden_size}.")
        inputs = encoder_inputs()
        if pooling == "cls":
            # The encoder's last block computes the [CLS] row only: (B, 1, H).
            first = ops.zeros_like(inputs["input_mask"][:, :1])  # (B, 1): position 0
            sequence = encoder(inputs, output_positions=first)["sequence_output"]
        else:
            sequence = encoder(inputs)["sequence_output"]  # (B, T, H)
        embeddings = layer(sequence, inputs["input_mask"])  # (B, H)
        super().__init__(inputs=inputs, outputs=embeddings, **kwargs)
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.truncate_dim = layer.truncate_dim
        self.scale = float(scale)
        self.pooling_layer = layer
        self._matryoshka = None  # ((D, weight), ...) during a fit with matryoshka_dims
        self._finish_init(encoder, preprocessor=preprocessor)

    def reads_pooled_output(self):
        return False  # the pooling reads the sequence output

    def _keep_head(self, trained):
        """Nothing to keep: the pooling has no weights."""

    # --- pairs of texts ----------------------------------------------------------------
    def _is_pairs(self, x):
        return self._takes_text(x) and text_inputs.text_count(x) == 2

    def _text(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
              training=False):
        if self._is_pairs(x):
            if y is not None or sample_weight is not None:
                raise ValueError(
                    f"{type(self).__name__} trains on (anchors, positives) without labels or "
                    "weights: the other positives of a batch are each anchor's negatives.")
            self.preprocessor.text_fields = TEXT_FIELDS[1]  # it embeds single texts
            return (pair_dataset(x, self.preprocessor.batch_function(training), batch_size,
                                 shuffle), None, None, None)
        return super()._text(x, y, sample_weight, batch_size, shuffle, training)

    def _validation_text(self, data):
        if self._is_pairs(data):  # validation_data=(anchors, positives)
            return self._text(data)[0]
        return super()._validation_text(data)

    def fit(self, x=None, y=None, *args, matryoshka_dims=None, matryoshka_weights=None,
            **kwargs):
        """Keras `fit` (pairs of raw texts too, see the class); with `matryoshka_dims`, the
        loss is the sum of the compiled loss over those cuts (`matryoshka_weights`: one
        weight each, default 1), during this fit only."""
        cuts = None
        if matryoshka_dims is not None:
            cuts = matryoshka_cuts(matryoshka_dims, matryoshka_weights,
                                   self.outputs[0].shape[-1])
        elif matryoshka_weights is not None:
            raise ValueError("matryoshka_weights needs matryoshka_dims.")
        self._set_matryoshka(cuts)
        try:
            return super().fit(x, y, *args, **kwargs)
        finally:
            self._set_matryoshka(None)

    def _set_matryoshka(self, cuts):
        if cuts != self._matryoshka:
            self._matryoshka = cuts
            # compute_loss reads it while tracing: the traced steps of the other loss go.
            self.train_function = self.test_function = None

    def predict(self, x, batch_size=None, **kwargs):
        """Keras `predict`: float32 (N, H) (or (N, truncate_dim)) numpy for N raw texts (or
        ids)."""
        if self._is_pairs(x):
            raise ValueError(f"{type(self).__name__}.predict embeds single texts (a list of "
                             "strings); embed each side of the pairs on its own.")
        return super().predict(x, batch_size=batch_size, **kwargs)

    # --- loss --------------------------------------------------------------------------
    def _default_loss(self):
        return MultipleNegativesRankingLoss(scale=self.scale)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if y is None:  # pairs carry no labels; the loss reads none
            y = ops.zeros(ops.shape(y_pred)[:1], "float32")
        if self._matryoshka is None:
            return super().compute_loss(x, y, y_pred, sample_weight, training=training)
        return matryoshka_loss(
            lambda cut: super(BertEmbedder, self).compute_loss(x, y, cut, sample_weight,
                                                               training=training),
            y_pred, self._matryoshka)

    def _task_config(self):
        return dict(pooling=self.pooling, normalize=self.normalize, scale=self.scale,
                    truncate_dim=self.truncate_dim)
