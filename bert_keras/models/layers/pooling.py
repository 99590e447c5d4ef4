"""`SentencePooling`: one vector per text from the encoder's sequence output, over the rows
of its real tokens. The sentence embedder pools with it, and so does the classifier wherever
it does not read the pooler.

Shape legend: B batch, T sequence length, H hidden size.

Poolings (`POOLINGS`), each over the rows of real tokens (`input_mask` 1), [CLS] and [SEP]
included, as sentence-transformers counts them:
  mean       the average of the sequence output rows (sentence-transformers' default, and
             all-MiniLM-L6-v2's),
  cls        the [CLS] (<s>) row of the sequence output (not the pooler's tanh dense),
  max        the elementwise maximum,
  attention  a learned score per row (`score`, a Dense(1) without bias: a softmax ignores a
             shared offset), softmax over the real rows, the rows' weighted sum; the score
             kernel starts at zero, so an untrained layer is mean pooling;
then, with `truncate_dim` D, each vector cut to its first D values (a Matryoshka
embedding's prefix), and with `normalize`, each vector divided by its L2 norm
(sentence-transformers' `Normalize`), so that a dot product is the cosine similarity. The cut
comes first, as sentence-transformers' `encode(truncate_dim=D, normalize_embeddings=True)`
does: the prefix is a unit vector, not a slice of one.

Example:
>>> import numpy as np
>>> x = np.array([[[1., 2.], [3., 4.], [9., 9.]]], "float32")  # (1, 3, 2): one text of 2 tokens
>>> mask = np.array([[1, 1, 0]], "int32")
>>> SentencePooling("mean")(x, mask).numpy().tolist()
[[2.0, 3.0]]
>>> SentencePooling("max")(x, mask).numpy().tolist()
[[3.0, 4.0]]
>>> SentencePooling("cls")(x, mask).numpy().tolist()
[[1.0, 2.0]]
>>> SentencePooling("attention")(x, mask).numpy().tolist()  # untrained: the mean
[[2.0, 3.0]]
>>> [round(float(v), 4) for v in SentencePooling("cls", normalize=True)(x, mask)[0]]
[0.4472, 0.8944]
>>> SentencePooling("cls", normalize=True, truncate_dim=1)(x, mask).numpy().tolist()
[[1.0]]
>>> SentencePooling("sum")
Traceback (most recent call last):
...
ValueError: SentencePooling: pooling must be one of ('mean', 'cls', 'max', 'attention'), got 'sum'.
"""

import numbers

import keras
from keras import ops

from bert_keras.models.layers.dense import Dense

POOLINGS = ("mean", "cls", "max", "attention")

# The value of a padding row before a max or a softmax: never the maximum, and exp() of it
# is exactly 0 in float32, yet it is finite (no inf - inf).
_PADDING = -1e9


@keras.saving.register_keras_serializable(package="bert_keras")
class SentencePooling(keras.layers.Layer):
    """Pools `sequence_output` (B, T, H) over `input_mask` (B, T) into (B, H), in float32.

    Args:
      pooling: "mean", "cls", "max" or "attention" (see the module docstring).
      normalize: divide each vector by its L2 norm.
      truncate_dim: keep each vector's first `truncate_dim` values (before `normalize`);
        None keeps all H.

    `call(sequence_output, input_mask)`: (B, truncate_dim or H). For "cls" only the first
    row is read: the sequence output may hold only that row (the encoder's
    `output_positions`). Only "attention" has weights (`score/kernel`, (H, 1)).
    """

    def __init__(self, pooling="mean", normalize=False, truncate_dim=None, **kwargs):
        kwargs.setdefault("dtype", "float32")  # the pooled sums and norms of bf16 encoders too
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"SentencePooling: pooling must be one of {POOLINGS}, "
                             f"got {pooling!r}.")
        if truncate_dim is not None and (isinstance(truncate_dim, bool)
                                         or not isinstance(truncate_dim, numbers.Integral)
                                         or truncate_dim < 1):
            raise ValueError(f"SentencePooling: truncate_dim must be a positive integer or "
                             f"None, got {truncate_dim!r}.")
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.truncate_dim = None if truncate_dim is None else int(truncate_dim)
        self.supports_masking = False

    def build(self, sequence_output_shape, input_mask_shape=None):
        width = sequence_output_shape[-1]
        if self.truncate_dim is not None and width is not None and self.truncate_dim > width:
            raise ValueError(f"SentencePooling: truncate_dim={self.truncate_dim} is more than "
                             f"the {width} values of each vector.")
        if self.pooling == "attention":
            self.score = Dense(1, use_bias=False, kernel_initializer="zeros",
                               dtype=self.dtype_policy, name="score")
            self.score.build(tuple(sequence_output_shape))

    def call(self, sequence_output, input_mask):
        x = ops.cast(sequence_output, "float32")  # (B, T, H)
        if self.pooling == "cls":
            pooled = x[:, 0]  # (B, H)
        else:
            mask = ops.cast(input_mask, "float32")[:, :, None]  # (B, T, 1)
            if self.pooling == "mean":
                # sentence-transformers: sum / clamp(count, min=1e-9)
                pooled = ops.sum(x * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1e-9)
            elif self.pooling == "max":  # as sentence-transformers: padding rows -1e9 first
                pooled = ops.max(ops.where(mask > 0, x, _PADDING), axis=1)
            else:  # attention
                scores = ops.where(mask > 0, self.score(x), _PADDING)  # (B, T, 1)
                pooled = ops.sum(ops.softmax(scores, axis=1) * x, axis=1)  # (B, H)
        if self.truncate_dim is not None:
            pooled = pooled[:, :self.truncate_dim]  # (B, D)
        if self.normalize:  # torch.nn.functional.normalize: x / max(||x||, 1e-12)
            norm = ops.sqrt(ops.sum(ops.square(pooled), axis=-1, keepdims=True))
            pooled = pooled / ops.maximum(norm, 1e-12)
        return pooled

    def compute_output_shape(self, sequence_output_shape, input_mask_shape=None):
        return (sequence_output_shape[0], self.truncate_dim or sequence_output_shape[-1])

    def get_config(self):
        return dict(super().get_config(), pooling=self.pooling, normalize=self.normalize,
                    truncate_dim=self.truncate_dim)
