"""Pre-split words and their tags in `fit`, `evaluate` and `predict` of a token classifier
(CoNLL-style data; transformers' `is_split_into_words`).

Each sentence is tokenized as its words joined by spaces, the text a served request holds,
and each word's tag goes on its first piece (`featurizer.tagging_features`: the rows
`tools/finetune.py --task=tagging` trains on); predictions come back one row per word.

Words are a list of sentences, each a list of strings (or a 1-D object array of such lists,
as a DataFrame column holds them, or a 2-D string `tf.RaggedTensor`); tags are the same
shape, class ids or the model's label names. (A tuple of two lists of strings stays a pair
of texts: `text_inputs`.)

>>> is_words([["Jesus", "wept", "."], ["Amen"]]), is_words(["Jesus wept."])
(True, False)
>>> examples = tagged_examples([["Jesus", "wept"]], [["B-PER", 0]], ["O", "B-PER"], "Tagger")
>>> examples[0].tags
['B-PER', 'O']
"""

import numbers

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning import batching
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.tasks.tagging import featurizer
from bert_keras.tasks.tagging.reader import TaggingExample
from bert_keras.tasks.text_inputs import DEFAULT_BATCH_SIZE


def is_words(x):
    """Whether `x` is a list of sentences of words (not texts, not a pair of texts)."""
    if isinstance(x, tf.RaggedTensor):
        return x.dtype == tf.string and x.shape.rank == 2
    if isinstance(x, np.ndarray) and x.dtype.kind == "O" and x.ndim == 1:
        x = list(x)
    return (isinstance(x, list) and len(x) > 0
            and all(isinstance(row, (list, tuple)) for row in x)
            and any(isinstance(word, (str, bytes)) for row in x for word in row))


def _rows(x):
    """Words or tags as a list of rows."""
    return x.to_list() if isinstance(x, tf.RaggedTensor) else list(x)


def sentences(x):
    """`x` (is_words) as lists of str; ValueError naming the first item that is not one."""
    out = []
    for i, row in enumerate(_rows(x)):
        words = []
        for j, word in enumerate(row):
            if isinstance(word, bytes):
                word = word.decode("utf-8")
            if not isinstance(word, str):
                raise ValueError(f"Word {j} of sentence {i} is {word!r} "
                                 f"({type(word).__name__}), not a string.")
            words.append(word)
        out.append(words)
    return out


def _tag_name(tag, names, owner, where):
    if isinstance(tag, (str, bytes)):
        tag = tag.decode("utf-8") if isinstance(tag, bytes) else tag
        if tag in names:
            return tag
        known = names if len(names) <= 20 else names[:20] + ["..."]
        raise ValueError(f"{owner}: tag {tag!r} of {where} is not one of its labels {known}.")
    if isinstance(tag, numbers.Integral) and 0 <= tag < len(names):
        return names[int(tag)]
    raise ValueError(f"{owner}: tag {tag!r} of {where} is not a class id in "
                     f"[0, {len(names)}) nor a label name.")


def tagged_examples(words, tags, names, owner):
    """TaggingExamples of `words` (lists of str) with `tags` (ids or names, one per word)
    as label names; ValueError naming the first sentence or tag that does not fit."""
    if tags is None:
        return [TaggingExample(w) for w in words]
    tags = _rows(tags)
    if len(tags) != len(words):
        raise ValueError(f"{owner}: {len(words)} sentence(s) of words but {len(tags)} "
                         "row(s) of tags.")
    examples = []
    for i, (row, row_tags) in enumerate(zip(words, tags)):
        row_tags = list(np.asarray(row_tags, dtype=object).reshape(-1))
        if len(row_tags) != len(row):
            raise ValueError(f"{owner}: sentence {i} has {len(row)} words but {len(row_tags)} "
                             "tags; give one tag per word.")
        examples.append(TaggingExample(row, [
            _tag_name(t, names, owner, f"word {j} of sentence {i}")
            for j, t in enumerate(row_tags)]))
    return examples


def word_features(preprocessor, words, tags, names, owner):
    """The rows of `featurizer.tagging_features` for words (and tags) of a model's
    preprocessor (its tokenizer and seq_length)."""
    examples = tagged_examples(sentences(words), tags, names, owner)
    label_map = LabelMap(names) if tags is not None else None
    return featurizer.tagging_features(examples, preprocessor.tokenizer, preprocessor.seq_length,
                                     label_map)


def word_dataset(rows, batch_size=None, shuffle=False):
    """Batches of `word_features` rows for Keras: (inputs, labels) when tagged, each batch
    padded to its longest row, shuffled from length buckets every epoch when `shuffle`."""
    return batching.make_dataset(rows, batch_size or DEFAULT_BATCH_SIZE,
                                 label_keys="labels" if "labels" in rows else None,
                                 shuffle=shuffle)


def split_off(words, tags, fraction):
    """`((words, tags), (validation_words, validation_tags))`: the last `fraction` split off,
    as Keras' `validation_split` does with arrays."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split must be in (0, 1), got {fraction!r}.")
    words = sentences(words)
    cut = int(len(words) * (1.0 - fraction))
    if cut == 0:
        raise ValueError(f"validation_split={fraction!r} of {len(words)} sentences leaves no "
                         "training sentences.")
    if tags is None:
        return (words[:cut], None), (words[cut:],)
    tags = _rows(tags)
    return (words[:cut], tags[:cut]), (words[cut:], tags[cut:])


def word_logits(model, rows, batch_size=None):
    """float32 tf.RaggedTensor (sentences, (words), C): each word's logits at its first
    piece (a long sentence's words from all its rows); NaN for a word without pieces (only
    control characters, say)."""
    logits = batching.predict(model, rows, batch_size or DEFAULT_BATCH_SIZE, token_outputs=True)
    per_word = featurizer.word_predictions([np.asarray(row, np.float32) for row in logits],
                                         rows["word_index"], rows["num_words"], default=np.nan,
                                         example_index=rows["example_index"])
    return tf.RaggedTensor.from_row_lengths(
        np.concatenate(per_word) if per_word else np.zeros((0, model.num_classes), np.float32),
        [len(row) for row in per_word])
