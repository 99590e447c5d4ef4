"""What the three sequence-level task types share: one text or a pair in, one head on [CLS].

`classification`, `multi_label` and `regression` differ in their labels, loss, metrics and
outputs; their features, model class, reading and text fields are these.
"""

import collections

import numpy as np
from absl import logging

from bert_keras import metrics
from bert_keras.data.finetuning import batching, features
from bert_keras.models import head_checkpoints
from bert_keras.models.task_models import BertClassifier
from bert_keras.tasks.base import Task, class_labels, read_classification_files


class SequenceClassificationTask(Task):
    """Base of the tasks with one prediction per text (or pair of texts)."""

    label_type = "single"  # readers' label_type
    problem_type = "single_label"  # BertClassifier's problem_type
    serves_pairs = True
    transformers_head = "ForSequenceClassification"
    transformers_problem_types = (None, "single_label_classification")

    def read_files(self, paths, file_format, labeled=True, **options):
        return read_classification_files(paths, file_format, self.label_type, labeled, **options)

    def text_fields(self, examples):
        return ["text_a", "text_b"] if examples and examples[0].text_b is not None else ["text"]

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, **unused):
        return features.classification_features(examples, tokenizer, max_seq_length, label_map,
                                                self.name)

    def num_outputs(self, label_map):
        return len(label_map)

    def builds(self, model):
        return isinstance(model, BertClassifier) and model.problem_type == self.problem_type

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None):
        """BertClassifier with the head of the checkpoint's family (RoBERTa, ELECTRA and
        DistilBERT have their own), and its weights when the checkpoint is a fine-tuned
        classifier with as many classes."""
        activation = head_checkpoints.classifier_head_activation(checkpoint) if checkpoint else None
        model = BertClassifier(encoder, self.num_outputs(label_map), problem_type=self.problem_type,
                               dropout=dropout, hidden_activation=activation)
        labels = label_map.labels if label_map is not None else None
        if checkpoint and head_checkpoints.try_load_head(self.load_transformers_head, model,
                                                         checkpoint, labels):
            logging.info("Loaded the classification head of %s", checkpoint)
        return model

    def load_transformers_head(self, model, path):
        head_checkpoints.load_classification_head(model, path)

    def logits(self, model, features_, options):
        return np.stack(batching.predict(model, features_, options.eval_batch_size))  # (N, C)

    def example_rows(self, examples):
        return [dict(text_a=ex.text_a, text_b=ex.text_b, label=ex.label) for ex in examples]

    def serving_text_fields(self, info):
        fields = tuple(info.get("text_fields") or ("text",))
        if fields not in (("text",), ("text_a", "text_b")):
            raise ValueError(f"Classification text_fields must be ['text'] or ['text_a', "
                             f"'text_b'], got {list(fields)}.")
        return fields

    def serving_labels(self, model, labels):
        return class_labels(model, labels)


def rounded_probabilities(labels, probs):
    return {label: round(float(p), 5) for label, p in zip(labels, probs)}


def majority(values):
    return collections.Counter(values).most_common(1)[0][0]


def with_glue_metrics(result, glue_task, y, predicted):
    """`result` plus GLUE's official metrics of `glue_task` (e.g. "glue/mrpc") as glue_*."""
    if glue_task:
        result.update({f"glue_{k}": v for k, v in metrics.glue_metrics(glue_task, y, predicted).items()})
    return result
