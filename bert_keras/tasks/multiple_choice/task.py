"""The multiple-choice task type (`--task=multiple_choice`): a context and K endings in, the
index of the right ending out (SWAG; transformers' `*ForMultipleChoice`).

Shape legend (serving functions): B batch, K choices, T packed sequence length.
"""

import collections

import numpy as np
import tensorflow as tf
from absl import logging

from bert_keras import metrics
from bert_keras.configs import check
from bert_keras.models import head_checkpoints
from bert_keras.tasks.base import Task
from bert_keras.tasks.input_lines import InputLine
from bert_keras.tasks.multiple_choice import featurizer, head_checkpoint, reader
from bert_keras.tasks.multiple_choice.model import BertMultipleChoice
from bert_keras.tasks.multiple_choice.options import MultipleChoiceOptions
from bert_keras.tasks.raw_examples import PAIRED, TEXTS, RawExamples


class MultipleChoice(Task):
    """Reads SWAG-style CSV/TSV and JSON lines, trains `BertMultipleChoice`, scores accuracy.

    Serving: `serving_default(text [B], choices [B, K]) -> probabilities float32 [B, K]
    (softmax over the choices), choice int32 [B] (index of the best)`, any K >= 2 per request.

    >>> from bert_keras.tasks.registry import get_task
    >>> get_task("multiple_choice").main_metric
    'accuracy'
    """

    name = "multiple_choice"
    output_docs = {"probabilities": "probability of each choice (softmax over the choices)",
                   "choice": "index of the best choice"}
    main_metric = "accuracy"
    needs_label_map = False  # labels are choice indices
    transformers_head = head_checkpoint.TRANSFORMERS_HEAD
    options_class = MultipleChoiceOptions
    serving_ranks = {"choices": 2}  # [B, K]
    input_line_help = "context<TAB>ending<TAB>ending... (2 or more endings)"

    # -- options ------------------------------------------------------------------------------

    def check_config(self, config):
        """ConfigError for a TFDS dataset (none is read as multiple choice) or rows too short
        for a context and an ending."""
        check(not config.data.tfds.tfds_name, f"--task={self.name} reads CSV/TSV or JSON lines "
              f"files (--train_file), not --tfds_name={config.data.tfds.tfds_name}.")
        check(config.max_seq_length >= 5, f"--max_seq_length={config.max_seq_length} leaves no "
              "room for a context and an ending: at least 5 ([CLS] context [SEP] ending "
              "[SEP]).")

    # -- data ---------------------------------------------------------------------------------

    def read_files(self, paths, file_format, labeled=True, options=None, **reader_options):
        """Examples of CSV/TSV (--text_a_column, --ending_columns, --label_column) or JSON
        lines (--text_a_field, --choices_field, --label_field) files."""
        options = options or MultipleChoiceOptions()
        if file_format in ("tsv", "csv"):
            return reader.read_choices_delimited(
                paths, delimiter="\t" if file_format == "tsv" else ",",
                header=reader_options.get("header", False),
                text_a_column=reader_options.get("text_a_column", 0),
                ending_columns=options.ending_column_list(),
                label_column=reader_options.get("label_column", -1) if labeled else None)
        return reader.read_choices_jsonl(
            paths, text_a_field=reader_options.get("text_a_field", "context"),
            choices_field=options.choices_field,
            label_field=reader_options.get("label_field", "label") if labeled else None)

    def text_fields(self, examples):
        return ["text", "choices"]

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, options=None,
                  **unused):
        return featurizer.choice_features(examples, tokenizer, max_seq_length)

    def dataset(self, features, batch_size, *, shuffle=False, seed=None, pad_id=0):
        return featurizer.choice_dataset(features, batch_size, shuffle=shuffle, seed=seed,
                                         pad_id=pad_id)

    # -- model and evaluation -----------------------------------------------------------------

    def load_transformers_head(self, model, path):
        head_checkpoint.load_multiple_choice_head(model, path)

    def builds(self, model):
        return isinstance(model, BertMultipleChoice)

    def raw_examples(self):  # y: the index of the right choice
        choices = [[PAIRED[0], PAIRED[1], "Amen."], [PAIRED[1], "Rome.", PAIRED[0]]]
        return RawExamples(BertMultipleChoice, {}, fit=((TEXTS, choices), [0, 2]),
                           predict=(TEXTS, choices))

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None, options=None):
        """BertMultipleChoice with the head of the checkpoint's family, and its weights when
        the checkpoint is a fine-tuned `*ForMultipleChoice`."""
        model = BertMultipleChoice(encoder, dropout=dropout,
                                   **head_checkpoint.head_arguments(checkpoint))
        if checkpoint and head_checkpoints.try_load_head(self.load_transformers_head, model,
                                                         checkpoint):
            logging.info("Loaded the multiple-choice head of %s", checkpoint)
        return model

    def predict(self, model, examples, features, label_map, config):
        logits = featurizer.choice_logits(model, features, config.eval_batch_size)  # (N, K)
        shifted = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities = shifted / shifted.sum(-1, keepdims=True)
        chosen = logits.argmax(-1)
        rows = [dict(context=ex.context, choices=ex.choices, label=ex.label, prediction=int(i),
                     probabilities=[round(float(p), 5) for p in row])
                for ex, i, row in zip(examples, chosen, probabilities)]
        return rows, chosen

    def score(self, examples, predicted, label_map, glue_task=None):
        return {"accuracy": metrics.accuracy(np.array([ex.label for ex in examples]),
                                             np.asarray(predicted))}

    def baselines(self, train, examples, label_map):
        """The most frequent right index of the training data, predicted for every example."""
        label = collections.Counter(ex.label for ex in train).most_common(1)[0][0]
        y = np.array([ex.label for ex in examples])
        return {"majority_choice": int(label),
                "majority_accuracy": metrics.accuracy(y, np.full_like(y, label))}

    # -- serving ------------------------------------------------------------------------------

    def serving_text_fields(self, info):
        return ("text", "choices")

    def preprocess(self, fns, texts):
        """(text [B], choices [B, K]) -> (the three int32 [B*K, T] rows, one per choice: the
        pair (text, choice); kept segment lengths). A request whose choices are not [B, K]
        with K >= 2 fails with InvalidArgument."""
        text, choices = texts
        batch, k = tf.shape(choices)[0], tf.shape(choices)[1]
        checks = [
            tf.debugging.Assert(tf.equal(tf.shape(text)[0], batch), [
                "text and choices must have one row per example; got shapes", tf.shape(text),
                tf.shape(choices)]),
            tf.debugging.Assert(tf.logical_or(tf.equal(batch, 0), k >= 2), [
                "choices must hold at least 2 choices per example [batch, K >= 2]; got shape",
                tf.shape(choices)]),
        ]
        with tf.control_dependencies(checks):
            contexts = tf.reshape(tf.tile(text[:, None], [1, k]), [-1])  # [B*K]
            endings = tf.reshape(choices, [-1])  # [B*K]
        return fns.pack([fns.tokenizer.tokenize(contexts), fns.tokenizer.tokenize(endings)])

    def serve(self, fns, texts):
        inputs, _ = self.preprocess(fns, texts)
        batch, k = tf.shape(texts[1])[0], tf.shape(texts[1])[1]
        per_choice = {name: tf.reshape(rows, [batch, k, tf.shape(rows)[-1]])
                      for name, rows in inputs.items()}  # (B, K, T)
        logits = tf.cast(fns.run(per_choice), tf.float32)  # (B, K)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "choice": tf.argmax(logits, axis=-1, output_type=tf.int32)}

    def input_line(self, signature, inputs):
        """The context, then each ending, tab-separated: at least 2 endings; one model call
        holds the lines of one number of endings (a padded ending would be a choice)."""
        return InputLine(inputs, minimum=2)

    def warmup_longest(self, fns, field, text):
        if field == "choices":  # a row of K choices, each longer than a packed row
            return [" ".join([choice or "choice"] * fns.seq_length) for choice in text]
        return super().warmup_longest(fns, field, text)
