"""Regression on a text or pair: one real value (e.g. STS-B similarity), Pearson correlation."""

import numpy as np
import tensorflow as tf

from bert_keras import metrics
from bert_keras.tasks.sequence_classification import SequenceClassificationTask, with_glue_metrics


class Regression(SequenceClassificationTask):
    """A numeric label per text or pair (`--task=regression`)."""

    name = "regression"
    main_metric = "pearson"
    label_type = "regression"
    problem_type = "regression"
    transformers_problem_types = ("regression",)
    needs_label_map = False
    soft_targets = "mse"

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
        result = {"pearson": metrics.pearson(y, predicted), "spearman": metrics.spearman(y, predicted),
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
