"""Token tagging (NER, POS): a tag per word, predicted at the word's first piece.

Served, a text of any length is tagged whole: it is cut into rows of seq_length tokens as
`featurizer.tagging_features` continues a long sentence, in graph ops (`serving`).

Shape legend: B batch, T tokens, C tags, W words of a text, N words of the batch, R rows of
the batch, P pieces of a word.
"""

import collections

import numpy as np
import tensorflow as tf
from absl import logging

from bert_keras import metrics
from bert_keras.data.finetuning import batching
from bert_keras.errors import InputError
from bert_keras.models import head_checkpoints
from bert_keras.tasks.base import Task
from bert_keras.tasks.input_lines import InputLine
from bert_keras.tasks.raw_examples import RawExamples
from bert_keras.tasks.tagging import featurizer, reader, tfds_reader
from bert_keras.tasks.tagging import serving as tagging_serving
from bert_keras.tasks.tagging.crf import check_tag_sequences
from bert_keras.tasks.tagging.model import BertTokenClassifier
from bert_keras.tasks.tagging.options import TaggingOptions
from bert_keras.tasks.task_serving import (
    WARMUP_WINDOWS,
    WindowOptions,
    class_labels,
    listed,
    max_windows,
)

EXAMPLE_WORDS = ["Mr.", "Bumble's", "letter", "went", "to", "Jerusalem", "."]


class Tagging(Task):
    """CoNLL files (`token tag` per line), entity F1 (`--task=tagging`)."""

    name = "tagging"
    output_docs = {
        "tokens": "words of the text (the tokenizer's words, or the given words), '' padding",
        "tags": "predicted tag of each word, '' padding",
        "tag_ids": "index of each word's tag, -1 padding",
        "tag_scores": "probability of each word's tag, 0 padding",
        "token_starts": "character offset of each word in the text, -1 padding",
        "token_ends": "character offset after each word (exclusive), -1 padding",
        "entity_types": "type of each entity of the tags (seqeval's chunks: B-PER I-PER -> "
                        "PER), '' padding",
        "entity_texts": "text of each entity (from its first word to its last), '' padding",
        "entity_starts": "character offset of each entity in the text, -1 padding",
        "entity_ends": "character offset after each entity (exclusive), -1 padding",
        "entity_scores": "mean tag probability of each entity's words, 0 padding",
    }
    options_class = TaggingOptions
    file_formats = ("conll",)
    main_metric = "f1"
    token_outputs = True
    soft_targets = "softmax"  # per scored token (the first piece of each word)
    transformers_head = "ForTokenClassification"
    extension_formats = {".conll": "conll", ".iob": "conll", ".bio": "conll", ".txt": "conll"}
    padded_outputs = ("tokens", "tags", "tag_ids", "tag_scores", "token_starts", "token_ends")
    padding_marker = ("token_starts", -1)
    export_options_class = WindowOptions  # rows of a long text
    ENTITY_FIELDS = ("type", "text", "start", "end", "score")
    input_line_help = ("text; with --words (the tag_words signature), the sentence's words "
                       "separated by spaces, each tagged as given")

    def read_files(self, paths, file_format, labeled=True, options=None, **reader_options):
        return reader.read_conll(paths, tag_column=-1 if labeled else None)

    def tfds_reader(self, dataset, **fields):
        return tfds_reader.WordTagReader(dataset, **fields)

    def reads_tfds(self, dataset, label_field=None):
        return tfds_reader.reads_words_and_tags(dataset)

    def is_labeled(self, examples):
        return all(ex.tags is not None for ex in examples)

    def resolve_config(self, config, train):
        """Refuses training tags that --crf_constraints forbid (they would train on a loss
        of thousands), naming the sentence."""
        options = config.task_options
        if options.crf_constraints != "none":
            labels = self.label_map(train).labels
            try:
                check_tag_sequences([ex.tags for ex in train], labels, options.crf_constraints,
                                    "the training data")
            except ValueError as error:
                raise InputError(str(error)) from None
        return config

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, **unused):
        return featurizer.tagging_features(examples, tokenizer, max_seq_length, label_map)

    def builds(self, model):
        return isinstance(model, BertTokenClassifier)

    def raw_examples(self):  # words, and a tag name per word
        words = [["Paul", "went", "to", "Rome", "."], ["It", "rained"]]
        tags = [["B-PER", "O", "O", "B-LOC", "O"], ["O", "O"]]
        return RawExamples(BertTokenClassifier,
                           dict(num_classes=3, labels=["O", "B-PER", "B-LOC"]),
                           fit=(words, tags), predict=words)

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None, options=None):
        """BertTokenClassifier (with a CRF: `TaggingOptions`), with the head of a fine-tuned
        `*ForTokenClassification` checkpoint when its tags are these (a CRF starts from
        zeros: transformers has none)."""
        options = options or TaggingOptions()
        family = (head_checkpoints.task_head_arguments(checkpoint, "ForTokenClassification")
                  if checkpoint else {})  # the family's head: ModernBERT's dense-gelu-norm
        model = BertTokenClassifier(encoder, len(label_map), dropout=dropout, **family,
                                    labels=list(label_map.labels) if options.crf else None,
                                    crf=options.crf, crf_constraints=options.crf_constraints,
                                    crf_learning_rate_multiplier=(
                                        options.crf_learning_rate_multiplier))
        if checkpoint and head_checkpoints.try_load_head(
                self.load_transformers_head, model, checkpoint, label_map.labels):
            logging.info("Loaded the token classification head of %s", checkpoint)
        return model

    def load_transformers_head(self, model, path):
        BertTokenClassifier.load_transformers_head(model, path)

    def predict(self, model, examples, features_, label_map, options):
        logits = batching.predict(model, features_, options.eval_batch_size, token_outputs=True)
        default = label_map.labels.index("O") if "O" in label_map else 0
        per_word = featurizer.word_predictions(  # NaN: a word without a token
            [np.asarray(row, np.float32) for row in logits], features_["word_index"],
            features_["num_words"], default=np.nan, example_index=features_["example_index"])
        ids = model.word_tags(per_word).to_list()  # the Viterbi path of a CRF tagger
        tags = [label_map.decode([i if i >= 0 else default for i in row]) for row in ids]
        return [dict(words=ex.words, tags=ex.tags, predictions=p)
                for ex, p in zip(examples, tags)], tags

    def score(self, examples, predicted, label_map, glue_task=None):
        gold = [ex.tags for ex in examples]
        result = metrics.entity_scores(gold, predicted)
        result["word_accuracy"] = metrics.accuracy([t for s in gold for t in s],
                                                   [t for s in predicted for t in s])
        return result

    def baselines(self, train, examples, label_map):
        tag = collections.Counter(t for ex in train for t in ex.tags).most_common(1)[0][0]
        gold = [ex.tags for ex in examples]
        pred = [[tag] * len(s) for s in gold]
        return {"majority_tag": tag,
                "majority_word_accuracy": metrics.accuracy(sum(gold, []), sum(pred, [])),
                "majority_entity_f1": metrics.entity_f1(gold, pred)}

    def teacher_metrics(self, predicted, teacher_predicted):
        """The fraction of words tagged alike."""
        return {"teacher_agreement": metrics.accuracy(sum(teacher_predicted, []),
                                                      sum(predicted, []))}

    def serving_labels(self, model, labels):
        return class_labels(model, labels)

    def export_metadata(self, fns):
        return {"max_windows": max_windows(fns)}

    def warmup_longest(self, fns, field, text):
        """`text` repeated over a few rows (at most max_windows), so warmup runs the cutting."""
        target = min(WARMUP_WINDOWS, max_windows(fns))
        per_copy = int(fns.tokenizer.tokenize(tf.constant([text + " " + text])).row_lengths()[0])
        copies = max(1, target * (fns.seq_length - 2) * 2 // max(per_copy, 1))
        while copies > 1:  # at export time, eagerly: the most copies within `target` rows
            longest = " ".join([text] * copies)
            rows = tagging_serving.cut_rows(fns, tf.constant([longest]), max_windows(fns))
            if int(rows.count[0]) <= target:
                return longest
            copies -= 1
        return text

    def prediction_rows(self, outputs):
        """Each text's words and tags, and its entities as a list of dicts (type, text,
        start, end, score) in place of the entity_* arrays."""
        outputs = dict(outputs)
        entity = {f: outputs.pop(f"entity_{f}s") for f in self.ENTITY_FIELDS
                  if f"entity_{f}s" in outputs}
        rows = super().prediction_rows(outputs)
        if entity:
            for i, row in enumerate(rows):
                own = int(np.sum(entity["start"][i] >= 0))
                values = [listed(v[i, :own]) for v in entity.values()]
                row["entities"] = [dict(zip(entity, e)) for e in zip(*values)]
        return [dict(sorted(row.items())) for row in rows]

    def serve(self, fns, texts):
        """Every word of each text tagged, however long (`tagging_serving.tag_words`), with
        the entities of its tags."""
        text = texts[0]
        words = fns.tokenizer.tokenize_words_with_offsets(text)  # (B, (W), (P))
        return tagging_serving.outputs(fns, text, tagging_serving.tag_words(fns, text, words))

    # `tag_words`: pre-split words [B, W] ("" padding) -> serving_default's outputs, a tag
    # per given word (transformers' is_split_into_words).
    extra_signatures = {"tag_words": (("words", 2),)}

    def serve_extra(self, fns, name, inputs):
        return tagging_serving.serve_words(fns, inputs["words"])

    def input_line(self, signature, inputs):
        """tag_words: a line's words are split at whitespace, as CoNLL files hold them, and
        a batch's shorter lines padded with "" (the signature's padding)."""
        if signature in self.extra_signatures:
            return InputLine(inputs, minimum=0, split_words=True, padding="")
        return super().input_line(signature, inputs)

    def extra_warmup(self, fns):
        """Warmup requests of `tag_words`: a batch with "" padding, and a long sentence."""
        words = EXAMPLE_WORDS
        longest = self.warmup_longest(fns, "text", " ".join(words)).split()
        return [("tag_words", {"words": np.array([words, ["Amen"] + [""] * (len(words) - 1)],
                                                 dtype=object)}),
                ("tag_words", {"words": np.array([longest], dtype=object)})]
