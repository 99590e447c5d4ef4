"""The task types of sequence classification, one per problem type (`problem_types`): one
text or a pair in, one head on [CLS].

`classification` (one label, accuracy), `multi_label` (any subset of the labels, micro F1)
and `regression` (a real value such as STS-B similarity, Pearson correlation) differ in
their labels, predictions, scores and served outputs; their reading, features, model class
and text fields are `SequenceClassificationTask`'s.

Shape legend (serving functions): B batch, C classes.
"""

import collections

import numpy as np
import tensorflow as tf
from absl import logging

from bert_keras import metrics
from bert_keras.data.finetuning import batching
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.models import head_checkpoints
from bert_keras.tasks.base import Task
from bert_keras.tasks.classification import (
    featurizer,
    head_checkpoint,
    problem_types,
    reader,
    tfds_reader,
)
from bert_keras.tasks.classification.model import BertClassifier
from bert_keras.tasks.classification.options import (
    ClassificationExportOptions,
    ClassificationOptions,
    MultiLabelOptions,
)
from bert_keras.tasks.raw_examples import PAIRED, TEXTS, RawExamples
from bert_keras.tasks.task_serving import class_labels


class SequenceClassificationTask(Task):
    """Base of the tasks with one prediction per text (or pair of texts): a subclass sets its
    `problem_type` (a `problem_types.ProblemType`) and, as `name`, that problem type's task."""

    problem_type = problem_types.SINGLE_LABEL
    input_line_help = "text, or text_a<TAB>text_b for a model of pairs"
    transformers_head = "ForSequenceClassification"
    options_class = ClassificationOptions
    export_options_class = ClassificationExportOptions  # --pairs

    def read_files(self, paths, file_format, labeled=True, options=None, **reader_options):
        return read_classification_files(paths, file_format, self.problem_type.label_type,
                                         labeled, **reader_options)

    def tfds_reader(self, dataset, **fields):
        return tfds_reader.LabeledTextReader(dataset, self.name, self.problem_type.label_type,
                                             **fields)

    def reads_tfds(self, dataset, label_field=None):
        return tfds_reader.reads_label(dataset, label_field, self.problem_type.label_type)

    def text_fields(self, examples):
        return ["text_a", "text_b"] if examples and examples[0].text_b is not None else ["text"]

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, **unused):
        return featurizer.classification_features(examples, tokenizer, max_seq_length,
                                                  label_map, self.problem_type.label_type)

    def num_outputs(self, label_map):
        return len(label_map)

    def reads_transformers(self, architecture, config):
        return (super().reads_transformers(architecture, config)
                and problem_types.from_transformers(config) is self.problem_type)

    def builds(self, model):
        return isinstance(model, BertClassifier) and model.problem is self.problem_type

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None, options=None):
        """BertClassifier with the head of the checkpoint's family (RoBERTa, ELECTRA and
        DistilBERT have their own), the pooling and head layers of `options`
        (`ClassificationOptions`; without them, the checkpoint's pooling), and the
        checkpoint's head weights when it is a fine-tuned transformers classifier that
        computes the same (as many classes, its pooling, no head layers)."""
        family = head_checkpoint.head_arguments(checkpoint) if checkpoint else {}
        pooling = family.pop("pooling", "cls")  # the options' pooling where they are given
        options = options or self.options_class(pooling=pooling)
        model = BertClassifier(encoder, self.num_outputs(label_map), problem_type=self.problem_type,
                               dropout=dropout, **family, **options.model_arguments())
        labels = label_map.labels if label_map is not None else None
        if checkpoint and head_checkpoints.try_load_head(self.load_transformers_head, model,
                                                         checkpoint, labels):
            logging.info("Loaded the classification head of %s", checkpoint)
        return model

    def load_transformers_head(self, model, path):
        BertClassifier.load_transformers_head(model, path)

    def logits(self, model, features_, options):
        return np.stack(batching.predict(model, features_, options.eval_batch_size))  # (N, C)

    def example_rows(self, examples):
        return [dict(text_a=ex.text_a, text_b=ex.text_b, label=ex.label) for ex in examples]

    def with_export_options(self, model, info, options, source):
        """--pairs: text_a and text_b served, for a checkpoint that does not say."""
        return model, (dict(info, text_fields=["text_a", "text_b"]) if options.pairs else info)

    def serving_text_fields(self, info):
        fields = tuple(info.get("text_fields") or ("text",))
        if fields not in (("text",), ("text_a", "text_b")):
            raise ValueError(f"Classification text_fields must be ['text'] or ['text_a', "
                             f"'text_b'], got {list(fields)}.")
        return fields

    def serving_labels(self, model, labels):
        return class_labels(model, labels)


class Classification(SequenceClassificationTask):
    """One label per text or pair (`--task=classification`).

    >>> from bert_keras.tasks.registry import get_task
    >>> get_task("classification").main_metric
    'accuracy'
    """

    problem_type = problem_types.SINGLE_LABEL
    name = problem_type.task
    main_metric = "accuracy"
    soft_targets = "softmax"
    output_docs = {"probabilities": "class probabilities (softmax)",
                   "label_ids": "index of the predicted class",
                   "labels": "name of the predicted class"}

    def raw_examples(self):
        return RawExamples(BertClassifier, dict(num_classes=2, labels=["other", "same"]),
                           fit=((TEXTS, PAIRED), [1, 0]), predict=(TEXTS, PAIRED))

    def predict(self, model, examples, features, label_map, options):
        probs = _softmax(self.logits(model, features, options))
        ids = probs.argmax(-1)
        rows = self.example_rows(examples)
        for row, i, p in zip(rows, ids, probs):
            row["prediction"] = label_map.labels[i]
            row["probabilities"] = rounded_probabilities(label_map.labels, p)
        return rows, ids

    def score(self, examples, predicted, label_map, glue_task=None):
        y = label_map.encode(examples)
        result = {"accuracy": metrics.accuracy(y, predicted),
                  "macro_f1": metrics.macro_f1(y, predicted),
                  "mcc": metrics.matthews_corrcoef(y, predicted)}
        if len(label_map) == 2:
            result["f1"] = metrics.binary_f1(y, predicted)
        return with_glue_metrics(result, glue_task, y, predicted)

    def baselines(self, train, examples, label_map):
        label = majority(ex.label for ex in train)
        y = label_map.encode(examples)
        pred = np.full_like(y, label_map.labels.index(label))
        return {"majority_label": label, "majority_accuracy": metrics.accuracy(y, pred),
                "majority_macro_f1": metrics.macro_f1(y, pred)}

    def serve(self, fns, texts):
        inputs, _ = self.preprocess(fns, texts)
        logits = tf.cast(fns.run(inputs), tf.float32)  # (B, C)
        ids = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (B,)
        return {"probabilities": tf.nn.softmax(logits, axis=-1), "label_ids": ids,
                "labels": tf.gather(fns.label_names, ids)}


class MultiLabel(SequenceClassificationTask):
    """Labels of a row joined by --label_delimiter (`--task=multi_label`); micro F1."""

    problem_type = problem_types.MULTI_LABEL
    name = problem_type.task
    main_metric = "micro_f1"
    soft_targets = "sigmoid"
    options_class = MultiLabelOptions
    output_docs = {"probabilities": "class probabilities (sigmoid)",
                   "label_ids": "1 where a class's probability >= 0.5, else 0",
                   "labels": "names of the chosen classes joined with ','"}

    def raw_examples(self):
        return RawExamples(BertClassifier, dict(num_classes=3, problem_type=self.problem_type.name,
                                                labels=["home", "rain", "sun"]),
                           fit=(TEXTS, [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]), predict=TEXTS)

    def transformers_label_map(self, labels):
        return LabelMap(labels, multi_label=True)

    def predict(self, model, examples, features, label_map, options):
        logits = self.logits(model, features, options)
        probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        threshold = options.task_options.multi_label_threshold
        rows = self.example_rows(examples)
        for row, chosen, p in zip(rows, label_map.decode_multi_hot(probs, threshold), probs):
            row["prediction"] = chosen
            row["probabilities"] = rounded_probabilities(label_map.labels, p)
        return rows, (probs >= threshold).astype(np.float32)

    def score(self, examples, predicted, label_map, glue_task=None):
        y = label_map.encode(examples)
        tp = float((y * predicted).sum())
        p = tp / predicted.sum() if predicted.sum() else 0.0
        r = tp / y.sum() if y.sum() else 0.0
        return {"micro_f1": 2 * p * r / (p + r) if p + r else 0.0, "micro_precision": p,
                "micro_recall": r, "subset_accuracy": float((y == predicted).all(1).mean())}

    def teacher_metrics(self, predicted, teacher_predicted):
        """The fraction of (example, label) decisions that agree."""
        return {"teacher_agreement": float(np.mean(np.asarray(predicted) ==
                                                   np.asarray(teacher_predicted)))}

    def serve(self, fns, texts):
        inputs, _ = self.preprocess(fns, texts)
        probs = tf.sigmoid(tf.cast(fns.run(inputs), tf.float32))  # (B, C)
        chosen = probs >= 0.5
        names = tf.where(chosen, tf.broadcast_to(fns.label_names, tf.shape(chosen)), "")
        joined = tf.strings.reduce_join(tf.ragged.boolean_mask(names, chosen), axis=-1,
                                        separator=",")
        return {"probabilities": probs, "label_ids": tf.cast(chosen, tf.int32), "labels": joined}


class Regression(SequenceClassificationTask):
    """A numeric label per text or pair (`--task=regression`)."""

    problem_type = problem_types.REGRESSION
    name = problem_type.task
    main_metric = "pearson"
    output_docs = {"scores": "regression outputs"}
    needs_label_map = False
    soft_targets = "mse"

    def raw_examples(self):
        return RawExamples(BertClassifier, dict(num_classes=1, problem_type=self.problem_type.name),
                           fit=(TEXTS, [0.5, 2.0]), predict=TEXTS)

    def num_outputs(self, label_map):
        return 1

    def predict(self, model, examples, features, label_map, options):
        values = self.logits(model, features, options)[:, 0].astype(float)
        rows = self.example_rows(examples)
        for row, v in zip(rows, values):
            row["prediction"] = float(v)
        return rows, values

    def score(self, examples, predicted, label_map, glue_task=None):
        y = np.array([ex.label for ex in examples], np.float64)
        result = {"pearson": metrics.pearson(y, predicted),
                  "spearman": metrics.spearman(y, predicted),
                  "mse": float(np.mean((y - predicted) ** 2))}
        return with_glue_metrics(result, glue_task, y, predicted)

    def baselines(self, train, examples, label_map):
        y = np.array([ex.label for ex in examples])
        mean = float(np.mean([ex.label for ex in train]))
        return {"train_mean_mse": float(np.mean((y - mean) ** 2))}

    def teacher_metrics(self, predicted, teacher_predicted):
        return {"teacher_pearson": metrics.pearson(teacher_predicted, predicted),
                "teacher_mse": float(np.mean((np.asarray(predicted) -
                                              np.asarray(teacher_predicted)) ** 2))}

    def serving_labels(self, model, labels):
        return labels

    def serve(self, fns, texts):
        inputs, _ = self.preprocess(fns, texts)
        return {"scores": tf.cast(fns.run(inputs), tf.float32)}  # (B, C)


def read_classification_files(paths, file_format, label_type, labeled=True, header=False,
                              text_a_column=1, text_b_column=None, label_column=0,
                              text_a_field="text", text_b_field=None, label_field="label",
                              label_delimiter=","):
    """ClassificationExamples from TSV/CSV/JSONL files (columns / fields as in `reader`)."""
    if file_format in ("tsv", "csv"):
        read = reader.read_tsv if file_format == "tsv" else reader.read_csv
        return read(paths, header=header, text_a_column=text_a_column,
                    text_b_column=text_b_column, label_column=label_column if labeled else None,
                    label_type=label_type, label_delimiter=label_delimiter)
    return reader.read_jsonl(paths, text_a_field=text_a_field, text_b_field=text_b_field,
                             label_field=label_field if labeled else None,
                             label_type=label_type, label_delimiter=label_delimiter)


def _softmax(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def rounded_probabilities(labels, probs):
    return {label: round(float(p), 5) for label, p in zip(labels, probs)}


def majority(values):
    return collections.Counter(values).most_common(1)[0][0]


def with_glue_metrics(result, glue_task, y, predicted):
    """`result` plus GLUE's official metrics of `glue_task` (e.g. "glue/mrpc") as glue_*."""
    if glue_task:
        glue = metrics.glue_metrics(glue_task, y, predicted)
        result.update({f"glue_{k}": v for k, v in glue.items()})
    return result
