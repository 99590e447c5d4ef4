"""Token tagging (NER, POS): a tag per word, predicted at the word's first piece.

Shape legend: B batch, T tokens, C tags, W words of a text.
"""

import collections

import tensorflow as tf
from absl import logging

from bert_keras import metrics
from bert_keras.data.finetuning import batching, features, readers
from bert_keras.models import head_checkpoints
from bert_keras.models.task_models import BertTokenClassifier
from bert_keras.tasks.base import Task, class_labels
from bert_keras.tasks.graph_ops import byte_to_char, rows
from bert_keras.text.packing import segment_starts


class Tagging(Task):
    """CoNLL files (`token tag` per line), entity F1 (`--task=tagging`)."""

    name = "tagging"
    file_formats = ("conll",)
    main_metric = "f1"
    token_outputs = True
    soft_targets = "softmax"  # per scored token (the first piece of each word)
    transformers_head = "ForTokenClassification"
    transformers_problem_types = (None, "single_label_classification")

    def read_files(self, paths, file_format, labeled=True, **options):
        return readers.read_conll(paths, tag_column=-1 if labeled else None)

    def is_labeled(self, examples):
        return all(ex.tags is not None for ex in examples)

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, **unused):
        return features.tagging_features(examples, tokenizer, max_seq_length, label_map)

    def builds(self, model):
        return isinstance(model, BertTokenClassifier)

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None):
        """BertTokenClassifier, with the head of a fine-tuned `*ForTokenClassification`
        checkpoint when its tags are these."""
        model = BertTokenClassifier(encoder, len(label_map), dropout=dropout)
        if checkpoint and head_checkpoints.try_load_head(
                self.load_transformers_head, model, checkpoint, label_map.labels):
            logging.info("Loaded the token classification head of %s", checkpoint)
        return model

    def load_transformers_head(self, model, path):
        head_checkpoints.load_token_classification_head(model, path)

    def predict(self, model, examples, features_, label_map, options):
        logits = batching.predict(model, features_, options.eval_batch_size, token_outputs=True)
        default = label_map.labels.index("O") if "O" in label_map else 0
        ids = features.word_predictions([l.argmax(-1) for l in logits], features_["word_index"],
                                        features_["num_words"], default=default,
                                        example_index=features_["example_index"])
        tags = [label_map.decode(row) for row in ids]
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

    def serve(self, fns, texts):
        text = texts[0]
        # Words are the tokenizer's own (transformers' word_ids()); the tag of a word is the
        # prediction at its first piece (how tagging models are trained).
        words, starts, ends = fns.tokenizer.tokenize_words_with_offsets(text)  # (B, (W), (P))
        inputs, (kept,) = fns.pack([words.merge_dims(1, 2)])
        logits = tf.cast(fns.run(inputs), tf.float32)  # (B, T, C)
        word_row = tf.cast(words.value_rowids(), tf.int32)  # (all words,)
        pieces = words.values  # (all words, (P))
        flat_first = tf.cast(pieces.row_starts(), tf.int32)  # flat index of each word's pieces
        flat_limit = tf.cast(pieces.row_limits(), tf.int32)
        row_first = tf.gather(pieces.row_splits, words.row_splits)  # (B + 1,) flat, per text
        row_base = tf.gather(tf.cast(row_first, tf.int32), word_row)
        word_kept = tf.gather(kept, word_row)  # pieces the packer kept of the word's text
        word_first = flat_first - row_base  # the word's first piece, counted in its text
        shown = word_first < word_kept  # a word is answered when its first piece was kept
        word_last = row_base + tf.minimum(flat_limit - row_base, word_kept) - 1
        word_start = tf.gather(starts.flat_values, flat_first)
        word_end = tf.gather(ends.flat_values, tf.maximum(word_last, flat_first))
        word_row, word_first, word_start, word_end = (
            tf.boolean_mask(x, shown) for x in (word_row, word_first, word_start, word_end))
        position = word_first + tf.gather(segment_starts([kept])[0], word_row)
        word_logits = tf.gather_nd(logits, tf.stack([word_row, position], -1))  # (words, C)
        probs = tf.nn.softmax(word_logits, axis=-1)
        tag_ids = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
        scores = tf.reduce_max(probs, axis=-1)
        word_text = tf.strings.substr(tf.gather(text, word_row), word_start, word_end - word_start)
        word_text = tf.strings.unicode_transcode(word_text, "UTF-8", "UTF-8", errors="replace")
        batch = tf.shape(text, out_type=tf.int32)[0]
        char_start = byte_to_char(text, rows(word_start, word_row, batch).to_tensor(0))
        char_end = byte_to_char(text, rows(word_end, word_row, batch).to_tensor(0))

        def dense(values, pad):
            return rows(values, word_row, batch).to_tensor(pad)  # (B, W)

        valid = dense(tf.ones_like(word_row, tf.bool), False)
        return {
            "tokens": dense(word_text, ""),
            "tags": dense(tf.gather(fns.label_names, tag_ids), ""),
            "tag_ids": dense(tag_ids, -1),
            "tag_scores": dense(scores, 0.0),
            "token_starts": tf.where(valid, char_start, -1),
            "token_ends": tf.where(valid, char_end, -1),
        }
