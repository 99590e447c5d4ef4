"""Single-label classification of a text or a pair: softmax over C classes, accuracy."""

import numpy as np
import tensorflow as tf

from bert_keras import metrics
from bert_keras.tasks.sequence_classification import (
    SequenceClassificationTask, majority, rounded_probabilities, with_glue_metrics)


def _softmax(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class Classification(SequenceClassificationTask):
    """One label per text or pair (`--task=classification`).

    >>> from bert_keras.tasks.registry import get_task
    >>> get_task("classification").main_metric
    'accuracy'
    """

    name = "classification"
    main_metric = "accuracy"
    soft_targets = "softmax"

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
