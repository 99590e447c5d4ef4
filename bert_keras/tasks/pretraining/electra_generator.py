"""ELECTRA's generator (`electra.py`): its encoder config beside a discriminator, its masked-LM
head tied to the discriminator's token embeddings, the tokens it samples and where they are
written into the inputs.

Shape legend: B batch, T sequence length, P masked positions, V vocabulary.
"""

import keras
from keras import ops

from bert_keras.models.encoder.config import EncoderConfig
from bert_keras.tasks.pretraining import heads


def generator_config(discriminator, size, layers=1.0):
    """The EncoderConfig of the generator for a discriminator `BertEncoder`: `size` (0, 1] of
    its hidden and feed-forward widths (ELECTRA: 1/4 to 1/3), heads of the discriminator's
    head width, `layers` (0, 1] of its depth (at least one layer; ELECTRA: all), embeddings of
    the discriminator's width (projected when the widths differ).

    >>> import bert_keras as bk
    >>> d = bk.BertEncoder.from_preset("electra_small", vocab_size=100)
    >>> g = generator_config(d, 0.25)
    >>> (g.hidden_size, g.num_heads, g.intermediate_size, g.embedding_size)
    (64, 1, 256, 128)
    """
    if not 0.0 < size <= 1.0:
        raise ValueError(f"generator_size must be in (0, 1], got {size}.")
    if not 0.0 < layers <= 1.0:
        raise ValueError(f"generator_layers must be in (0, 1], got {layers}.")
    arch = discriminator.architecture
    head_width = arch["hidden_size"] // arch["num_heads"]
    hidden = max(head_width, int(round(arch["hidden_size"] * size / head_width)) * head_width)
    width = arch["embedding_size"] or arch["hidden_size"]
    return EncoderConfig(**{
        **arch, "hidden_size": hidden, "num_heads": hidden // head_width,
        "intermediate_size": max(1, int(round(arch["intermediate_size"] * size))),
        "embedding_size": None if width == hidden else width, "num_layer_groups": None,
        "num_layers": max(1, int(round(arch["num_layers"] * layers))),
        "use_pooler": False,
    })


def tied_masked_lm_head(discriminator, width, name):
    """A `MaskedLMHead` over inputs `width` wide, projecting onto the discriminator's token
    embeddings, built (so an optimizer can be built for every variable before the first step)."""
    head = heads.MaskedLMHead(
        discriminator.token_embedding, activation=discriminator.activation,
        layer_norm_epsilon=discriminator.layer_norm_epsilon,
        initializer_range=discriminator.initializer_range,
        dtype=discriminator.head_dtype_policy, name=name)
    head.build((None, None, width))
    return head


def sample_tokens(logits, seed_generator):
    """One token per row of `logits` (..., V) drawn from softmax(logits), by TensorFlow's
    categorical sampler: one random number per row where Gumbel-max (Google's code) draws V
    and takes two logs of each, 31 against 86 ms at 640 x 30,522;
    the same distribution."""
    rows = ops.reshape(logits, (-1, ops.shape(logits)[-1]))
    draws = keras.random.categorical(rows, 1, dtype="int32", seed=seed_generator)  # (rows, 1)
    return ops.reshape(draws, ops.shape(logits)[:-1])


def scatter_positions(ids, positions, values, weights):
    """`ids` (B, T) with `values` (B, P) written at `positions` (B, P) where `weights` > 0
    (padding slots of the masked positions, weight 0, write nothing); a position listed
    twice gets the larger of its values, never their sum (ids are >= 0)."""
    length = ops.shape(ids)[1]
    hits = ops.one_hot(positions, length, dtype="int32") * ops.cast(
        weights > 0, "int32")[:, :, None]  # (B, P, T)
    written = ops.sum(hits, axis=1) > 0  # (B, T)
    value = ops.max(hits * ops.cast(values, "int32")[:, :, None], axis=1)  # (B, T)
    return ops.where(written, value, ids)


__all__ = ["generator_config", "sample_tokens", "scatter_positions", "tied_masked_lm_head"]
