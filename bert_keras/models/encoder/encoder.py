"""BertEncoder: the BERT encoder as a functional Keras model, and its presets.

Shape legend: B batch, T sequence length, H hidden size, V vocabulary size.
"""

import dataclasses

import keras
from keras import ops

from bert_keras import checkpoints
from bert_keras.checkpoints import own
from bert_keras.checkpoints.transformers_spec import TransformersSpec, no_generator
from bert_keras.errors import InputError
from bert_keras.models.encoder.config import DEFAULT_VOCAB_SIZE, PRESETS, EncoderConfig
from bert_keras.models.layers import disentangled, packing
from bert_keras.models.layers.dense import Dense, dense_initializer
from bert_keras.models.layers.dropout import Dropout
from bert_keras.models.layers.normalization import LayerNorm
from bert_keras.models.layers.position_embedding import PositionEmbedding
from bert_keras.models.layers.transformer import TransformerBlock
from bert_keras.names import INPUT_NAMES

# The architecture's fields: constructor arguments, read-only attributes and get_config keys.
_CONFIG_FIELDS = tuple(field.name for field in dataclasses.fields(EncoderConfig))


def _check_shareable(other, width, type_vocab_size, max_positions, position_offset):
    mine = dict(width=width, type_vocab_size=type_vocab_size, max_positions=max_positions,
                position_offset=position_offset)
    theirs = dict(width=other.embedding_size or other.hidden_size,
                  type_vocab_size=other.type_vocab_size, max_positions=other.max_positions,
                  position_offset=other.position_offset)
    if mine != theirs:
        raise ValueError(f"Cannot share the embeddings of {other.name}: it has {theirs}, this "
                         f"encoder needs {mine}.")


def _no_rows(output_positions):
    """Whether `output_positions` asks for no rows: `()` (only the pooled output)."""
    return isinstance(output_positions, (tuple, list)) and len(output_positions) == 0


@dataclasses.dataclass(frozen=True)
class _Stack:
    """The encoder's layers in the order they run, and the function that runs them: the
    functional graph is built from it, and `BertEncoder.call(inputs, output_positions=...)`
    runs it with a shortcut: the last block computes only the rows asked for (and [CLS]'s,
    for the pooled output). A classifier (no rows) or a masked LM (its P masked rows) then
    skips all of the last block's work but its query/key/value projection (one fused
    matmul over every row: the keys and values need them all): an L-layer encoder does
    nearly 1/L less, with the same outputs at those rows."""

    token_embedding: keras.layers.Layer
    segment_embedding: keras.layers.Layer | None
    position_embedding: keras.layers.Layer | None  # None: rotary positions in the blocks
    embeddings_layer_norm: keras.layers.Layer
    embeddings_dropout: keras.layers.Layer
    projection: keras.layers.Layer | None
    blocks: tuple
    pooler: keras.layers.Layer | None
    num_layers: int
    type_vocab_size: int
    final_layer_norm: keras.layers.Layer | None = None  # pre-norm encoders' last norm
    relative_embedding: keras.layers.Layer | None = None  # disentangled attention's table
    project_before_norm: bool = False  # DeBERTa's order: projection, then layer norm
    mask_embeddings: bool = False  # DeBERTa: padded rows' embeddings zeroed

    def __call__(self, inputs, output_positions=None, training=None, unpadded=False):
        """`unpadded`: the blocks run on the real tokens alone (`packing.PackedRows`); the
        outputs' padded rows hold zeros."""
        tokens = self.token_embedding(inputs["input_word_ids"])  # (B, T, E)
        if self.segment_embedding:  # the sum in BERT's order (float addition is not associative)
            type_ids = inputs["input_type_ids"]
            # One token type: all are type 0, whatever the packer says.
            if self.type_vocab_size == 1:
                type_ids = ops.zeros_like(type_ids)
            tokens = tokens + self.segment_embedding(type_ids)
        x = tokens + self.position_embedding(tokens) if self.position_embedding else tokens
        mask = inputs["input_mask"]
        if self.projection and self.project_before_norm:
            x = self.projection(x)  # (B, T, H)
        x = self.embeddings_layer_norm(x)
        if self.mask_embeddings:
            x = x * ops.cast(mask, x.dtype)[:, :, None]
        x = self.embeddings_dropout(x, training=training)
        if self.projection and not self.project_before_norm:
            x = self.projection(x)  # (B, T, H)
        relative = self.relative_embedding(x) if self.relative_embedding else None  # (2S, H)
        packed = packing.PackedRows(mask) if unpadded else None
        if packed:
            x = packed.pack(x)  # (R, H)
        groups = len(self.blocks)
        encoder_outputs = []
        for i in range(self.num_layers):
            # Layer i of `groups` weight-sharing groups (ALBERT's rule; groups == layers: BERT).
            block = self.blocks[i * groups // self.num_layers]
            if output_positions is None or i < self.num_layers - 1:
                x = block(x, mask, training=training, relative_embeddings=relative,
                          packed=packed)  # (B, T, H), or (R, H)
            else:  # rows [CLS] + output_positions only: (B, 1 + P, H)
                rows = ops.zeros((ops.shape(mask)[0], 1), "int32")
                if not _no_rows(output_positions):
                    rows = ops.concatenate([rows, ops.cast(output_positions, "int32")], axis=1)
                x = block(packed.unpack(x) if packed else x, mask, training=training,
                          query_positions=rows, relative_embeddings=relative)
            encoder_outputs.append(x)
        if self.final_layer_norm:
            x = encoder_outputs[-1] = self.final_layer_norm(x)
        if packed:  # (B, T, H) again: graphs unpack only the outputs they read
            if output_positions is None:
                x = packed.unpack(x)
            else:  # padded rows asked for are zeros too
                x = x * ops.cast(ops.take_along_axis(mask, rows, axis=1), x.dtype)[:, :, None]
            encoder_outputs = [packed.unpack(output) for output in encoder_outputs[:-1]] + [x]
        first = ops.take(x, 0, axis=1)  # (B, H): [CLS] / <s>
        if output_positions is not None:  # without the [CLS] row the shortcut added
            x = x[:, 1:]
            encoder_outputs[-1] = x
        pooled = self.pooler(first) if self.pooler else first
        return dict(sequence_output=x, pooled_output=pooled, encoder_outputs=encoder_outputs)


@keras.saving.register_keras_serializable(package="bert_keras")
class BertEncoder(keras.Model):
    """The BERT encoder: three int32 inputs to `sequence_output`, `pooled_output` and
    `encoder_outputs`.

    Inputs (a dict): `input_word_ids`, `input_mask` (1 = real token), `input_type_ids`, each
    int32 of shape (batch, seq); any seq up to `max_positions`. Outputs (a dict):
    `sequence_output` (B, T, H), `pooled_output` (B, H) (tanh dense on [CLS]) and
    `encoder_outputs`, the list of every block's output.

    `encoder(inputs, output_positions=positions)`, int (B, P): `sequence_output` (and the
    last of `encoder_outputs`) only at those rows, (B, P, H), the full output gathered there;
    `output_positions=()`: no rows, only `pooled_output`. The last block then runs on those
    rows and [CLS] alone, so heads that read a few rows (classifiers, masked LMs) skip most
    of its work.

    Inference (`training` falsy) runs unpadded (`unpadded=False` asks for the padded path):
    the blocks' dense work on the batch's real tokens alone (`packing.PackedRows`), so
    padding costs nearly nothing; real rows are the padded path's to float32 rounding, and
    padded rows of `sequence_output` and `encoder_outputs` are 0.

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100)
    >>> inputs = {
    ...     "input_word_ids": np.array([[2, 7, 9, 3, 0]], "int32"),
    ...     "input_mask": np.array([[1, 1, 1, 1, 0]], "int32"),
    ...     "input_type_ids": np.zeros((1, 5), "int32"),
    ... }
    >>> encoder(inputs)["sequence_output"].shape
    TensorShape([1, 5, 128])
    >>> encoder(inputs, output_positions=np.array([[1, 2]], "int32"))["sequence_output"].shape
    TensorShape([1, 2, 128])
    """

    def __init__(self, config=None, *, dtype=None, transposed_kernels=False, embeddings_of=None,
                 **kwargs):
        """`config`: the architecture, an `EncoderConfig` (default: BERT-base's); keyword
        arguments named like its fields change it (`BertEncoder(vocab_size=100,
        num_layers=2)`), and the rest go to `keras.Model`. `embeddings_of`: another
        BertEncoder whose token, segment and position embeddings and embedding layer norm this
        one uses (ELECTRA's generator shares the discriminator's); not part of the config, so
        a saved copy has its own. `transposed_kernels`: the blocks' dense kernels in the
        faster inference layout (`transposed_dense.TransposedDense`; `cast_for_inference`
        makes such copies). Like `dtype`, not architecture: checkpoints are read and written
        with False."""
        changes = {name: kwargs.pop(name) for name in list(kwargs) if name in _CONFIG_FIELDS}
        # ConfigError naming a bad value of the architecture.
        config = dataclasses.replace(config or EncoderConfig(), **changes)
        (vocab_size, num_layers, hidden_size, num_heads, intermediate_size, activation, dropout,
         attention_dropout, max_positions, type_vocab_size, layer_norm_epsilon,
         initializer_range, embedding_size, num_layer_groups, position_offset,
         use_pooler, rotary_theta, _, _, _, pre_norm, gated_mlp, use_bias,
         norm_bias, *_) = (getattr(config, name) for name in _CONFIG_FIELDS)
        init = dense_initializer(initializer_range)
        width = embedding_size or hidden_size  # E of the embeddings
        groups = num_layer_groups or num_layers

        # === Layers ===
        if embeddings_of is not None:
            _check_shareable(embeddings_of, width, type_vocab_size, max_positions, position_offset)
            token_embedding = embeddings_of.token_embedding
            segment_embedding = embeddings_of.segment_embedding
            position_embedding = embeddings_of.position_embedding
            embeddings_layer_norm = embeddings_of.embeddings_layer_norm
        else:
            token_embedding = keras.layers.Embedding(
                vocab_size, width, embeddings_initializer=init, dtype=dtype,
                name="token_embedding",
            )
            segment_embedding = type_vocab_size and keras.layers.Embedding(
                type_vocab_size, width, embeddings_initializer=init, dtype=dtype,
                name="segment_embedding",
            )
            absolute = rotary_theta is None and config.absolute_positions
            position_embedding = absolute and PositionEmbedding(
                max_positions, initializer_range, offset=position_offset, dtype=dtype,
                name="position_embedding",
            )
            embeddings_layer_norm = LayerNorm(
                epsilon=layer_norm_epsilon, center=norm_bias, dtype=dtype,
                name="embeddings_layer_norm"
            )
        embeddings_dropout = Dropout(dropout, dtype=dtype, name="embeddings_dropout")
        projection = embedding_size is not None and Dense(
            hidden_size, use_bias=not config.project_before_norm, kernel_initializer=init,
            dtype=dtype, name="embedding_projection")
        relative_embedding = config.disentangled_attention and disentangled.RelativeEmbedding(
            config.relative_span, normalize=config.relative_embedding_norm,
            layer_norm_epsilon=layer_norm_epsilon, initializer_range=initializer_range,
            dtype=dtype, name="relative_embedding")
        blocks = [
            TransformerBlock(
                num_heads, intermediate_size, activation=activation, dropout=dropout,
                attention_dropout=attention_dropout, layer_norm_epsilon=layer_norm_epsilon,
                initializer_range=initializer_range, transposed_kernels=transposed_kernels,
                pre_norm=pre_norm, attention_norm=i > 0, gated=gated_mlp, use_bias=use_bias,
                norm_bias=norm_bias, **dict(zip(("rotary_theta", "half_window"),
                                               config.layer_attention(i))),
                disentangled_attention=config.disentangled_attention,
                relative_span=config.relative_span,
                position_buckets=config.position_buckets is not None,
                max_relative_positions=config.max_relative_positions or max_positions,
                # Paths for longer inputs (blocked windows, chunked rows) out of the graph.
                max_length=max_positions - position_offset,
                dtype=dtype, name=f"transformer_layer_{i}",
            )
            for i in range(groups)
        ]
        final_layer_norm = pre_norm and LayerNorm(
            epsilon=layer_norm_epsilon, center=norm_bias, dtype=dtype, name="final_layer_norm")
        pooler = use_pooler and Dense(
            hidden_size, activation="tanh", kernel_initializer=init, dtype=dtype, name="pooler"
        )

        # === Functional graph ===
        stack = _Stack(token_embedding, segment_embedding, position_embedding,
                       embeddings_layer_norm, embeddings_dropout, projection, tuple(blocks),
                       pooler, num_layers, type_vocab_size, final_layer_norm or None,
                       relative_embedding or None, config.project_before_norm,
                       config.mask_embeddings)
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        outputs = stack(inputs)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        if dtype is not None:
            # Keras' Functional drops `dtype`: the encoder would report (and serialize) the
            # global policy, so its heads, its config and `cast_for_inference` would see
            # float32 for a mixed_bfloat16 encoder.
            self.dtype_policy = dtype

        # === Config ===
        self.encoder_config = config
        self.transposed_kernels = transposed_kernels
        self.token_embedding = token_embedding
        self.segment_embedding = segment_embedding
        self.position_embedding = position_embedding or None  # None: rotary positions
        self.embeddings_layer_norm = embeddings_layer_norm
        self._stack = stack  # not a Layer: Keras tracks (and saves) the layers through the graph

    @property
    def pooler(self):
        """The tanh dense layer on [CLS] that gives `pooled_output`; None without one."""
        return self._stack.pooler or None

    def call(self, inputs, training=None, mask=None, output_positions=None, unpadded=True):
        """The functional graph in training; with `output_positions`, the shortcut `_Stack`
        describes. Inference (training falsy) runs `unpadded` unless told not to: the blocks'
        dense work on the real tokens alone (`packing.py`), padded rows of the outputs 0."""
        unpadded = bool(unpadded and not training)
        if output_positions is None and not unpadded:
            return super().call(inputs, training=training, mask=mask)
        return self._stack(inputs, output_positions, training=training, unpadded=unpadded)

    def compute_output_spec(self, inputs, training=None, mask=None, output_positions=None,
                            unpadded=True):
        spec = super().compute_output_spec(inputs)
        if output_positions is None:
            return spec
        last = spec["sequence_output"]
        rows = 0 if _no_rows(output_positions) else output_positions.shape[1]
        short = keras.KerasTensor((last.shape[0], rows, last.shape[2]), dtype=last.dtype)
        return dict(spec, sequence_output=short, encoder_outputs=[
            *spec["encoder_outputs"][:-1], short])

    def get_config(self):
        return dict(name=self.name, trainable=self.trainable,
                    dtype=keras.dtype_policies.serialize(self.dtype_policy),
                    **self.encoder_config.to_dict(), transposed_kernels=self.transposed_kernels)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    @property
    def head_dtype_policy(self):
        """The dtype policy of task heads over this encoder: its own (float32, or mixed
        precision with float32 variables), float32 when its variables are 16-bit (the
        inference copies `cast_for_inference` makes, whose heads stay float32).

        >>> encoder = BertEncoder.from_preset("bert_tiny", vocab_size=100, dtype="bfloat16")
        >>> encoder.head_dtype_policy.name
        'float32'
        """
        if self.dtype_policy.variable_dtype == "float32":
            return self.dtype_policy
        return keras.dtype_policies.get("float32")

    @property
    def max_sequence_length(self):
        """The longest input this encoder takes: its positions after the offset (rotary
        positions: max_positions, the length it was trained for)."""
        return self.max_positions - self.position_offset

    @property
    def architecture(self):
        """The constructor arguments that define the weights' shapes and the math (a dict)."""
        return self.encoder_config.to_dict()

    @classmethod
    def from_preset(cls, name, vocab_size=DEFAULT_VOCAB_SIZE, **overrides):
        """A randomly initialised encoder of a preset size (`bert_keras.PRESETS`, EncoderConfigs);
        `overrides` change any EncoderConfig field.

        >>> import bert_keras as bk
        >>> bk.BertEncoder.from_preset("bert_L-2_H-128", vocab_size=100).num_layers
        2
        """
        if name not in PRESETS:
            raise ValueError(f"Unknown preset {name!r}; choose one of {sorted(PRESETS)}.")
        return cls(PRESETS[name].replace(vocab_size=vocab_size), **overrides)

    @classmethod
    def from_pretrained(cls, path, dtype=None, **overrides):
        """Loads a Hugging Face, Google TF1, or bert_keras checkpoint directory; `overrides`
        change settings that do not change the weights' shapes, such as `dropout`.

        >>> import bert_keras as bk  # doctest: +SKIP
        >>> encoder = bk.BertEncoder.from_pretrained("path/to/all-MiniLM-L6-v2")  # doctest: +SKIP
        """
        encoder = cls(dtype=dtype, **{**checkpoints.read_encoder_config(path), **overrides})
        fmt, tensors = checkpoints.read_tensors(path)
        name_map = checkpoints.encoder_name_map(fmt, tensors, encoder, path)
        checkpoints.assign_weights(encoder, name_map, tensors, path)
        return encoder

    def transformers_spec(self, generator=False):
        """The bare `<Family>Model` with its pooler (`bk.save_transformers`)."""
        no_generator(generator, type(self).__name__)
        return TransformersSpec(self, self, "Model", reads_pooler=True, prefixed=False)

    def check_tokenizer(self, tokenizer, source):
        """InputError naming both sizes unless `tokenizer`'s ids fit this encoder's embedding
        rows: a wrong vocab file otherwise trains on garbage ids (fewer entries than rows) or
        fails mid-fit in a gather (more). A few extra rows (< 1%, padding) are accepted.

        >>> import bert_keras as bk
        >>> encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=5000)
        >>> encoder.check_tokenizer(bk.BertTokenizer("bert_keras/assets/vocab.txt"), "ckpt")
        Traceback (most recent call last):
        ...
        bert_keras.errors.InputError: ckpt: the vocab (bert_keras/assets/vocab.txt) has 7,887 \
entries but the encoder's token embedding has 5,000 rows: the vocab does not belong to this \
checkpoint.
        """
        rows, entries = self.vocab_size, tokenizer.vocab_size
        if entries > rows or rows - entries > rows // 100:
            raise InputError(
                f"{source}: the vocab ({tokenizer.vocab_file}) has {entries:,} entries but the "
                f"encoder's token embedding has {rows:,} rows: the vocab does not belong to "
                "this checkpoint.")

    def save_pretrained(self, path, tokenizer=None):
        """Writes `bert_keras.json`, `model.safetensors` and (with a tokenizer) `vocab.txt`.

        The weights are keyed by their Keras variable paths (`transformer_layer_0/attention/
        qkv/kernel`, ...), so the file does not depend on Python class names. The directory
        loads with `BertEncoder.from_pretrained` and `BertTokenizer.from_pretrained`.
        """
        own.save_encoder(self, path, tokenizer)


def _architecture_attribute(name):
    return property(lambda self: getattr(self.encoder_config, name),
                    doc=f"The architecture's {name} (`EncoderConfig.{name}`).")


for _name in _CONFIG_FIELDS:  # encoder.num_layers, encoder.hidden_size, ...
    setattr(BertEncoder, _name, _architecture_attribute(_name))
