"""The pretraining heads: `MaskedLMHead` (gather the masked positions, then project onto the
tied word embeddings), `NextSentenceHead` (NSP / SOP) and ELECTRA's `ReplacedTokenHead`.

Shape legend: B batch, T sequence length, H hidden size, V vocabulary size, P masked
positions per sequence.

The masked LM's projection onto the vocabulary runs in the compute dtype (its matmul is 20
GFLOP per batch of 32 x 20 masked) and its result is cast to float32 before the float32 bias,
as keras-hub and PyTorch autocast do; the other heads end in a float32 layer
(`models.heads`).

Variable paths (for `pretraining_head_name_map`): a `MaskedLMHead` named "masked_lm_head"
owns `masked_lm_head/transform/{kernel,bias}`, `masked_lm_head/transform_layer_norm/
{gamma,beta}` (no beta with `norm_bias=False`) and `masked_lm_head/decoder/output_bias`; its
decoder matrix is the encoder's `token_embedding/embeddings` (tied: the same variable). A
`NextSentenceHead` named "next_sentence_head" owns `next_sentence_head/logits/{kernel,bias}`.
"""

import keras
import numpy as np  # noqa: F401  (the doctests use it)
import tensorflow as tf
from keras import ops

from bert_keras.models.heads import LogitsHead
from bert_keras.models.layers.activations import get_activation
from bert_keras.models.layers.dense import Dense, dense_initializer


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
        norm_bias: a bias (beta) in the transform's layer norm. Pretrainers pass their
            encoder's (`EncoderConfig.norm_bias`: ModernBERT's head norm has none, as its
            encoder's); True, the default, is what heads saved before this option had.

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
        norm_bias=True,
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
        self.norm_bias = norm_bias

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
                embeddings_initializer=dense_initializer(self.initializer_range),
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
            kernel_initializer=dense_initializer(self.initializer_range),
            dtype=self.dtype_policy,
            name="transform",
        )
        self.transform.build((None, None, hidden_size))
        self.transform_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, center=self.norm_bias, dtype=self.dtype_policy,
            name="transform_layer_norm"
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
            norm_bias=self.norm_bias,
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


@keras.saving.register_keras_serializable(package="bert_keras")
class NextSentenceHead(LogitsHead):
    """Next-sentence (NSP) or sentence-order (SOP) prediction: pooled (B, H) -> float32 (B, 2).

    Class 0 = B follows A (in order), 1 = B is random (swapped), Google's convention.

    Example:
    >>> import numpy as np
    >>> NextSentenceHead()(np.zeros((3, 16), "float32")).shape
    TensorShape([3, 2])
    """

    def __init__(self, num_classes=2, dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(num_classes, dropout, initializer_range, **kwargs)


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
        init = dense_initializer(self.initializer_range)
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
