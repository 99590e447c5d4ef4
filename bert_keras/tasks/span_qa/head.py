"""`SpanHead`: the start and end logits of extractive question answering (the head of
`BertSpanQA`; transformers' `*ForQuestionAnswering` head, `head_checkpoint`).

Shape legend: B batch, T sequence length, H hidden size.
"""

import keras
import numpy as np  # noqa: F401  (the doctests use it)
from keras import ops

from bert_keras.models.heads import FamilyHidden
from bert_keras.models.layers.dense import Dense, dense_initializer

# Logit of a padding position in SpanHead: exp() of it underflows to exactly 0 in
# float32, yet it is finite, so a cross entropy never sees inf - inf.
PADDING_LOGIT = -1e9


@keras.saving.register_keras_serializable(package="bert_keras")
class SpanHead(FamilyHidden, keras.layers.Layer):
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
            2, kernel_initializer=dense_initializer(self.initializer_range), dtype="float32",
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
