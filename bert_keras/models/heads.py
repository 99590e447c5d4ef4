"""Task heads on top of BertEncoder: masked LM, next sentence, classification, tagging, span.

Shape legend: B batch, T sequence length, H hidden size, V vocabulary size, P masked
positions per sequence, C classes.

Every head returns float32 logits, also under a mixed precision policy: the last
projection is a float32 layer (Keras' mixed-precision advice for model outputs), so the
loss sees full-precision logits. The masked LM's projection onto the vocabulary is the one
exception: its matmul (20 GFLOP per batch of 32 x 20 masked) runs in the compute dtype and
its result is cast to float32 before the float32 bias, as keras-hub and PyTorch autocast do.
The hidden computations follow the layer's policy.

Variable paths (for `pretraining_head_name_map`): a `MaskedLMHead` named "masked_lm_head"
owns `masked_lm_head/transform/{kernel,bias}`, `masked_lm_head/transform_layer_norm/
{gamma,beta}` and `masked_lm_head/decoder/output_bias`; its decoder matrix is the encoder's
`token_embedding/embeddings` (tied: the same variable). A `NextSentenceHead` named
"next_sentence_head" owns `next_sentence_head/logits/{kernel,bias}`.
"""

import keras
import numpy as np  # noqa: F401  (the doctests use it)
import tensorflow as tf
from keras import ops

from bert_keras.models.layers import transformer as bert_layers
from bert_keras.models.layers.activations import get_activation
from bert_keras.models.layers.dense import Dense

# Logit of a padding position in SpanHead: exp() of it underflows to exactly 0 in
# float32, yet it is finite, so a cross entropy never sees inf - inf.
PADDING_LOGIT = -1e9


def _initializer(initializer_range):
    return bert_layers.dense_initializer(initializer_range)


@keras.saving.register_keras_serializable(package="bert_keras")
class MaskedLMHead(keras.layers.Layer):
    """Masked-LM head: gather the masked positions, transform, project onto the tied embeddings.

    `call(sequence_output, masked_lm_positions)`: (B, T, H), int32 (B, P) -> float32 (B, P, V).
    Only the P gathered positions are transformed and projected, never all T. Without
    positions, `sequence_output` is those rows already, (B, P, H) (what
    `encoder(inputs, output_positions=masked_lm_positions)` returns).

    logits = LayerNorm(act(gathered @ W + b)) @ E^T + output_bias, where E is the [V, E]
    word-embedding table of `token_embedding` (the same variable, so training updates both)
    and W maps H to E (E = H for BERT; ALBERT and ELECTRA's generator factorize).

    Args:
        token_embedding: the encoder's `keras.layers.Embedding` (`encoder.token_embedding`)
            or its table variable (`encoder.token_embedding.embeddings`). None: the head
            owns an untied table of `vocab_size` rows.
        vocab_size: only with `token_embedding=None`.
        activation: transform activation, a name of
            `bert_keras.models.layers.activations.get_activation`.
        layer_norm_epsilon, initializer_range: as in BertEncoder.

    `get_config` stores `vocab_size`, not the shared layer: `from_config` builds a head with
    its own (untied) table of that shape. Task models re-tie in their own `from_config`.

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100)
    >>> head = MaskedLMHead(encoder.token_embedding)
    >>> sequence = np.random.rand(2, 8, 128).astype("float32")
    >>> head(sequence, np.array([[1, 3], [2, 0]], "int32")).shape
    TensorShape([2, 2, 100])
    >>> head.decoder_table is encoder.token_embedding.embeddings
    True
    """

    def __init__(
        self,
        token_embedding=None,
        vocab_size=None,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        get_activation(activation)  # Fail early on an unknown name.
        if token_embedding is None:
            if not isinstance(vocab_size, int) or vocab_size < 1:
                raise ValueError(
                    "MaskedLMHead needs token_embedding (the encoder's embedding layer or table) "
                    "or a positive integer vocab_size; got token_embedding=None, "
                    f"vocab_size={vocab_size!r}."
                )
        elif not (isinstance(token_embedding, keras.Variable)
                  or hasattr(token_embedding, "embeddings")):
            raise ValueError(
                "MaskedLMHead: token_embedding must be a keras.layers.Embedding or its "
                f"[V, H] table variable, got {type(token_embedding).__name__}."
            )
        self.token_embedding = token_embedding
        self.vocab_size = vocab_size
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    @property
    def decoder_table(self):
        """The [V, H] matrix the logits project onto (the encoder's table when tied)."""
        if isinstance(self.token_embedding, keras.Variable):
            return self.token_embedding
        return self.token_embedding.embeddings

    def build(self, sequence_output_shape, masked_lm_positions_shape=None):
        hidden_size = sequence_output_shape[-1]
        if self.token_embedding is None:
            self.token_embedding = keras.layers.Embedding(
                self.vocab_size, hidden_size,
                embeddings_initializer=_initializer(self.initializer_range),
                dtype=self.dtype_policy, name="decoder_embedding",
            )
        if not isinstance(self.token_embedding, keras.Variable) and not self.token_embedding.built:
            self.token_embedding.build((None, None))
        # The transform maps H to the table's width E: H for BERT, the factorized embedding
        # width for ALBERT (`predictions.dense`) and ELECTRA's generator.
        width = int(self.decoder_table.shape[1])
        self.transform = Dense(
            width,
            activation=get_activation(self.activation),
            kernel_initializer=_initializer(self.initializer_range),
            dtype=self.dtype_policy,
            name="transform",
        )
        self.transform.build((None, None, hidden_size))
        self.transform_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="transform_layer_norm"
        )
        self.transform_layer_norm.build((None, None, width))
        # In the compute dtype (module docstring): under mixed_bfloat16, a float32 projection
        # made a pretraining step 3-10% slower.
        self.decoder = _TiedDecoder(self.token_embedding, dtype=self.dtype_policy, name="decoder")
        self.decoder.build((None, None, width))

    @property
    def output_bias(self):
        """The [V] float32 bias added to the logits."""
        return self.decoder.output_bias

    def call(self, sequence_output, masked_lm_positions=None):
        gathered = sequence_output  # (B, P, H) already without positions
        if masked_lm_positions is not None:
            positions = ops.cast(masked_lm_positions, "int32")[:, :, None]  # (B, P, 1)
            gathered = ops.take_along_axis(sequence_output, positions, axis=1)  # (B, P, H)
        x = self.transform_layer_norm(self.transform(gathered))  # (B, P, H)
        return self.decoder(x)  # (B, P, V) float32

    def compute_output_shape(self, sequence_output_shape, masked_lm_positions_shape=None):
        rows = masked_lm_positions_shape or sequence_output_shape[:-1]
        return tuple(rows) + (self.decoder_table.shape[0],)

    def get_config(self):
        config = super().get_config()
        if self.token_embedding is None:
            vocab_size = self.vocab_size
        elif isinstance(self.token_embedding, keras.Variable):
            vocab_size = int(self.token_embedding.shape[0])
        else:
            vocab_size = int(getattr(self.token_embedding, "input_dim", None)
                             or self.decoder_table.shape[0])
        config.update(
            # A shared layer is not config; from_config makes an untied table.
            token_embedding=None,
            vocab_size=vocab_size,
            activation=self.activation,
            layer_norm_epsilon=self.layer_norm_epsilon,
            initializer_range=self.initializer_range,
        )
        return config


class _TiedDecoder(keras.layers.Layer):
    """x @ table^T (compute dtype) + output_bias (float32), where table is an Embedding
    layer's [V, H] variable (not owned)."""

    def __init__(self, token_embedding, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding

    def build(self, input_shape):
        table = self._table()
        self.output_bias = self.add_weight(
            name="output_bias", shape=(table.shape[0],), initializer="zeros", dtype="float32",
            autocast=False,  # Added to float32 logits, never read as bfloat16.
        )

    def _table(self):
        if isinstance(self.token_embedding, keras.Variable):
            return self.token_embedding
        return self.token_embedding.embeddings

    def call(self, x):
        table = ops.cast(self._table(), self.compute_dtype)  # (V, H)
        # One 2-D matmul with transpose_b, which reads the table as it is: ops.matmul(x,
        # ops.transpose(table)) also transposed the (V, H) gradient back every step.
        rows = ops.reshape(x, (-1, x.shape[-1]))  # (B*P, H)
        logits = ops.cast(tf.linalg.matmul(rows, table, transpose_b=True), "float32")  # (B*P, V)
        logits = ops.reshape(logits, (*ops.shape(x)[:-1], table.shape[0]))
        return logits + self.output_bias  # (B, P, V)


class _LogitsHead(keras.layers.Layer):
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
            self.num_classes, kernel_initializer=_initializer(self.initializer_range),
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


@keras.saving.register_keras_serializable(package="bert_keras")
class NextSentenceHead(_LogitsHead):
    """Next-sentence (NSP) or sentence-order (SOP) prediction: pooled (B, H) -> float32 (B, 2).

    Class 0 = B follows A (in order), 1 = B is random (swapped), Google's convention.

    Example:
    >>> import numpy as np
    >>> NextSentenceHead()(np.zeros((3, 16), "float32")).shape
    TensorShape([3, 2])
    """

    def __init__(self, num_classes=2, dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(num_classes, dropout, initializer_range, **kwargs)


HIDDEN_ACTIVATIONS = ("tanh", "relu", "gelu")


class _FamilyHidden:
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
                input_shape[-1], kernel_initializer=_initializer(self.initializer_range),
                dtype=self.dtype_policy, name="hidden")
            self.hidden.build(input_shape)
        if self.hidden_norm:
            self.hidden_layer_norm = keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="hidden_norm")
            self.hidden_layer_norm.build(input_shape)

    def _apply_hidden(self, x):
        if not self.hidden_activation:
            return x
        x = _activation(self.hidden_activation, self.hidden(x))  # (..., H)
        return self.hidden_layer_norm(x) if self.hidden_norm else x

    def _hidden_config(self):
        return dict(hidden_activation=self.hidden_activation, hidden_norm=self.hidden_norm,
                    layer_norm_epsilon=self.layer_norm_epsilon)


@keras.saving.register_keras_serializable(package="bert_keras")
class ClassificationHead(_FamilyHidden, _LogitsHead):
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
            dense = Dense(size, kernel_initializer=_initializer(self.initializer_range),
                          dtype=self.dtype_policy, name=f"hidden_{i + 1}")
            dense.build((*input_shape[:-1], size if i else width))
            self.hidden_stack.append(dense)

    def call(self, inputs, training=None):
        if self.hidden_activation:
            inputs = self._apply_hidden(self.dropout_layer(inputs, training=training))  # (B, H)
        for dense in self.hidden_stack:
            inputs = _activation(self.hidden_layers_activation,
                                 dense(self.dropout_layer(inputs, training=training)))
        return super().call(inputs, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_layers=self.hidden_layers, hidden_size=self.hidden_size,
                      hidden_layers_activation=self.hidden_layers_activation,
                      **self._hidden_config())
        return config


def _activation(name, x):
    """A name of `HIDDEN_ACTIVATIONS` applied to `x`; "gelu" is the erf GELU of ELECTRA's
    head, as BERT's feed-forward layers compute it."""
    if name == "gelu":
        return keras.activations.gelu(x, approximate=False)
    return keras.activations.get(name)(x)


@keras.saving.register_keras_serializable(package="bert_keras")
class TokenClassificationHead(_FamilyHidden, _LogitsHead):
    """Token tagging: sequence (B, T, H) -> dropout -> float32 logits (B, T, C).

    `hidden_activation` / `hidden_norm`: a family's layers before the dropout, as in
    `ClassificationHead` (ModernBERT's dense-gelu-norm; None in the BERT-style families).

    Example:
    >>> import numpy as np
    >>> TokenClassificationHead(num_classes=5)(np.zeros((2, 7, 16), "float32")).shape
    TensorShape([2, 7, 5])
    >>> TokenClassificationHead(5, hidden_activation="gelu", hidden_norm=True)(
    ...     np.zeros((2, 7, 16), "float32")).shape
    TensorShape([2, 7, 5])
    """

    def __init__(self, num_classes, dropout=0.1, initializer_range=0.02, hidden_activation=None,
                 hidden_norm=False, layer_norm_epsilon=1e-12, **kwargs):
        super().__init__(num_classes, dropout, initializer_range, **kwargs)
        self._set_hidden(hidden_activation, hidden_norm, layer_norm_epsilon)

    def build(self, input_shape):
        super().build(input_shape)
        self._build_hidden(input_shape)

    def call(self, inputs, training=None):
        return super().call(self._apply_hidden(inputs), training=training)

    def get_config(self):
        return dict(super().get_config(), **self._hidden_config())


@keras.saving.register_keras_serializable(package="bert_keras")
class SpanHead(_FamilyHidden, keras.layers.Layer):
    """Extractive QA: sequence (B, T, H) -> float32 start and end logits, each (B, T).

    `call(sequence_output, input_mask)` returns `(start_logits, end_logits)`; padding
    positions (input_mask 0) get `PADDING_LOGIT` (-1e9), so they never win and add nothing
    to a softmax. Position 0 ([CLS]) stands for "no answer" (SQuAD 2.0).
    `hidden_activation` / `hidden_norm`: a family's layers before the logits, as in
    `ClassificationHead` (ModernBERT's dense-gelu-norm; None in the BERT-style families).

    Example:
    >>> import numpy as np
    >>> start, end = SpanHead()(np.zeros((2, 5, 16), "float32"), np.ones((2, 5), "int32"))
    >>> start.shape, end.shape
    (TensorShape([2, 5]), TensorShape([2, 5]))
    """

    def __init__(self, initializer_range=0.02, hidden_activation=None, hidden_norm=False,
                 layer_norm_epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self._set_hidden(hidden_activation, hidden_norm, layer_norm_epsilon)

    def build(self, sequence_output_shape, input_mask_shape=None):
        self.logits = Dense(
            2, kernel_initializer=_initializer(self.initializer_range), dtype="float32",
            name="logits",
        )
        self.logits.build(sequence_output_shape)
        self._build_hidden(sequence_output_shape)

    def call(self, sequence_output, input_mask):
        logits = self.logits(self._apply_hidden(sequence_output))  # (B, T, 2) float32
        is_real = ops.cast(input_mask, "bool")  # (B, T)
        start = ops.where(is_real, logits[:, :, 0], PADDING_LOGIT)
        end = ops.where(is_real, logits[:, :, 1], PADDING_LOGIT)
        return start, end

    def compute_output_shape(self, sequence_output_shape, input_mask_shape):
        shape = tuple(sequence_output_shape[:-1])
        return shape, shape

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range, **self._hidden_config())
        return config


@keras.saving.register_keras_serializable(package="bert_keras")
class ReplacedTokenHead(keras.layers.Layer):
    """ELECTRA's discriminator head: sequence (B, T, H) -> dense (H) -> activation -> float32
    logits (B, T), one per token: > 0 means "replaced by the generator".

    Hugging Face `discriminator_predictions.dense` / `dense_prediction`; Google TF1
    `discriminator_predictions/dense` / `dense_1`.

    Example:
    >>> import numpy as np
    >>> ReplacedTokenHead()(np.zeros((2, 7, 16), "float32")).shape
    TensorShape([2, 7])
    """

    def __init__(self, activation="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        get_activation(activation)  # Fail early on an unknown name.
        self.activation = activation
        self.initializer_range = initializer_range

    def build(self, input_shape):
        init = _initializer(self.initializer_range)
        self.hidden = Dense(
            input_shape[-1], activation=get_activation(self.activation),
            kernel_initializer=init, dtype=self.dtype_policy, name="hidden")
        self.hidden.build(input_shape)
        self.logits = Dense(1, kernel_initializer=init, dtype="float32", name="logits")
        self.logits.build(tuple(input_shape[:-1]) + (input_shape[-1],))

    def call(self, sequence_output):
        hidden = self.hidden(sequence_output)  # (B, T, H)
        return ops.squeeze(self.logits(ops.cast(hidden, "float32")), -1)  # (B, T)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update(activation=self.activation, initializer_range=self.initializer_range)
        return config
