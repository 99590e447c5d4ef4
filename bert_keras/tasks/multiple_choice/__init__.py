"""Multiple choice (SWAG, transformers' `*ForMultipleChoice`): a context and K endings, one
score per ending.

`model.BertMultipleChoice` (the Keras task model), `choice_inputs` (contexts and their
choices in `fit` / `predict`), `featurizer` (each choice packed as the pair (context,
ending), (B, K, T) batches), `reader` (SWAG-style CSV/TSV and JSON lines), `options` (the
ending columns and choices field), `head_checkpoint` (the families' `*ForMultipleChoice`
heads) and `task.MultipleChoice` (accuracy, the serving function).
"""

from bert_keras.tasks.multiple_choice.model import BertMultipleChoice
from bert_keras.tasks.multiple_choice.task import MultipleChoice

__all__ = ["BertMultipleChoice", "MultipleChoice"]
