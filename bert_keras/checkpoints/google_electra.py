"""Google's TF1 ELECTRA checkpoints (google-research/electra): the discriminator under
`electra/` with BERT's layer names, `electra/embeddings_project` when the embedding width
differs from the hidden size, no pooler; the generator under `generator/` sharing
`electra/embeddings`. The published directories hold no config file, so the architecture is
read from the tensor shapes; the head count, which no shape shows, comes from a `config.json`
beside the checkpoint (the ElectraConfig that transformers' converter asks for) or else from
ELECTRA's 64-wide heads at every published size (small 256/4, base 768/12, large 1024/16)."""

import json
import os
import re

from bert_keras.checkpoints.google_bert import embedding_names, layer_names
from bert_keras.errors import InputError

MARKER = "electra/embeddings/word_embeddings"
HEAD_SIZE = 64


def encoder_config(shapes, path, scope="electra"):
    """The BertEncoder arguments of the `scope` encoder, from {variable name: shape}."""
    vocab_size, embedding_size = shapes[MARKER]
    layers = {int(m.group(1)) for n in shapes if (m := re.match(rf"{scope}/encoder/layer_(\d+)/", n))}
    if not layers:
        raise InputError(f"{path}: an ELECTRA checkpoint without {scope}/encoder/layer_* variables.")
    layer = f"{scope}/encoder/layer_0"
    hidden_size, intermediate_size = shapes[f"{layer}/intermediate/dense/kernel"]
    config = {}
    if os.path.exists(os.path.join(path, "config.json")):
        with open(os.path.join(path, "config.json")) as f:
            config = json.load(f)
    return dict(
        vocab_size=vocab_size, num_layers=len(layers), hidden_size=hidden_size,
        num_heads=config.get("num_attention_heads", max(1, hidden_size // HEAD_SIZE)),
        intermediate_size=intermediate_size,
        activation="gelu",  # ELECTRA's modeling.py uses the exact (erf) GELU
        dropout=config.get("hidden_dropout_prob", 0.1),
        attention_dropout=config.get("attention_probs_dropout_prob", 0.1),
        max_positions=shapes["electra/embeddings/position_embeddings"][0],
        type_vocab_size=shapes["electra/embeddings/token_type_embeddings"][0],
        layer_norm_epsilon=1e-12, initializer_range=0.02, use_pooler=False,
        embedding_size=None if embedding_size == hidden_size else embedding_size,
    )


def encoder_names(arch, scope="electra"):
    """Our variable paths -> TF1 ELECTRA names of the `scope` ("electra" or "generator")
    encoder; the embeddings are always `electra/embeddings` (shared)."""
    names = embedding_names("electra")
    if arch.get("embedding_size") is not None:
        names.update({"embedding_projection/kernel": [f"{scope}/embeddings_project/kernel"],
                      "embedding_projection/bias": [f"{scope}/embeddings_project/bias"]})
    for i in range(arch["num_layers"]):
        names.update(layer_names(f"transformer_layer_{i}", f"{scope}/encoder/layer_{i}"))
    return names
