"""Token tagging (NER, POS): a tag per word, predicted at the word's first piece.

Served, a text of any length is tagged whole: it is cut into rows of seq_length tokens as
`features.tagging_features` continues a long sentence, in graph ops (`cut_rows`).

Shape legend: B batch, T tokens, C tags, W words of a text, N words of the batch, R rows of
the batch, P pieces of a word.
"""

import collections

import tensorflow as tf
from absl import logging

from bert_keras import metrics
from bert_keras.data.finetuning import batching, features, readers
from bert_keras.models import head_checkpoints
from bert_keras.models.task_models import BertTokenClassifier
from bert_keras.tasks.base import WARMUP_WINDOWS, Task, class_labels, max_windows
from bert_keras.tasks.graph_ops import byte_to_char, rows, word_rows
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
    padded_outputs = ("tokens", "tags", "tag_ids", "tag_scores", "token_starts", "token_ends")
    padding_marker = ("tag_ids", -1)

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

    def export_metadata(self, fns):
        return {"max_windows": max_windows(fns)}

    def warmup_longest(self, fns, field, text):
        """`text` repeated over a few rows (at most max_windows), so warmup runs the cutting."""
        target = min(WARMUP_WINDOWS, max_windows(fns))
        per_copy = int(fns.tokenizer.tokenize(tf.constant([text + " " + text])).row_lengths()[0])
        copies = max(1, target * (fns.seq_length - 2) * 2 // max(per_copy, 1))
        while copies > 1:  # at export time, eagerly: the most copies within `target` rows
            longest = " ".join([text] * copies)
            if int(cut_rows(fns, tf.constant([longest]), max_windows(fns)).count[0]) <= target:
                return longest
            copies -= 1
        return text

    def serve(self, fns, texts):
        """Every word of each text tagged, however long: a text is cut into rows as
        `features.tagging_features` continues a long sentence (`cut_rows`), at most
        `max_windows` rows a text (an export option), more refused (InvalidArgument)."""
        text = texts[0]
        limit = max_windows(fns)
        cut = cut_rows(fns, text, limit)
        refused = tf.debugging.Assert(
            tf.reduce_all(cut.count <= limit),
            [f"A text needs more than max_windows={limit} rows of {fns.seq_length} tokens to "
             "be tagged whole (the export's limit); texts at batch positions",
             tf.where(cut.count > limit)[:, 0]], summarize=8)
        with tf.control_dependencies([refused]):
            row_start = tf.identity(cut.row_start)
        word_row = tf.cumsum(tf.cast(row_start, tf.int32)) - 1  # (N,) the row holding the word
        num_rows = tf.reduce_sum(tf.cast(row_start, tf.int32))
        n = tf.size(word_row)
        from_alone = row_start & tf.logical_not(cut.own)
        row_pieces = tf.gather(tf.concat([cut.pieces, cut.alone], 0),
                               tf.where(from_alone, n + tf.range(n), tf.range(n)))  # (N, (P))
        inputs, (kept,) = fns.pack([rows(row_pieces, word_row, num_rows).merge_dims(1, 2)])
        logits = tf.cast(fns.run(inputs), tf.float32)  # (R, T, C)
        in_row = tf.cast(row_pieces.row_starts(), tf.int32)  # (N,) flat, rows of all words
        row_base = tf.gather(tf.boolean_mask(in_row, row_start), word_row)
        position = in_row - row_base + tf.gather(segment_starts([kept])[0], word_row)
        word_logits = tf.gather_nd(logits, tf.stack([word_row, position], -1))  # (N, C)
        probs = tf.nn.softmax(word_logits, axis=-1)
        tag_ids = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
        scores = tf.reduce_max(probs, axis=-1)
        tokens = tf.strings.unicode_transcode(cut.word_bytes, "UTF-8", "UTF-8", errors="replace")
        batch = tf.shape(text, out_type=tf.int32)[0]
        char_start = byte_to_char(text, rows(cut.word_start, cut.word_text, batch).to_tensor(0))
        char_end = byte_to_char(text, rows(cut.word_end, cut.word_text, batch).to_tensor(0))

        def dense(values, pad):
            return rows(values, cut.word_text, batch).to_tensor(pad)  # (B, W)

        valid = dense(tf.ones_like(cut.word_text, tf.bool), False)
        return {
            "tokens": dense(tokens, ""),
            "tags": dense(tf.gather(fns.label_names, tag_ids), ""),
            "tag_ids": dense(tag_ids, -1),
            "tag_scores": dense(scores, 0.0),
            "token_starts": tf.where(valid, char_start, -1),
            "token_ends": tf.where(valid, char_end, -1),
        }


Cut = collections.namedtuple(
    "Cut", "pieces alone own word_text word_start word_end word_bytes row_start count")


def cut_rows(fns, text, limit):
    """Texts [B] -> their words (N of the batch) and the rows they go in, in graph ops.

    Rows are `tagging_features`' rows of the text's words: the first row is the text's own
    pieces, each further row the text from its first word on tokenized again (as
    tagging_features tokenizes the remaining words): that word with the pieces it has alone
    (`alone`; RoBERTa's "the" for "Ġthe"), the words after it with their pieces in the text,
    which are the same. `own`: a word that starts a row with its pieces in the text (the
    first word of a text, and a word with no pieces alone, such as RoBERTa's "  ").

    Returns `Cut`: pieces and alone int32 ragged [N, (P)], own bool [N], word_text int32
    [N] (each word's text), word_start and word_end [N] (byte offsets into it), word_bytes
    string [N], row_start bool [N] (the word starts a row) and count int32 [B] (each text's
    rows, up to limit + 1: `graph_ops.word_rows`).
    """
    words, starts, ends = fns.tokenizer.tokenize_words_with_offsets(text)  # (B, (W), (P))
    pieces = tf.cast(words.values, tf.int32)  # (N, (P))
    word_text = tf.cast(words.value_rowids(), tf.int32)  # (N,)
    word_splits = tf.cast(words.row_splits, tf.int32)  # (B + 1,)
    first_piece = tf.cast(pieces.row_starts(), tf.int32)  # (N,) flat index
    word_start = tf.gather(starts.flat_values, first_piece)  # (N,) bytes into its text
    word_end = tf.gather(ends.flat_values, tf.cast(pieces.row_limits(), tf.int32) - 1)
    word_bytes = tf.strings.substr(tf.gather(text, word_text), word_start,
                                   tf.maximum(word_end - word_start, 0))
    room = fns.seq_length - 2  # [CLS] pieces [SEP]: pack_with's budget for one text
    text_pieces = tf.gather(tf.cast(pieces.row_splits, tf.int32), word_splits)  # (B + 1,)
    alone = tf.cond(  # (N, (P')); only a text longer than a row has a row that needs them
        tf.reduce_any(text_pieces[1:] - text_pieces[:-1] > room),
        lambda: tf.cast(fns.tokenizer.tokenize(word_bytes), tf.int32), lambda: pieces)
    text_first = tf.equal(tf.range(tf.size(word_text)), tf.gather(word_splits, word_text))
    own = text_first | tf.equal(alone.row_lengths(), 0)
    first_pieces = tf.where(own, pieces.row_lengths(), alone.row_lengths())
    row_start, count = word_rows(pieces.row_lengths(), first_pieces, word_splits, room, limit)
    return Cut(pieces, alone, own, word_text, word_start, word_end, word_bytes, row_start,
               count)
