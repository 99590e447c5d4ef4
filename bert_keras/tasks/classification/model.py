"""`BertClassifier`: sequence classification or regression on one vector per text: the
pooled [CLS] output, or the tokens pooled (`POOLINGS`).

Shape legend: B batch, T sequence length, H hidden size, C classes.

x: the encoder inputs (`input_word_ids`, `input_mask`, `input_type_ids`, int32 (B, T)), or raw
texts / pairs (`tasks.text_inputs`) when it carries a preprocessor. y by problem type
(`problem_types`): single_label int labels (B,); multi_label 0/1 floats (B, C); regression
floats (B,) or (B, C).
"""

import keras

from bert_keras.checkpoints import CheckpointError
from bert_keras.models import heads
from bert_keras.models.layers.pooling import SentencePooling
from bert_keras.tasks.classification import head_checkpoint, problem_types
from bert_keras.tasks.family_heads import checkpoint_pooling, family_head_arguments
from bert_keras.tasks.task_model import BertTaskModel, class_count, encoder_inputs, label_names

# "cls": the encoder's pooled output (its pooler on [CLS], as BERT's classifier and every
# transformers *ForSequenceClassification); the others pool the sequence output over the real
# tokens (`SentencePooling`).
POOLINGS = ("cls", "mean", "max", "attention")
HEAD_ACTIVATIONS = heads.HIDDEN_ACTIVATIONS
# The deeper head's default: GELU is the encoder's own feed-forward activation and, unlike
# tanh, does not saturate, so a stack of layers keeps its gradients; unlike ReLU no unit of
# a freshly initialized layer dies in a short fine-tuning run.
DEFAULT_HEAD_ACTIVATION = "gelu"


@keras.saving.register_keras_serializable(package="bert_keras")
class BertClassifier(BertTaskModel):
    """Sequence classification or regression on the pooled [CLS] output, or on the tokens
    pooled by `pooling`, through a head of `head_hidden_layers` more layers.

    Outputs float32 logits (B, num_classes). Default compile (AdamW at 5e-5), by
    `problem_type` (a name of `problem_types`, or its object):
    "single_label": sparse cross entropy from logits + accuracy (y: int labels (B,));
    "multi_label": binary cross entropy from logits + binary accuracy at logit 0
    (y: 0/1 floats (B, C)); "regression": mean squared error (y: floats (B, C), C=1 usually).

    Args:
      encoder: a `BertEncoder`.
      num_classes: C.
      problem_type: "single_label", "multi_label" or "regression".
      dropout: the head's dropout rate, before each of its dense layers.
      hidden_activation: the family's own head layer (RoBERTa "tanh", ELECTRA "gelu",
        DistilBERT "relu"; None: BERT's, on the pooler); from_pretrained reads it.
      hidden_norm: a layer norm after that layer (ModernBERT's); from_pretrained reads it.
      labels: the class names, or None.
      preprocessor: a `TextPreprocessor` (from_pretrained makes it), or None for ids only.
      pooling: what the head reads: "cls" the pooled output (default; the encoder's last
        block then runs on [CLS] only), "mean" / "max" the sequence output over the real
        tokens (`input_mask`), "attention" their weighted sum by a learned score per token
        (softmax over the real tokens). from_pretrained reads a transformers classifier's
        (ModernBERT's `classifier_pooling`: "cls" or "mean").
      head_hidden_layers: N >= 0 layers dense -> `head_activation` -> dropout before the
        logits.
      head_hidden_size: their width (None: the encoder's hidden size).
      head_activation: "gelu" (default: the encoder's own activation, non-saturating),
        "tanh" or "relu".
    Only head_hidden_layers=0 and the poolings of the family's transformers head ("cls";
    ModernBERT's "mean" too) have a transformers class (`bk.save_transformers` refuses the
    others).

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> clf = BertClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100), num_classes=3)
    >>> x = {"input_word_ids": np.ones((4, 6), "int32"), "input_mask": np.ones((4, 6), "int32"),
    ...      "input_type_ids": np.zeros((4, 6), "int32")}
    >>> history = clf.fit(x, np.array([0, 1, 2, 1]), verbose=0)
    >>> clf.predict(x, verbose=0).shape
    (4, 3)
    >>> deeper = BertClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100), 3,
    ...                         pooling="attention", head_hidden_layers=2, head_hidden_size=64)
    >>> deeper.predict(x, verbose=0).shape
    (4, 3)
    """

    head_name = "classification_head"
    transformers_head = head_checkpoint.TRANSFORMERS_HEAD

    @staticmethod
    def load_transformers_head(classifier, path):
        """The head of a transformers `*ForSequenceClassification` directory, into a
        classifier that computes what it computes (CheckpointError for another pooling or
        head layers: their head starts fresh)."""
        pooling = checkpoint_pooling(path)
        if classifier.pooling != pooling or classifier.head_hidden_layers:
            raise CheckpointError(f"{path}: its transformers classification head reads "
                                  f"pooling={pooling!r}, through no more layers; this "
                                  f"classifier has pooling={classifier.pooling!r}, "
                                  f"head_hidden_layers={classifier.head_hidden_layers}.")
        head_checkpoint.load_classification_head(classifier, path)

    def __init__(self, encoder, num_classes, problem_type="single_label", dropout=0.1,
                 hidden_activation=None, labels=None, preprocessor=None, pooling="cls",
                 head_hidden_layers=0, head_hidden_size=None,
                 head_activation=DEFAULT_HEAD_ACTIVATION, hidden_norm=False, **kwargs):
        try:
            problem = problem_types.get(problem_type)
        except ValueError as e:
            raise ValueError(f"BertClassifier: {e}") from None
        check_head_options(pooling, head_hidden_layers, head_hidden_size, head_activation)
        head = heads.ClassificationHead(
            num_classes, dropout=dropout, initializer_range=encoder.initializer_range,
            hidden_activation=hidden_activation, hidden_layers=head_hidden_layers,
            hidden_size=head_hidden_size, hidden_layers_activation=head_activation,
            hidden_norm=hidden_norm, layer_norm_epsilon=encoder.layer_norm_epsilon,
            dtype=encoder.head_dtype_policy, name="classification_head",
        )
        inputs = encoder_inputs()
        pooling_layer = None
        if pooling == "cls":
            # output_positions=(): the encoder's last block runs on [CLS] only.
            pooled = encoder(inputs, output_positions=())["pooled_output"]  # (B, H)
        else:
            pooling_layer = SentencePooling(pooling, name="pooling")
            pooled = pooling_layer(encoder(inputs)["sequence_output"],
                                   inputs["input_mask"])  # (B, H) float32
        logits = head(pooled)  # (B, C)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.num_classes = num_classes
        self.problem = problem
        self.problem_type = problem.name  # the name, as get_config saves it
        self.dropout = dropout
        self.hidden_activation = hidden_activation
        self.hidden_norm = bool(hidden_norm)
        self.labels = label_names(labels, num_classes)
        self.pooling = pooling
        self.head_hidden_layers = head_hidden_layers
        self.head_hidden_size = head_hidden_size
        self.head_activation = head_activation
        self.pooling_layer = pooling_layer
        self.classification_head = head
        self._finish_init(encoder, preprocessor=preprocessor)

    def reads_pooled_output(self):
        return getattr(self, "pooling", "cls") == "cls"

    def transformers_spec(self, generator=False):
        """`*ForSequenceClassification` with its labels and problem type
        (`bk.save_transformers`; InputError for a pooling or head layers it has not)."""
        return head_checkpoint.classifier_spec(self, generator)

    def has_transformers_head(self):
        """Whether transformers' *ForSequenceClassification computes this pooling and head."""
        return self.pooling == "cls" and not self.head_hidden_layers

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        if kwargs.get("num_classes") is None:
            kwargs["num_classes"] = class_count(path, labels)
        if isinstance(trained, cls):
            kwargs.setdefault("problem_type", trained.problem_type)
            for key in HEAD_OPTIONS:  # the trained head's shape, so that it is kept
                kwargs.setdefault(key, getattr(trained, key))
        kwargs = family_head_arguments(cls, path, trained, kwargs)
        if trained is None:  # the checkpoint's transformers classifier pools so
            kwargs.setdefault("pooling", checkpoint_pooling(path))
        if labels is not None and len(labels) == kwargs["num_classes"]:
            kwargs.setdefault("labels", labels)
        return kwargs

    def _keep_head(self, trained):
        """The head's weights, and the attention pooling's score, of `trained` where each
        has this model's shapes."""
        super()._keep_head(trained)
        mine, theirs = self.pooling_layer, trained.pooling_layer
        if mine is not None and theirs is not None and [tuple(v.shape) for v in mine.weights] == [
                tuple(v.shape) for v in theirs.weights]:
            mine.set_weights(theirs.get_weights())

    def _checked_targets(self, y):
        return self.problem.check_targets(y, self.num_classes, type(self).__name__)

    def _default_loss(self):
        return self.problem.loss()

    def _default_weighted_metrics(self):
        return self.problem.weighted_metrics()

    def _task_config(self):
        return dict(num_classes=self.num_classes, problem_type=self.problem_type,
                    dropout=self.dropout, hidden_activation=self.hidden_activation,
                    labels=self.labels, **{key: getattr(self, key) for key in HEAD_OPTIONS},
                    # left out without, so earlier .keras configs stay as they were
                    **(dict(hidden_norm=True) if self.hidden_norm else {}))


HEAD_OPTIONS = ("pooling", "head_hidden_layers", "head_hidden_size", "head_activation")


def check_head_options(pooling, head_hidden_layers, head_hidden_size, head_activation):
    """ValueError in one line naming the first of the classifier's pooling and head
    arguments that is not one of its choices."""
    if pooling not in POOLINGS:
        raise ValueError(f"BertClassifier: pooling must be one of {POOLINGS}, got {pooling!r}.")
    if not _is_int(head_hidden_layers) or head_hidden_layers < 0:
        raise ValueError("BertClassifier: head_hidden_layers must be an integer >= 0, got "
                         f"{head_hidden_layers!r}.")
    if head_hidden_size is not None and (not _is_int(head_hidden_size) or head_hidden_size < 1):
        raise ValueError("BertClassifier: head_hidden_size must be None (the encoder's hidden "
                         f"size) or an integer >= 1, got {head_hidden_size!r}.")
    if head_activation not in HEAD_ACTIVATIONS:
        raise ValueError(f"BertClassifier: head_activation must be one of {HEAD_ACTIVATIONS}, "
                         f"got {head_activation!r}.")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)
