"""`TokenClassificationHead`: a tag's logits per token (the head of `BertTokenClassifier`;
transformers' `*ForTokenClassification` head, `head_checkpoint`).

Shape legend: B batch, T sequence length, H hidden size, C classes.
"""

import keras
import numpy as np  # noqa: F401  (the doctests use it)

from bert_keras.models.heads import FamilyHidden, LogitsHead


@keras.saving.register_keras_serializable(package="bert_keras")
class TokenClassificationHead(FamilyHidden, LogitsHead):
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
