"""EmbedderExportOptions: the flags of tools/export.py that make sentence embeddings of a bare
encoder's export (`--encoder_dir=... --pooling=mean --normalize`): the embedder it serves.

>>> EmbedderExportOptions().pooling is None
True
>>> EmbedderExportOptions(pooling="sum")
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --pooling='sum' is not one of ('mean', 'cls', 'max').
>>> EmbedderExportOptions(normalize=True)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --normalize needs --pooling (one of ('mean', 'cls', 'max')).
"""

import dataclasses

from bert_keras.configs import Config, check, option
from bert_keras.errors import InputError
from bert_keras.tasks.embedding.model import BertEmbedder
from bert_keras.tasks.embedding.pooling import POOLINGS


@dataclasses.dataclass(frozen=True)
class EmbedderExportOptions(Config):
    """The pooling, normalization and cut of the embedder an encoder's export serves; no
    pooling: the bare encoder."""

    pooling: str = option(None, "Export sentence embeddings (serving_default text -> "
                          "embeddings [B, H]) pooled this way over the real tokens: mean "
                          "(sentence-transformers' recipe), cls ([CLS]'s sequence output row) "
                          "or max; default: the bare encoder.", choices=POOLINGS)
    normalize: bool = option(False, "With --pooling: L2-normalize the embeddings (dot product = "
                             "cosine; sentence-transformers' Normalize).")
    truncate_dim: int = option(None, "With --pooling: keep each embedding's first D values, "
                               "cut before --normalize (sentence-transformers' truncate_dim, "
                               "for a Matryoshka-trained encoder); default: all.")

    def validate(self):
        check(self.pooling is None or self.pooling in POOLINGS,
              f"--pooling={self.pooling!r} is not one of {POOLINGS}.")
        check(not self.normalize or self.pooling,
              f"--normalize needs --pooling (one of {POOLINGS}).")
        check(self.truncate_dim is None or self.pooling,
              f"--truncate_dim needs --pooling (one of {POOLINGS}).")
        check(self.truncate_dim is None or self.truncate_dim >= 1,
              f"--truncate_dim must be positive, got {self.truncate_dim}.")

    def embedder(self, encoder, source):
        """The BertEmbedder of `encoder` (a BertEncoder read from `source`, named in errors;
        None: one of user code) that these options make; `encoder` itself without --pooling."""
        if not self.pooling:
            return encoder
        hidden_size = encoder.encoder_config.hidden_size
        if self.truncate_dim and self.truncate_dim > hidden_size:
            raise InputError(f"--truncate_dim={self.truncate_dim} is more than the hidden "
                             f"size {hidden_size} of {source or 'the encoder'}.")
        return BertEmbedder(encoder, pooling=self.pooling, normalize=self.normalize,
                            truncate_dim=self.truncate_dim)
