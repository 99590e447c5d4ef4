"""Fine-tuning examples -> model features, every task type's featurizer in one namespace: the
public face `bk.task_features`, nothing but names re-exported. Like `registry.py` it imports
task packages, so no package imports it.

* `classification_features` (`tasks/classification/featurizer.py`): single sentences or pairs,
  packed by `BertPreprocessor`; `classification_labels` their targets;
* `tagging_features` (`tasks/tagging/featurizer.py`): pre-split words, a tag on each word's
  first piece, long sentences in further rows; `word_predictions` maps token values back to
  words;
* `span_features` (`tasks/span_qa/featurizer.py`): SQuAD questions and windows of contexts;
* `num_features` (`data/finetuning/features.py`); batching for fit and predict:
  `bert_keras.data.finetuning.batching`.

Example:
    >>> import bert_keras as bk
    >>> from bert_keras.data.pretraining.pipeline import default_vocab_file
    >>> tok = bk.WordPieceTokenizer(default_vocab_file())
    >>> train = bk.finetuning_data.load_bundled_task("bible_paraphrase", "train")[:8]
    >>> feats = bk.task_features.classification_features(train, tok, 64,
    ...                                                  bk.LabelMap.from_examples(train))
    >>> bk.task_features.num_features(feats), feats["labels"].shape
    (8, (8,))
"""

from bert_keras.data.finetuning.features import num_features
from bert_keras.names import IGNORE_LABEL
from bert_keras.tasks.classification.featurizer import (
    classification_features,
    classification_labels,
)
from bert_keras.tasks.span_qa.featurizer import span_features
from bert_keras.tasks.tagging.featurizer import tagging_features, word_predictions

__all__ = [
    "IGNORE_LABEL",
    "classification_labels",
    "classification_features",
    "tagging_features",
    "word_predictions",
    "span_features",
    "num_features",
]
