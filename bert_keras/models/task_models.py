"""Task models that join a BertEncoder and a head, with their default losses and metrics.

Shape legend: B batch, T sequence length, H hidden size, V vocabulary size, P masked
positions per sequence, C classes.

Each model is a functional `keras.Model` that takes the encoder as an argument and extends
its inputs (composition). Each compiles itself with defaults at the end of `__init__`
(like keras-hub Tasks), so `model.fit(ds)` works at once; `model.compile()` with no
arguments restores the defaults, and any argument left at "auto" keeps its default.

tf.data element formats `(x, y)` or `(x, y, sample_weight)` (all int32 unless noted; the
encoder inputs are `input_word_ids`, `input_mask`, `input_type_ids`, each (B, T)):

=====================  ===========================================  =========================================
model                  x (dict)                                     y  /  sample_weight
=====================  ===========================================  =========================================
BertPretrainer         encoder inputs + masked_lm_positions (B, P)  y = {"masked_lm": masked_lm_ids (B, P),
                                                                    "next_sentence": next_sentence_labels (B,)}
                                                                    sample_weight = {"masked_lm":
                                                                    masked_lm_weights float32 (B, P)}
BertClassifier         encoder inputs                               y = label (B,) int; multi_label: (B, C)
                                                                    0/1 float; regression: (B,) or (B, 1) float
BertTokenClassifier    encoder inputs                               y = labels (B, T), IGNORE_LABEL (-1, any
                                                                    negative) where not scored
BertSpanQA             encoder inputs                               y = {"start_positions": (B,),
                                                                    "end_positions": (B,)}; 0 = [CLS] = no answer
=====================  ===========================================  =========================================

`sample_weight` is optional everywhere; from tf.data a dict may name only some outputs (the
others get no weight). Keras' numpy-array path (`fit(x, y, sample_weight=...)`) insists on a
weight for every output: pass `"next_sentence": np.ones(B)` there. With `next_sentence=False` a `"next_sentence"` entry in y is ignored.

Losses: the masked-LM loss is Google BERT's `sum(w * ce) / (sum(w) + 1e-5)` per batch
(`TokenCrossEntropy`), not Keras' mean over all B*P slots; token tagging averages over the
scored tokens of the batch. Under a distribution strategy each replica normalizes by its
own weights and the result is divided by the number of replicas, as Keras does for its
own losses.
"""

import os

import keras
import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.models import head_checkpoints, heads, targets, text_inputs
from bert_keras.models.encoder import BertEncoder
from bert_keras.models.losses import TokenAccuracy, TokenCrossEntropy
from bert_keras.models.task_directory import is_task_directory, load_task_directory
from bert_keras.models.text_preprocessor import TEXT_FIELDS, TextPreprocessor
from bert_keras.names import INPUT_NAMES
from bert_keras.optimization import AdamW
from bert_keras.text.tokenizers import load_tokenizer

PROBLEM_TYPES = ("single_label", "multi_label", "regression")


def default_optimizer(learning_rate):
    """AdamW (weight decay 0.01 except LayerNorm and biases, eps 1e-6, clip norm 1.0)."""
    return AdamW(learning_rate=learning_rate, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)


def _encoder_inputs():
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


class _BertTask(keras.Model):
    """Shared machinery: "auto" compile defaults, target renaming, (de)serialization, raw
    text through the carried preprocessor, `from_pretrained`."""

    default_learning_rate = 5e-5
    head_name = None  # the head layer's attribute, kept by from_pretrained when it fits
    # The class name ending of transformers' model with this head, and head_checkpoints'
    # loader of that head.
    transformers_head = None
    load_transformers_head = None

    def _finish_init(self, encoder, output_keys=None, preprocessor=None):
        self.encoder = encoder
        self.preprocessor = preprocessor  # TextPreprocessor or None (ids only)
        self._output_keys = list(output_keys or [])  # Keys of a dict output, in order.
        self.compile()

    # --- from a checkpoint directory -----------------------------------------------------
    @classmethod
    def from_pretrained(cls, path, seq_length=128, **kwargs):
        """This task model over the encoder of checkpoint directory `path` (transformers,
        Google TF1, ours, or a task directory of tools/finetune.py), carrying its tokenizer
        (`seq_length`: the longest packed row). A fine-tuned head in the directory is kept
        when its shape fits; `kwargs` go to the constructor (e.g. `num_classes`)."""
        path = os.fspath(path)
        if is_task_directory(path):
            trained, tokenizer, info = load_task_directory(path)
            encoder, labels = getattr(trained, "encoder", trained), info.get("labels")
        else:
            trained, tokenizer = None, load_tokenizer(path)
            encoder = BertEncoder.from_pretrained(path)
            encoder.check_tokenizer(tokenizer, path)
            labels = head_checkpoints.fine_tuned_labels(path, cls.transformers_head)
        model = cls(encoder, preprocessor=TextPreprocessor(tokenizer, seq_length),
                    **cls._pretrained_arguments(path, trained, labels, dict(kwargs)))
        if isinstance(trained, cls):
            model._keep_head(trained)
        elif trained is None and cls.load_transformers_head is not None:
            head_checkpoints.try_load_head(cls.load_transformers_head, model, path)
        return model

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        """The constructor arguments that the directory decides unless `kwargs` gives them:
        `trained` is a task directory's model (or None), `labels` its head's label names."""
        return kwargs

    def _keep_head(self, trained):
        """The head weights of `trained` (a task directory's model of this class) when each
        has this head's shape."""
        mine, theirs = getattr(self, self.head_name), getattr(trained, self.head_name)
        weights = theirs.get_weights()
        if [w.shape for w in weights] == [tuple(v.shape) for v in mine.weights]:
            mine.set_weights(weights)

    # --- raw text ------------------------------------------------------------------------
    def _text(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """(x, y, sample_weight, batch_size) for Keras: raw text becomes a dataset of packed
        batches (the preprocessor in the input pipeline); anything else is unchanged. Labels
        given as arrays are checked first (`_checked_targets`)."""
        if y is not None and not isinstance(y, (dict, tf.data.Dataset)):
            y = self._checked_targets(y)
        if self.preprocessor is None or not text_inputs.is_text(x):
            return x, y, sample_weight, batch_size
        self.preprocessor.text_fields = TEXT_FIELDS[text_inputs.text_count(x)]
        return text_inputs.text_dataset(x, self.preprocessor.batch_function(), y, sample_weight,
                                        batch_size, shuffle), None, None, None

    def _validation_text(self, data):
        if isinstance(data, tuple) and text_inputs.is_text(data[0]):
            return self._text(*data)[0]
        return self._text(data)[0] if data is not None else None

    def fit(self, x=None, y=None, batch_size=None, epochs=1, sample_weight=None,
            validation_data=None, shuffle=True, validation_split=0.0, **kwargs):
        """Keras `fit`; `x` may also be raw text (see `text_inputs`) when the model carries a
        preprocessor (`from_pretrained`), `validation_split` included."""
        if validation_split and self.preprocessor is not None and text_inputs.is_text(x):
            (x, y, sample_weight), split = text_inputs.split_off(x, y, sample_weight,
                                                                 validation_split)
            validation_data, validation_split = validation_data or split, 0.0
        x, y, sample_weight, batch_size = self._text(x, y, sample_weight, batch_size, shuffle)
        shuffle = shuffle and not isinstance(x, tf.data.Dataset)  # ours is shuffled already
        return super().fit(x, y, batch_size=batch_size, epochs=epochs,
                           sample_weight=sample_weight, shuffle=shuffle,
                           validation_data=self._validation_text(validation_data),
                           validation_split=validation_split, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """Keras `evaluate`; `x` may be raw text, as in `fit`."""
        x, y, sample_weight, batch_size = self._text(x, y, sample_weight, batch_size)
        return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight,
                                **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """Keras `predict`; `x` may be raw text, as in `fit`."""
        x, _, _, batch_size = self._text(x, batch_size=batch_size)
        return super().predict(x, batch_size=batch_size, **kwargs)

    # --- compile defaults -------------------------------------------------------------
    def _default_loss(self):
        raise NotImplementedError

    def _default_metrics(self):
        return None

    def _default_weighted_metrics(self):
        return None

    def _default_loss_weights(self):
        return None

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                loss_weights="auto", **kwargs):
        """Keras `compile` where each argument left at "auto" gets this task's default."""
        if isinstance(optimizer, str) and optimizer == "auto":
            optimizer = default_optimizer(self.default_learning_rate)
        if isinstance(loss_weights, str) and loss_weights == "auto":
            loss_weights = self._default_loss_weights() if isinstance(loss, str) and loss == "auto" else None
        if isinstance(loss, str) and loss == "auto":
            loss = self._default_loss()
        if isinstance(metrics, str) and metrics == "auto":
            metrics = self._default_metrics()
        if isinstance(weighted_metrics, str) and weighted_metrics == "auto":
            weighted_metrics = self._default_weighted_metrics()
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, loss_weights=loss_weights, **kwargs)

    def get_compile_config(self):
        return super().get_compile_config()

    def compile_from_config(self, config):
        # Keras skips this for a custom `compile`; ours takes the same arguments.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)  # So saved slots load.

    # --- targets ----------------------------------------------------------------------
    def _checked_targets(self, y):
        """`y` (labels as an array) as this task scores them; ValueError for labels it
        cannot score (as they are, by default)."""
        return y

    def _prepare_targets(self, y, sample_weight):
        """Maps the data's y / sample_weight onto the model outputs (identity by default)."""
        return y, sample_weight

    def _complete(self, y, sample_weight, renames=None, drop=()):
        """Renames dict keys of y and sample_weight, drops `drop`, fills missing weights with None."""
        renames = renames or {}

        def rename(d):
            return {renames.get(k, k): v for k, v in d.items() if k not in drop}

        if isinstance(y, dict):
            y = rename(y)
            missing = [k for k in self._output_keys if k not in y]
            if missing:
                inverse = {v: k for k, v in renames.items()}
                raise ValueError(
                    f"{type(self).__name__}: y has no entry for {[inverse.get(k, k) for k in missing]}; "
                    f"got keys {sorted(y)}."
                )
        if isinstance(sample_weight, dict):
            sample_weight = rename(sample_weight)
            unknown = sorted(set(sample_weight) - set(self._output_keys))
            if unknown:
                raise ValueError(
                    f"{type(self).__name__}: sample_weight has keys {unknown} that are not outputs "
                    f"{list(self._output_keys)}."
                )
            sample_weight = {k: sample_weight.get(k) for k in self._output_keys}
        return y, sample_weight

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y, sample_weight = self._prepare_targets(y, sample_weight)
        return super().compute_loss(x, y, y_pred, sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        y, sample_weight = self._prepare_targets(y, sample_weight)
        return super().compute_metrics(x, y, y_pred, sample_weight)

    # --- config -----------------------------------------------------------------------
    def _task_config(self):
        raise NotImplementedError

    def get_config(self):
        config = dict(
            name=self.name,
            trainable=self.trainable,
            encoder=keras.saving.serialize_keras_object(self.encoder),
            **self._task_config(),
        )
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("encoder", "preprocessor"):
            if config.get(key) is not None:
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


@keras.saving.register_keras_serializable(package="bert_keras")
class BertPretrainer(_BertTask):
    """BERT pretraining: masked LM (decoder tied to the word embeddings) and next sentence.

    Inputs: the encoder inputs + `masked_lm_positions` int32 (B, P); any P.
    Outputs: {"masked_lm": float32 logits (B, P, V), "next_sentence": float32 logits (B, 2)};
    `next_sentence=False` (RoBERTa-style, MLM only) drops "next_sentence". The same head
    serves sentence-order prediction (SOP): only the labels differ.

    Default compile: AdamW at 1e-4; masked-LM loss `TokenCrossEntropy` (Google's
    sum(w*ce) / (sum(w) + 1e-5) with w = masked_lm_weights), NSP sparse cross entropy;
    weighted metrics masked_lm accuracy (weighted by masked_lm_weights), next_sentence accuracy.

    Args:
        encoder: a `BertEncoder`.
        next_sentence: add the NSP/SOP head.
        mlm_activation: the MLM transform's activation; None: the encoder's (as Google's
            `run_pretraining.py`, which uses `hidden_act`).

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100)
    >>> pretrainer = BertPretrainer(encoder)
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32"),
    ...      "masked_lm_positions": np.array([[1, 2, 0], [3, 0, 0]], "int32")}
    >>> y = {"masked_lm": np.array([[5, 6, 0], [7, 0, 0]]), "next_sentence": np.array([0, 1])}
    >>> w = {"masked_lm": np.array([[1, 1, 0], [1, 0, 0]], "float32")}
    >>> ds = tf.data.Dataset.from_tensor_slices((x, y, w)).batch(2)
    >>> history = pretrainer.fit(ds, verbose=0)
    >>> pretrainer.predict(x, verbose=0)["masked_lm"].shape
    (2, 3, 100)
    """

    default_learning_rate = 1e-4

    def __init__(self, encoder, next_sentence=True, mlm_activation=None, **kwargs):
        policy = encoder.dtype_policy
        mlm_head = heads.MaskedLMHead(
            encoder.token_embedding,
            activation=mlm_activation or encoder.activation,
            layer_norm_epsilon=encoder.layer_norm_epsilon,
            initializer_range=encoder.initializer_range,
            dtype=policy,
            name="masked_lm_head",
        )
        nsp_head = None
        if next_sentence:
            nsp_head = heads.NextSentenceHead(
                initializer_range=encoder.initializer_range, dtype=policy, name="next_sentence_head"
            )

        inputs = _encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        encoded = encoder({name: inputs[name] for name in INPUT_NAMES})
        outputs = {"masked_lm": mlm_head(encoded["sequence_output"], inputs["masked_lm_positions"])}
        if next_sentence:
            outputs["next_sentence"] = nsp_head(encoded["pooled_output"])  # (B, 2)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        self.next_sentence = next_sentence
        self.mlm_activation = mlm_activation
        self.masked_lm_head = mlm_head
        self.next_sentence_head = nsp_head
        self._finish_init(encoder, outputs)

    def _default_loss(self):
        loss = {"masked_lm": TokenCrossEntropy(epsilon=1e-5, name="masked_lm_loss")}
        if self.next_sentence:
            loss["next_sentence"] = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, name="next_sentence_loss"
            )
        return loss

    def _default_weighted_metrics(self):
        # Keras prefixes a metric with its output's name only when there are several outputs:
        # without NSP the masked-LM accuracy would be logged as a bare "accuracy".
        name = "accuracy" if self.next_sentence else "masked_lm_accuracy"
        metrics = {"masked_lm": [keras.metrics.SparseCategoricalAccuracy(name=name)]}
        if self.next_sentence:
            metrics["next_sentence"] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        return metrics

    def _prepare_targets(self, y, sample_weight):
        drop = () if self.next_sentence else ("next_sentence",)
        return self._complete(y, sample_weight, drop=drop)

    def _task_config(self):
        return dict(next_sentence=self.next_sentence, mlm_activation=self.mlm_activation)


@keras.saving.register_keras_serializable(package="bert_keras")
class BertClassifier(_BertTask):
    """Sequence classification or regression on the pooled [CLS] output.

    Outputs float32 logits (B, num_classes). Default compile (AdamW at 5e-5):
    "single_label": sparse cross entropy from logits + accuracy (y: int labels (B,));
    "multi_label": binary cross entropy from logits + binary accuracy at logit 0
    (y: 0/1 floats (B, C)); "regression": mean squared error (y: floats (B, C), C=1 usually).

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> clf = BertClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100), num_classes=3)
    >>> x = {"input_word_ids": np.ones((4, 6), "int32"), "input_mask": np.ones((4, 6), "int32"),
    ...      "input_type_ids": np.zeros((4, 6), "int32")}
    >>> history = clf.fit(x, np.array([0, 1, 2, 1]), verbose=0)
    >>> clf.predict(x, verbose=0).shape
    (4, 3)
    """

    head_name = "classification_head"
    transformers_head = "ForSequenceClassification"
    load_transformers_head = staticmethod(head_checkpoints.load_classification_head)

    def __init__(self, encoder, num_classes, problem_type="single_label", dropout=0.1,
                 hidden_activation=None, labels=None, preprocessor=None, **kwargs):
        if problem_type not in PROBLEM_TYPES:
            raise ValueError(f"BertClassifier: problem_type must be one of {PROBLEM_TYPES}, got {problem_type!r}.")
        head = heads.ClassificationHead(
            num_classes, dropout=dropout, initializer_range=encoder.initializer_range,
            hidden_activation=hidden_activation, dtype=encoder.dtype_policy,
            name="classification_head",
        )
        inputs = _encoder_inputs()
        logits = head(encoder(inputs)["pooled_output"])  # (B, C)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.num_classes = num_classes
        self.problem_type = problem_type
        self.dropout = dropout
        self.hidden_activation = hidden_activation
        self.labels = _label_names(labels, num_classes)
        self.classification_head = head
        self._finish_init(encoder, preprocessor=preprocessor)

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        if kwargs.get("num_classes") is None:
            kwargs["num_classes"] = _class_count(path, labels)
        if isinstance(trained, cls):
            kwargs.setdefault("problem_type", trained.problem_type)
            kwargs.setdefault("hidden_activation", trained.hidden_activation)
        else:
            kwargs.setdefault("hidden_activation",
                              head_checkpoints.classifier_head_activation(path))
        if labels is not None and len(labels) == kwargs["num_classes"]:
            kwargs.setdefault("labels", labels)
        return kwargs

    def _checked_targets(self, y):
        owner = type(self).__name__
        if self.problem_type == "single_label":
            return targets.check_class_ids(y, self.num_classes, owner)
        if self.problem_type == "multi_label":
            return targets.check_label_columns(y, self.num_classes, owner, low=0, high=1)
        return targets.check_label_columns(y, self.num_classes, owner)

    def _default_loss(self):
        if self.problem_type == "single_label":
            return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if self.problem_type == "multi_label":
            return keras.losses.BinaryCrossentropy(from_logits=True)
        return keras.losses.MeanSquaredError()

    def _default_weighted_metrics(self):
        if self.problem_type == "single_label":
            return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        if self.problem_type == "multi_label":
            return [keras.metrics.BinaryAccuracy(name="binary_accuracy", threshold=0.0)]
        return None

    def _task_config(self):
        return dict(num_classes=self.num_classes, problem_type=self.problem_type, dropout=self.dropout,
                    hidden_activation=self.hidden_activation, labels=self.labels)


@keras.saving.register_keras_serializable(package="bert_keras")
class BertTokenClassifier(_BertTask):
    """Token tagging (e.g. NER): float32 logits (B, T, num_classes) on the sequence output.

    Labels (B, T) int; positions labelled `IGNORE_LABEL` (-1; any negative) are not scored:
    special tokens, padding and the non-first WordPieces of a word. Default compile: AdamW
    at 5e-5, `TokenCrossEntropy(epsilon=0, ignore_negative_labels=True)` (the mean over
    scored tokens of the batch), `TokenAccuracy`.

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> tagger = BertTokenClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100), num_classes=5)
    >>> x = {"input_word_ids": np.ones((2, 6), "int32"), "input_mask": np.ones((2, 6), "int32"),
    ...      "input_type_ids": np.zeros((2, 6), "int32")}
    >>> labels = np.array([[-1, 1, 2, -1, 0, -1], [-1, 4, 4, 3, -1, -1]])
    >>> history = tagger.fit(x, labels, verbose=0)
    >>> tagger.predict(x, verbose=0).shape
    (2, 6, 5)
    """

    head_name = "token_classification_head"
    transformers_head = "ForTokenClassification"
    load_transformers_head = staticmethod(head_checkpoints.load_token_classification_head)

    def __init__(self, encoder, num_classes, dropout=0.1, labels=None, preprocessor=None,
                 **kwargs):
        head = heads.TokenClassificationHead(
            num_classes, dropout=dropout, initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy, name="token_classification_head",
        )
        inputs = _encoder_inputs()
        logits = head(encoder(inputs)["sequence_output"])  # (B, T, C)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.labels = _label_names(labels, num_classes)
        self.token_classification_head = head
        self._finish_init(encoder, preprocessor=preprocessor)

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        if kwargs.get("num_classes") is None:
            kwargs["num_classes"] = _class_count(path, labels)
        if labels is not None and len(labels) == kwargs["num_classes"]:
            kwargs.setdefault("labels", labels)
        return kwargs

    def _checked_targets(self, y):
        return targets.check_class_ids(y, self.num_classes, type(self).__name__, per_token=True)

    def _default_loss(self):
        return TokenCrossEntropy(epsilon=0.0, ignore_negative_labels=True)

    def _default_weighted_metrics(self):
        return [TokenAccuracy(name="accuracy")]

    def _task_config(self):
        return dict(num_classes=self.num_classes, dropout=self.dropout, labels=self.labels)


@keras.saving.register_keras_serializable(package="bert_keras")
class BertSpanQA(_BertTask):
    """Extractive question answering (SQuAD): start and end logits over the tokens.

    Outputs {"start_logits": (B, T), "end_logits": (B, T)} float32; padding positions are
    -1e9. y = {"start_positions": (B,), "end_positions": (B,)} int token indices; 0 ([CLS])
    means "no answer" (SQuAD 2.0). (y keyed "start_logits"/"end_logits" works too.)
    Default compile: AdamW at 5e-5, loss = (CE(start) + CE(end)) / 2, accuracy of each.
    Decode predictions with `bert_keras.data.finetuning.span_decoding`.

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> qa = BertSpanQA(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100))
    >>> x = {"input_word_ids": np.ones((2, 6), "int32"), "input_mask": np.ones((2, 6), "int32"),
    ...      "input_type_ids": np.zeros((2, 6), "int32")}
    >>> y = {"start_positions": np.array([2, 0]), "end_positions": np.array([3, 0])}
    >>> history = qa.fit(x, y, verbose=0)
    >>> qa.predict(x, verbose=0)["start_logits"].shape
    (2, 6)
    """

    _RENAMES = {"start_positions": "start_logits", "end_positions": "end_logits"}

    head_name = "span_head"
    transformers_head = "ForQuestionAnswering"
    load_transformers_head = staticmethod(head_checkpoints.load_span_head)

    def __init__(self, encoder, preprocessor=None, **kwargs):
        head = heads.SpanHead(
            initializer_range=encoder.initializer_range, dtype=encoder.dtype_policy, name="span_head"
        )
        inputs = _encoder_inputs()
        start, end = head(encoder(inputs)["sequence_output"], inputs["input_mask"])  # (B, T) each
        super().__init__(inputs=inputs, outputs={"start_logits": start, "end_logits": end}, **kwargs)
        self.span_head = head
        self._finish_init(encoder, ["start_logits", "end_logits"], preprocessor=preprocessor)

    def _default_loss(self):
        return {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
                for name in ("start_logits", "end_logits")}

    def _default_loss_weights(self):
        return {"start_logits": 0.5, "end_logits": 0.5}

    def _default_weighted_metrics(self):
        return {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                for name in ("start_logits", "end_logits")}

    def _prepare_targets(self, y, sample_weight):
        return self._complete(y, sample_weight, renames=self._RENAMES)

    def _task_config(self):
        return {}


def _label_names(labels, num_classes):
    """`labels` as a list of num_classes strings, or None (unnamed, or transformers'
    placeholders LABEL_0, LABEL_1, ...)."""
    if labels is None or list(labels) == [f"LABEL_{i}" for i in range(len(labels))]:
        return None
    if len(labels) != num_classes:
        raise ValueError(f"{len(labels)} labels {list(labels)[:5]} for {num_classes} classes.")
    return [str(label) for label in labels]


def _class_count(path, labels):
    if not labels:
        raise InputError(f"{path} has no fine-tuned head that names its classes: give "
                         "num_classes=.")
    return len(labels)
