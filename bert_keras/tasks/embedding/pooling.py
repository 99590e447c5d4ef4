"""`SentencePooling`: one vector per text from the encoder's sequence output, as
sentence-transformers pools it.

Shape legend: B batch, T sequence length, H hidden size.

Poolings (`POOLINGS`), each over the rows of real tokens (`input_mask` 1), [CLS] and [SEP]
included, as sentence-transformers counts them:
  mean  the average of the sequence output rows (sentence-transformers' default, and
        all-MiniLM-L6-v2's),
  cls   the [CLS] (<s>) row of the sequence output (not the pooler's tanh dense),
  max   the elementwise maximum;
then, with `normalize`, each vector divided by its L2 norm (sentence-transformers'
`Normalize`), so that a dot product is the cosine similarity.

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
>>> [round(float(v), 4) for v in SentencePooling("cls", normalize=True)(x, mask)[0]]
[0.4472, 0.8944]
>>> SentencePooling("sum")
Traceback (most recent call last):
...
ValueError: SentencePooling: pooling must be one of ('mean', 'cls', 'max'), got 'sum'.
"""

import keras
from keras import ops

POOLINGS = ("mean", "cls", "max")


def check_pooling(pooling, owner="SentencePooling"):
    """ValueError naming `pooling` and the choices unless it is one of `POOLINGS`."""
    if pooling not in POOLINGS:
        raise ValueError(f"{owner}: pooling must be one of {POOLINGS}, got {pooling!r}.")


@keras.saving.register_keras_serializable(package="bert_keras")
class SentencePooling(keras.layers.Layer):
    """Pools `sequence_output` (B, T, H) over `input_mask` (B, T) into (B, H), in float32.

    Args:
      pooling: "mean", "cls" or "max" (see the module docstring).
      normalize: divide each vector by its L2 norm.

    `call(sequence_output, input_mask)`. For "cls" only the first row is read: the sequence
    output may hold only that row (the encoder's `output_positions`).
    """

    def __init__(self, pooling="mean", normalize=False, **kwargs):
        kwargs.setdefault("dtype", "float32")  # the pooled sums and norms of bf16 encoders too
        super().__init__(**kwargs)
        check_pooling(pooling)
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.supports_masking = False

    def call(self, sequence_output, input_mask):
        x = ops.cast(sequence_output, "float32")  # (B, T, H)
        if self.pooling == "cls":
            pooled = x[:, 0]  # (B, H)
        else:
            mask = ops.cast(input_mask, "float32")[:, :, None]  # (B, T, 1)
            if self.pooling == "mean":
                # sentence-transformers: sum / clamp(count, min=1e-9)
                pooled = ops.sum(x * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1e-9)
            else:  # max: padding rows set to -1e9 first, as sentence-transformers does
                pooled = ops.max(ops.where(mask > 0, x, -1e9), axis=1)
        if self.normalize:  # torch.nn.functional.normalize: x / max(||x||, 1e-12)
            norm = ops.sqrt(ops.sum(ops.square(pooled), axis=-1, keepdims=True))
            pooled = pooled / ops.maximum(norm, 1e-12)
        return pooled

    def compute_output_shape(self, sequence_output_shape, input_mask_shape=None):
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self):
        return dict(super().get_config(), pooling=self.pooling, normalize=self.normalize)
