"""What the heads of several task types share: `LogitsHead` (dropout, then a float32 dense
"logits"), `FamilyHidden` (a family's hidden dense, activation and layer norm before it) and
`ClassificationHead` (sequence classification, reranking, multiple choice). A head that one
task type uses lives in its package (`bert_keras.tasks.<name>`: `SpanHead`,
`TokenClassificationHead`, the pretraining heads).

Shape legend: B batch, T sequence length, H hidden size, C classes.

Every head returns float32 logits, also under a mixed precision policy: the last
projection is a float32 layer (Keras' mixed-precision advice for model outputs), so the
loss sees full-precision logits. The hidden computations follow the layer's policy.
"""

import keras
import numpy as np  # noqa: F401  (the doctests use it)

from bert_keras.models.layers.dense import Dense, dense_initializer


class LogitsHead(keras.layers.Layer):
    """Optional dropout then a float32 dense layer named "logits"."""

    def __init__(self, num_classes, dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"{type(self).__name__}: num_classes must be a positive integer, "
                             f"got {num_classes!r}.")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1), got {dropout!r}.")
        self.num_classes = num_classes
        self.dropout = dropout
        self.initializer_range = initializer_range

    def build(self, input_shape):
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        # float32 output layer under mixed precision: it casts its input to float32.
        self.logits = Dense(
            self.num_classes, kernel_initializer=dense_initializer(self.initializer_range),
            dtype="float32", name="logits",
        )
        self.logits.build(input_shape)

    def call(self, inputs, training=None):
        return self.logits(self.dropout_layer(inputs, training=training))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.num_classes,)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes, dropout=self.dropout,
            initializer_range=self.initializer_range,
        )
        return config


HIDDEN_ACTIVATIONS = ("tanh", "relu", "gelu")


class FamilyHidden:
    """What a family's head computes between the encoder and its output layer: with
    `hidden_activation`, a dense layer "hidden" (H units) and the activation (RoBERTa's,
    ELECTRA's and DistilBERT's classifiers), and with `hidden_norm` a layer norm "hidden_norm"
    after them (ModernBERT's `head.dense`-act-`head.norm`, before each of its task heads)."""

    def _set_hidden(self, hidden_activation, hidden_norm, layer_norm_epsilon):
        owner = type(self).__name__
        if hidden_activation is not None and hidden_activation not in HIDDEN_ACTIVATIONS:
            raise ValueError(f"{owner}: hidden_activation must be None or one of "
                             f"{sorted(HIDDEN_ACTIVATIONS)}, got {hidden_activation!r}.")
        if hidden_norm and hidden_activation is None:
            raise ValueError(f"{owner}: hidden_norm=True needs a hidden_activation (the norm "
                             "follows the hidden layer).")
        self.hidden_activation = hidden_activation
        self.hidden_norm = bool(hidden_norm)
        self.layer_norm_epsilon = layer_norm_epsilon

    def _build_hidden(self, input_shape):
        if self.hidden_activation:
            self.hidden = Dense(
                input_shape[-1], kernel_initializer=dense_initializer(self.initializer_range),
                dtype=self.dtype_policy, name="hidden")
            self.hidden.build(input_shape)
        if self.hidden_norm:
            self.hidden_layer_norm = keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="hidden_norm")
            self.hidden_layer_norm.build(input_shape)

    def _apply_hidden(self, x):
        if not self.hidden_activation:
            return x
        x = apply_activation(self.hidden_activation, self.hidden(x))  # (..., H)
        return self.hidden_layer_norm(x) if self.hidden_norm else x

    def _hidden_config(self):
        return dict(hidden_activation=self.hidden_activation, hidden_norm=self.hidden_norm,
                    layer_norm_epsilon=self.layer_norm_epsilon)


@keras.saving.register_keras_serializable(package="bert_keras")
class ClassificationHead(FamilyHidden, LogitsHead):
    """Sequence classification: pooled (B, H) -> dropout -> float32 logits (B, C).

    With `hidden_activation` the families' own heads: dropout -> dense (H) -> activation ->
    dropout -> logits, on the first token: RoBERTa "tanh" (`classifier.dense`/`out_proj`),
    ELECTRA "gelu" (erf), DistilBERT "relu" (`pre_classifier`); `hidden_norm` adds a layer
    norm (`layer_norm_epsilon`) after the activation: ModernBERT "gelu" (`head.dense`,
    `head.norm`, `classifier`).

    With `hidden_layers=N`, N more layers before the logits (after the family's, if any),
    each dense (`hidden_size` units, default H) -> `hidden_layers_activation` -> dropout,
    named `hidden_1` ... `hidden_N`. No transformers head has them.

    Example:
    >>> import numpy as np
    >>> ClassificationHead(num_classes=3)(np.zeros((2, 16), "float32")).shape
    TensorShape([2, 3])
    >>> ClassificationHead(num_classes=3, hidden_activation="tanh")(
    ...     np.zeros((2, 16), "float32")).shape
    TensorShape([2, 3])
    >>> head = ClassificationHead(num_classes=3, hidden_layers=2, hidden_size=8)
    >>> head(np.zeros((2, 16), "float32")).shape
    TensorShape([2, 3])
    >>> [tuple(w.shape) for w in head.hidden_stack[0].weights + head.hidden_stack[1].weights]
    [(16, 8), (8,), (8, 8), (8,)]
    """

    def __init__(self, num_classes, dropout=0.1, initializer_range=0.02, hidden_activation=None,
                 hidden_layers=0, hidden_size=None, hidden_layers_activation="gelu",
                 hidden_norm=False, layer_norm_epsilon=1e-12, **kwargs):
        super().__init__(num_classes, dropout, initializer_range, **kwargs)
        self._set_hidden(hidden_activation, hidden_norm, layer_norm_epsilon)
        if isinstance(hidden_layers, bool) or not isinstance(hidden_layers, int) or (
                hidden_layers < 0):
            raise ValueError("ClassificationHead: hidden_layers must be an integer >= 0, "
                             f"got {hidden_layers!r}.")
        if hidden_size is not None and (isinstance(hidden_size, bool)
                                        or not isinstance(hidden_size, int) or hidden_size < 1):
            raise ValueError("ClassificationHead: hidden_size must be None or an integer >= 1, "
                             f"got {hidden_size!r}.")
        if hidden_layers_activation not in HIDDEN_ACTIVATIONS:
            raise ValueError(f"ClassificationHead: hidden_layers_activation must be one of "
                             f"{sorted(HIDDEN_ACTIVATIONS)}, got {hidden_layers_activation!r}.")
        self.hidden_layers = hidden_layers
        self.hidden_size = hidden_size
        self.hidden_layers_activation = hidden_layers_activation

    def build(self, input_shape):
        width = input_shape[-1]
        size = self.hidden_size or width
        super().build((*input_shape[:-1], size if self.hidden_layers else width))
        self._build_hidden(input_shape)
        self.hidden_stack = []
        for i in range(self.hidden_layers):
            dense = Dense(size, kernel_initializer=dense_initializer(self.initializer_range),
                          dtype=self.dtype_policy, name=f"hidden_{i + 1}")
            dense.build((*input_shape[:-1], size if i else width))
            self.hidden_stack.append(dense)

    def call(self, inputs, training=None):
        if self.hidden_activation:
            inputs = self._apply_hidden(self.dropout_layer(inputs, training=training))  # (B, H)
        for dense in self.hidden_stack:
            inputs = apply_activation(self.hidden_layers_activation,
                                      dense(self.dropout_layer(inputs, training=training)))
        return super().call(inputs, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_layers=self.hidden_layers, hidden_size=self.hidden_size,
                      hidden_layers_activation=self.hidden_layers_activation,
                      **self._hidden_config())
        return config


def apply_activation(name, x):
    """A name of `HIDDEN_ACTIVATIONS` applied to `x`; "gelu" is the erf GELU of ELECTRA's
    head, as BERT's feed-forward layers compute it."""
    if name == "gelu":
        return keras.activations.gelu(x, approximate=False)
    return keras.activations.get(name)(x)
