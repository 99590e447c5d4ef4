"""How tagging reads a TFDS dataset's rows (`data.finetuning.tfds`): the words from a
Sequence of strings (conll2003's `tokens`), the tags from a Sequence of ClassLabel or strings
(its `ner`); other features by --text_a_field (the words) and --label_field (the tags)."""

from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.data.finetuning.tfds import DEFAULT_LABEL_FIELD, DEFAULT_TEXT_FIELD, decoded
from bert_keras.errors import InputError
from bert_keras.tasks.tagging.reader import TaggingExample

# The feature names that make a dataset a tagging one when --task is not given.
WORD_FEATURES = ("tokens", "words")
TAG_FEATURES = ("ner", "ner_tags", "tags", "labels")
TAG_KINDS = ("seq:class", "seq:text")


def reads_words_and_tags(dataset):
    """Whether the dataset has a Sequence of words and a Sequence of tags by their usual
    names."""
    kinds = dataset.kinds
    return (any(kinds.get(k) == "seq:text" for k in WORD_FEATURES)
            and any(kinds.get(k, "").startswith("seq:") for k in TAG_FEATURES))


class WordTagReader:
    """Reads rows as TaggingExamples: `words` and `tags` name the features; refused in one
    line when the features do not say them."""

    def __init__(self, dataset, *, text_a_field=None, text_b_field=None, label_field=None):
        self.dataset = dataset
        kinds = dataset.kinds
        words = [k for k in WORD_FEATURES if kinds.get(k) == "seq:text"] or [
            k for k, v in kinds.items() if v == "seq:text"]
        tags = [k for k in TAG_FEATURES if kinds.get(k) in TAG_KINDS] or [
            k for k, v in kinds.items() if v == "seq:class"]
        self.words = dataset.pick(text_a_field, DEFAULT_TEXT_FIELD, words[:1], "text_a_field",
                                  "tagging reads the words from a Sequence of strings, found "
                                  "none")
        self.tags = dataset.pick(label_field, DEFAULT_LABEL_FIELD, tags[:1], "label_field",
                                 "tagging reads the tags from a Sequence of ClassLabel or "
                                 "strings, found none")
        for key, wanted in ((self.words, ("seq:text",)), (self.tags, TAG_KINDS)):
            if kinds[key] not in wanted:
                dataset.refuse(f"tagging reads {key!r} as a Sequence, but it is {kinds[key]}.")
        self.tag_names = dataset.label_names(self.tags)

    def label_map(self):
        """The LabelMap of the tags' ClassLabel names (None: string tags)."""
        return None if self.tag_names is None else LabelMap(self.tag_names)

    def example(self, row, where, split):
        words = [decoded(w) for w in row[self.words]]
        names = self.tag_names
        tags = [names[int(t)] if names else decoded(t) for t in row[self.tags]]
        if len(words) != len(tags):
            raise InputError(f"{where}: {len(words)} tokens but {len(tags)} {self.tags} tags")
        return TaggingExample(words, tags, source=where)
