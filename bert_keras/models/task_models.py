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

import keras
import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.models import (answer_inputs, head_checkpoints, heads, targets, text_inputs,
                               word_inputs)
from bert_keras.models.losses import TokenAccuracy, TokenCrossEntropy
from bert_keras.models.task_model import BertTaskModel, encoder_inputs
from bert_keras.names import INPUT_NAMES

PROBLEM_TYPES = ("single_label", "multi_label", "regression")


@keras.saving.register_keras_serializable(package="bert_keras")
class BertPretrainer(BertTaskModel):
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
    >>> import tensorflow as tf
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
        policy = encoder.head_dtype_policy
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

        inputs = encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        # The encoder's last block runs on the masked rows (and [CLS]) only.
        encoded = encoder({name: inputs[name] for name in INPUT_NAMES},
                          output_positions=inputs["masked_lm_positions"])
        outputs = {"masked_lm": mlm_head(encoded["sequence_output"])}  # (B, P, V)
        if next_sentence:
            outputs["next_sentence"] = nsp_head(encoded["pooled_output"])  # (B, 2)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        self.next_sentence = next_sentence
        self.mlm_activation = mlm_activation
        self.masked_lm_head = mlm_head
        self.next_sentence_head = nsp_head
        self._finish_init(encoder, outputs)

    def reads_pooled_output(self):
        return self.next_sentence  # the NSP/SOP head's input

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
class BertClassifier(BertTaskModel):
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
            hidden_activation=hidden_activation, dtype=encoder.head_dtype_policy,
            name="classification_head",
        )
        inputs = encoder_inputs()
        # output_positions=(): the encoder's last block runs on [CLS] only.
        logits = head(encoder(inputs, output_positions=())["pooled_output"])  # (B, C)
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
class BertTokenClassifier(BertTaskModel):
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

    From a checkpoint directory it also takes pre-split words, one tag per word (class ids
    or label names; each goes on its word's first piece, `word_inputs`), and predicts each
    word's logits:
    >>> tagger = BertTokenClassifier.from_pretrained("tests/fixtures/families/bert_tagger")
    >>> history = tagger.fit([["Jesus", "wept", "."]], [["B-PER", "O", "O"]], verbose=0)
    >>> tagger.predict([["Jesus", "wept", "."], ["Amen"]]).shape
    TensorShape([2, None, 5])
    """

    head_name = "token_classification_head"
    transformers_head = "ForTokenClassification"
    load_transformers_head = staticmethod(head_checkpoints.load_token_classification_head)

    def __init__(self, encoder, num_classes, dropout=0.1, labels=None, preprocessor=None,
                 **kwargs):
        head = heads.TokenClassificationHead(
            num_classes, dropout=dropout, initializer_range=encoder.initializer_range,
            dtype=encoder.head_dtype_policy, name="token_classification_head",
        )
        inputs = encoder_inputs()
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

    def reads_pooled_output(self):
        return False  # the head reads the sequence output

    def _checked_targets(self, y):
        return targets.check_class_ids(y, self.num_classes, type(self).__name__, per_token=True)

    # --- words and their tags (`word_inputs`) ------------------------------------------
    def _takes_text(self, x):
        return super()._takes_text(x) or word_inputs.is_words(x)

    def _check_words_go_in(self, sample_weight):
        owner = type(self).__name__
        if self.preprocessor is None:
            raise ValueError(f"{owner}: words need the model's tokenizer; build it with "
                             f"{owner}.from_pretrained(path), or pass preprocessor=.")
        if sample_weight is not None:
            raise ValueError(f"{owner}: sample_weight does not go with words; leave a "
                             "sentence out, or give ids and per-token labels instead.")

    def _word_rows(self, words, tags=None, sample_weight=None):
        self._check_words_go_in(sample_weight)
        names = self.labels or [str(i) for i in range(self.num_classes)]
        return word_inputs.word_features(self.preprocessor, words, tags, names,
                                         type(self).__name__)

    def _split_off(self, x, y, sample_weight, fraction):
        if not word_inputs.is_words(x):
            return super()._split_off(x, y, sample_weight, fraction)
        self._check_words_go_in(sample_weight)
        (x, y), split = word_inputs.split_off(x, y, fraction)
        return (x, y, None), split

    def _text(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        if word_inputs.is_words(x):
            rows = self._word_rows(x, y, sample_weight)
            return word_inputs.word_dataset(rows, batch_size, shuffle), None, None, None
        # Per-token labels are positions of the packed tokens, which raw texts do not have
        # yet: a y of another length was an op error, and one of the same length trained on
        # misplaced tags.
        if y is not None and self._takes_text(x):
            raise ValueError(
                f"{type(self).__name__}: labels cannot go with raw texts (their tokens are not "
                "known yet); give each sentence's words and one tag per word instead: "
                "fit([['Jesus', 'wept', '.'], ...], [['B-PER', 'O', 'O'], ...]). predict "
                "takes raw texts too.")
        return super()._text(x, y, sample_weight, batch_size, shuffle)

    def predict(self, x, batch_size=None, **kwargs):
        """Keras `predict`; raw text as in `fit`, or words: then a float32 tf.RaggedTensor
        (sentences, (words), num_classes) of each word's logits at its first piece (a long
        sentence goes on in rows of its own; NaN only for a word without pieces)."""
        if word_inputs.is_words(x):
            return word_inputs.word_logits(self, self._word_rows(x), batch_size)
        return super().predict(x, batch_size=batch_size, **kwargs)

    def _default_loss(self):
        return TokenCrossEntropy(epsilon=0.0, ignore_negative_labels=True)

    def _default_weighted_metrics(self):
        return [TokenAccuracy(name="accuracy")]

    def _task_config(self):
        return dict(num_classes=self.num_classes, dropout=self.dropout, labels=self.labels)


@keras.saving.register_keras_serializable(package="bert_keras")
class BertSpanQA(BertTaskModel):
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

    From a checkpoint directory it also fits on questions, contexts and SQuAD answers (long
    contexts in windows, `answer_inputs`), and answers questions:
    >>> qa = BertSpanQA.from_pretrained("tests/fixtures/families/bert_qa")
    >>> pair = (["Who wept?"], ["Jesus wept."])
    >>> history = qa.fit(pair, [{"text": "Jesus", "answer_start": 0}], verbose=0)
    >>> sorted(qa.answer(pair)[0])
    ['end_char', 'n_best', 'null_score', 'score', 'start_char', 'text']
    """

    _RENAMES = {"start_positions": "start_logits", "end_positions": "end_logits"}

    head_name = "span_head"
    transformers_head = "ForQuestionAnswering"
    load_transformers_head = staticmethod(head_checkpoints.load_span_head)

    def __init__(self, encoder, preprocessor=None, **kwargs):
        head = heads.SpanHead(
            initializer_range=encoder.initializer_range, dtype=encoder.head_dtype_policy, name="span_head"
        )
        inputs = encoder_inputs()
        start, end = head(encoder(inputs)["sequence_output"], inputs["input_mask"])  # (B, T) each
        super().__init__(inputs=inputs, outputs={"start_logits": start, "end_logits": end}, **kwargs)
        self.span_head = head
        self._finish_init(encoder, ["start_logits", "end_logits"], preprocessor=preprocessor)

    def reads_pooled_output(self):
        return False  # the head reads the sequence output

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

    # --- questions, contexts and SQuAD answers (`answer_inputs`) -----------------------
    def _span_rows(self, x, answers=None):
        owner = type(self).__name__
        if not (self._takes_text(x) and text_inputs.text_count(x) == 2
                and not isinstance(x, tf.data.Dataset)):
            raise ValueError(f"{owner}: questions and contexts go as a pair of lists, "
                             "(questions, contexts), with a model from "
                             f"{owner}.from_pretrained(path).")
        return answer_inputs.span_rows(self.preprocessor, x, answers, owner)

    def _text(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        if answer_inputs.is_answers(y):
            if sample_weight is not None:
                raise ValueError(f"{type(self).__name__}: sample_weight does not go with "
                                 "answers.")
            rows, _ = self._span_rows(x, y)
            return answer_inputs.span_dataset(rows, batch_size, shuffle), None, None, None
        # Token positions of raw text are positions of packed tokens it does not have yet.
        if y is not None and self._takes_text(x):
            raise ValueError(
                f"{type(self).__name__}: the labels of raw questions and contexts are SQuAD "
                "answers, one per question: [{'text': 'Jesus', 'answer_start': 0}, ...] "
                "(character offsets in the context; empty lists for no answer).")
        return super()._text(x, y, sample_weight, batch_size, shuffle)

    def answer(self, x, batch_size=None, n_best_size=20, max_answer_length=30,
               allow_no_answer=False, null_score_diff_threshold=0.0):
        """The best answer to each question of `x` = (questions, contexts): a list of dicts
        with `text`, `start_char`, `end_char` (in the context; -1 for no answer), `score`,
        `null_score` and the `n_best` answers with their probabilities, over every window of
        a long context (`span_decoding.decode_answers`: SQuAD's rules; `allow_no_answer`
        for SQuAD 2.0)."""
        rows, contexts = self._span_rows(x)
        return answer_inputs.best_answers(
            self, rows, contexts, batch_size, n_best_size=n_best_size,
            max_answer_length=max_answer_length, allow_no_answer=allow_no_answer,
            null_score_diff_threshold=null_score_diff_threshold)

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
