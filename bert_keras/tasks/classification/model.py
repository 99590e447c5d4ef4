"""`BertClassifier`: sequence classification or regression on the pooled [CLS] output.

Shape legend: B batch, T sequence length, C classes.

x: the encoder inputs (`input_word_ids`, `input_mask`, `input_type_ids`, int32 (B, T)), or raw
texts / pairs (`tasks.text_inputs`) when it carries a preprocessor. y by problem type
(`problem_types`): single_label int labels (B,); multi_label 0/1 floats (B, C); regression
floats (B,) or (B, C).
"""

import keras

from bert_keras.models import head_checkpoints, heads
from bert_keras.tasks.classification import problem_types
from bert_keras.tasks.task_model import BertTaskModel, class_count, encoder_inputs, label_names


@keras.saving.register_keras_serializable(package="bert_keras")
class BertClassifier(BertTaskModel):
    """Sequence classification or regression on the pooled [CLS] output.

    Outputs float32 logits (B, num_classes). Default compile (AdamW at 5e-5), by
    `problem_type` (a name of `problem_types`, or its object):
    "single_label": sparse cross entropy from logits + accuracy (y: int labels (B,));
    "multi_label": binary cross entropy from logits + binary accuracy at logit 0
    (y: 0/1 floats (B, C)); "regression": mean squared error (y: floats (B, C), C=1 usually).

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> clf = BertClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100), num_classes=3)
    >>> x = {"input_word_ids": np.ones((4, 6), "int32"), "input_mask": np.ones((4, 6), "int32"),
    ...      "input_type_ids": np.zeros((4, 6), "int32")}
    >>> history = clf.fit(x, np.array([0, 1, 2, 1]), verbose=0)
    >>> clf.predict(x, verbose=0).shape
    (4, 3)
    """

    head_name = "classification_head"
    transformers_head = "ForSequenceClassification"
    load_transformers_head = staticmethod(head_checkpoints.load_classification_head)

    def __init__(self, encoder, num_classes, problem_type="single_label", dropout=0.1,
                 hidden_activation=None, labels=None, preprocessor=None, **kwargs):
        try:
            problem = problem_types.get(problem_type)
        except ValueError as e:
            raise ValueError(f"BertClassifier: {e}") from None
        head = heads.ClassificationHead(
            num_classes, dropout=dropout, initializer_range=encoder.initializer_range,
            hidden_activation=hidden_activation, dtype=encoder.head_dtype_policy,
            name="classification_head",
        )
        inputs = encoder_inputs()
        # output_positions=(): the encoder's last block runs on [CLS] only.
        logits = head(encoder(inputs, output_positions=())["pooled_output"])  # (B, C)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.num_classes = num_classes
        self.problem = problem
        self.problem_type = problem.name  # the name, as get_config saves it
        self.dropout = dropout
        self.hidden_activation = hidden_activation
        self.labels = label_names(labels, num_classes)
        self.classification_head = head
        self._finish_init(encoder, preprocessor=preprocessor)

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        if kwargs.get("num_classes") is None:
            kwargs["num_classes"] = class_count(path, labels)
        if isinstance(trained, cls):
            kwargs.setdefault("problem_type", trained.problem_type)
            kwargs.setdefault("hidden_activation", trained.hidden_activation)
        else:
            kwargs.setdefault("hidden_activation",
                              head_checkpoints.classifier_head_activation(path))
        if labels is not None and len(labels) == kwargs["num_classes"]:
            kwargs.setdefault("labels", labels)
        return kwargs

    def _checked_targets(self, y):
        return self.problem.check_targets(y, self.num_classes, type(self).__name__)

    def _default_loss(self):
        return self.problem.loss()

    def _default_weighted_metrics(self):
        return self.problem.weighted_metrics()

    def _task_config(self):
        return dict(num_classes=self.num_classes, problem_type=self.problem_type,
                    dropout=self.dropout, hidden_activation=self.hidden_activation,
                    labels=self.labels)
