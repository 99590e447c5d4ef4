"""Token tagging (NER, POS): a tag per word, predicted at the word's first piece.

`model.BertTokenClassifier` (the Keras task model), `crf` (its optional linear-chain CRF:
likelihood, Viterbi, marginals), `decoding` (a tag per word: argmax, or the CRF over a whole
text), `word_inputs` (pre-split words and their tags in `fit` / `predict`: the rows `task`
featurizes for tools/finetune.py too), `serving` (the served tagger's graph: long texts cut
into rows, given words, entities), `options.TaggingOptions` (--crf, --crf_constraints) and
`task.Tagging` (CoNLL files, entity F1, the serving functions).
"""

from bert_keras.tasks.tagging.model import BertTokenClassifier
from bert_keras.tasks.tagging.task import Tagging

__all__ = ["BertTokenClassifier", "Tagging"]
