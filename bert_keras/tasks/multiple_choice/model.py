"""`BertMultipleChoice`: one score per choice (SWAG, transformers' `*ForMultipleChoice`).

Shape legend: B batch, K choices, T sequence length, H hidden size.

x: the encoder inputs of every choice, int32 (B, K, T) each (`input_word_ids`, `input_mask`,
`input_type_ids`: the pair (context, ending) packed per choice), or, with the model's
tokenizer, `(contexts, choices)` (`choice_inputs`). y: the index of the right choice (B,).
The encoder runs on the B*K rows; the family's pooled output (or the mean of a row's real
tokens: `pooling`) -> the family's head -> Dense(1) scores each row; the scores come back
(B, K), the logits of a softmax over the choices.
"""

import keras
import numpy as np
import tensorflow as tf

from bert_keras.models import heads
from bert_keras.models.layers.pooling import SentencePooling
from bert_keras.tasks import targets, text_inputs
from bert_keras.tasks.family_heads import checkpoint_pooling, family_head_arguments
from bert_keras.tasks.multiple_choice import choice_inputs, featurizer, head_checkpoint
from bert_keras.tasks.task_model import BertTaskModel, encoder_inputs

# What a row's head reads, as transformers' *ForMultipleChoice heads do: "cls" the encoder's
# pooled output, "mean" the mean of its real tokens' sequence output (ModernBERT's
# `classifier_pooling`).
POOLINGS = ("cls", "mean")


class _ChoiceRows(keras.layers.Layer):
    """(B, K, T) -> (B*K, T): every choice a row of the encoder."""

    def call(self, x):
        return tf.reshape(x, [-1, tf.shape(x)[-1]])

    def compute_output_shape(self, shape):
        return (None, shape[-1])


class _ChoiceScores(keras.layers.Layer):
    """Scores (B*K, 1) -> (B, K), the shape of the choices (`ids`, (B, K, T))."""

    def call(self, scores, ids):
        return tf.reshape(scores, tf.shape(ids)[:2])

    def compute_output_shape(self, scores_shape, ids_shape):
        return tuple(ids_shape[:2])


@keras.saving.register_keras_serializable(package="bert_keras")
class BertMultipleChoice(BertTaskModel):
    """Multiple choice: float32 logits (B, K), one per choice, any K per batch.

    Each choice is the pair (context, ending) packed as transformers users encode SWAG; the
    head on each row is the family's (`hidden_activation`: None for BERT, RoBERTa and
    ALBERT's pooled output; "relu" DistilBERT's pre_classifier; "gelu" ELECTRA's sequence
    summary and DeBERTa's ContextPooler; "gelu" with `hidden_norm`, a layer norm after it,
    ModernBERT's head), on the row's [CLS] (`pooling` "cls") or the mean of its real tokens
    ("mean", ModernBERT's `classifier_pooling`); from_pretrained reads them. Default compile:
    AdamW at 5e-5, sparse cross entropy from logits over the choices, accuracy.

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> model = BertMultipleChoice(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100))
    >>> x = {"input_word_ids": np.ones((2, 4, 6), "int32"),
    ...      "input_mask": np.ones((2, 4, 6), "int32"),
    ...      "input_type_ids": np.zeros((2, 4, 6), "int32")}
    >>> history = model.fit(x, np.array([0, 3]), verbose=0)
    >>> model.predict(x, verbose=0).shape
    (2, 4)

    From a checkpoint directory (a transformers `*ForMultipleChoice` one keeps its head) it
    takes contexts and their choices:
    >>> model = BertMultipleChoice.from_pretrained("tests/fixtures/families/distilbert")
    >>> history = model.fit((["Jesus wept."], [["He loved him.", "Amen.", "Rome."]]), [0],
    ...                     verbose=0)
    >>> model.predict((["Jesus wept."], [["He loved him.", "Amen."]])).shape
    (1, 2)
    """

    head_name = "multiple_choice_head"
    transformers_head = head_checkpoint.TRANSFORMERS_HEAD
    load_transformers_head = staticmethod(head_checkpoint.load_multiple_choice_head)

    def __init__(self, encoder, dropout=0.1, hidden_activation=None, preprocessor=None,
                 hidden_norm=False, pooling="cls", **kwargs):
        if pooling not in POOLINGS:
            raise ValueError(f"BertMultipleChoice: pooling must be one of {POOLINGS}, got "
                             f"{pooling!r}.")
        head = heads.ClassificationHead(
            1, dropout=dropout, initializer_range=encoder.initializer_range,
            hidden_activation=hidden_activation, hidden_norm=hidden_norm,
            layer_norm_epsilon=encoder.layer_norm_epsilon, dtype=encoder.head_dtype_policy,
            name="multiple_choice_head",
        )
        inputs = encoder_inputs()
        inputs = {name: keras.Input(shape=(None, None), dtype="int32", name=name)
                  for name in inputs}  # (B, K, T)
        rows = _ChoiceRows(dtype="float32", name="choice_rows")
        flat = {name: rows(x) for name, x in inputs.items()}  # (B*K, T)
        if pooling == "cls":
            # output_positions=(): the encoder's last block runs on [CLS] only.
            pooled = encoder(flat, output_positions=())["pooled_output"]  # (B*K, H)
        else:
            pooled = SentencePooling(pooling, name="pooling")(
                encoder(flat)["sequence_output"], flat["input_mask"])  # (B*K, H) float32
        scores = head(pooled)  # (B*K, 1)
        logits = _ChoiceScores(dtype="float32", name="choice_scores")(
            scores, inputs["input_word_ids"])  # (B, K)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.dropout = dropout
        self.hidden_activation = hidden_activation
        self.hidden_norm = bool(hidden_norm)
        self.pooling = pooling
        self.multiple_choice_head = head
        self._finish_init(encoder, preprocessor=preprocessor)

    def transformers_spec(self, generator=False):
        """`*ForMultipleChoice` (`bk.save_transformers`)."""
        return head_checkpoint.multiple_choice_spec(self, generator)

    def reads_pooled_output(self):
        return getattr(self, "pooling", "cls") == "cls"

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        if isinstance(trained, cls):
            kwargs.setdefault("pooling", getattr(trained, "pooling", "cls"))
        elif trained is None:  # the checkpoint's transformers head pools so
            kwargs.setdefault("pooling", checkpoint_pooling(path))
        return family_head_arguments(cls, path, trained, kwargs)

    # --- contexts and their choices (`choice_inputs`) -------------------------------------
    def _takes_text(self, x):
        return choice_inputs.is_choices(x)

    def _choice_features(self, x, y=None, sample_weight=None):
        owner = type(self).__name__
        if self.preprocessor is None:
            raise ValueError(f"{owner}: contexts and choices need the model's tokenizer; build "
                             f"it with {owner}.from_pretrained(path), or pass preprocessor=.")
        if sample_weight is not None:
            raise ValueError(f"{owner}: sample_weight does not go with contexts and choices; "
                             "leave an example out instead.")
        examples = choice_inputs.choice_examples(x, y, owner)
        return featurizer.choice_features(examples, self.preprocessor.tokenizer,
                                          self.preprocessor.seq_length)

    def _split_off(self, x, y, sample_weight, fraction):
        (x, y), split = choice_inputs.split_off(x, y, fraction)
        return (x, y, sample_weight), split

    def _text(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
              training=False):
        if choice_inputs.is_choices(x):
            features = self._choice_features(x, y, sample_weight)
            dataset = featurizer.choice_dataset(
                features, batch_size or text_inputs.DEFAULT_BATCH_SIZE, shuffle,
                pad_id=self.preprocessor.tokenizer.pad_id)
            return dataset, None, None, None
        if text_inputs.is_text(x) and not isinstance(x, tf.data.Dataset):
            raise ValueError(f"{type(self).__name__} takes (contexts, choices): N texts and N "
                             "rows of K >= 2 choice strings, e.g. (['Jesus wept.'], "
                             "[['He loved him.', 'Amen.']]).")
        if isinstance(x, dict) and y is not None and not isinstance(y, (dict, tf.data.Dataset)):
            y = targets.check_class_ids(y, int(np.shape(x["input_word_ids"])[1]),
                                        type(self).__name__)
        return super()._text(x, y, sample_weight, batch_size, shuffle, training)

    def predict(self, x, batch_size=None, **kwargs):
        """Keras `predict`; for `(contexts, choices)` the float32 logits (N, K) in their
        order."""
        if choice_inputs.is_choices(x):
            return featurizer.choice_logits(self, self._choice_features(x),
                                            batch_size or text_inputs.DEFAULT_BATCH_SIZE,
                                            self.preprocessor.tokenizer.pad_id)
        return super().predict(x, batch_size=batch_size, **kwargs)

    # --- compile defaults -------------------------------------------------------------
    def _default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def _default_weighted_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def _task_config(self):
        # hidden_norm and pooling left out at their defaults, so earlier .keras configs stay
        # as they were
        return dict(dropout=self.dropout, hidden_activation=self.hidden_activation,
                    **(dict(hidden_norm=True) if self.hidden_norm else {}),
                    **(dict(pooling=self.pooling) if self.pooling != "cls" else {}))
