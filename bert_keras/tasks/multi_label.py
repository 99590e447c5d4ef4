"""Multi-label classification: any subset of C labels per text or pair (sigmoid per label)."""

import numpy as np
import tensorflow as tf

from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.tasks.sequence_classification import (
    SequenceClassificationTask, rounded_probabilities)


class MultiLabel(SequenceClassificationTask):
    """Labels of a row joined by --label_delimiter (`--task=multi_label`); micro F1."""

    name = "multi_label"
    main_metric = "micro_f1"
    label_type = "multi"
    problem_type = "multi_label"
    transformers_problem_types = ("multi_label_classification",)

    def transformers_label_map(self, labels):
        return LabelMap(labels, multi_label=True)
    soft_targets = "sigmoid"

    def predict(self, model, examples, features, label_map, options):
        logits = self.logits(model, features, options)
        probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        threshold = options.multi_label_threshold
        rows = self.example_rows(examples)
        for row, chosen, p in zip(rows, label_map.decode_multi_hot(probs, threshold), probs):
            row["prediction"], row["probabilities"] = chosen, rounded_probabilities(label_map.labels, p)
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
