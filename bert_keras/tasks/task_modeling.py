"""The model role of a task type (see `base.Task`): the Keras model it builds (or reads from a
fine-tuned transformers checkpoint), how it predicts, and how its predictions are scored.

>>> from bert_keras.tasks.registry import get_task
>>> get_task("span_qa").main_metric
'f1'
"""

from bert_keras import metrics
from bert_keras.data.finetuning.label_map import LabelMap


class TaskModeling:
    """The task model, its predictions and their metrics."""

    main_metric = None  # eval metric that picks the best epoch (higher is better)
    token_outputs = ()  # per-token model outputs, trimmed per feature by batching.predict
    # Task distillation (--teacher_dir): how the student's logits are compared with the
    # teacher's, one of models.objectives.task_distillation.SOFT_TARGETS; None: not distillable.
    soft_targets = None

    # -- fine-tuned transformers checkpoints ----------------------------------------------------

    # The class-name suffix of the transformers heads this task type exports and keeps
    # (e.g. "ForTokenClassification").
    transformers_head = None

    def reads_transformers(self, architecture, config):
        """Whether a transformers checkpoint of `architecture` with config.json `config` is a
        model of this task type (by default: its head is ours)."""
        return (self.transformers_head is not None and bool(architecture)
                and architecture.endswith(self.transformers_head))

    def transformers_label_map(self, labels):
        """The LabelMap of a transformers checkpoint's id2label names (None: not needed)."""
        return LabelMap(labels) if self.needs_label_map else None

    def load_transformers_head(self, model, path):
        """Sets the head of `model` from the transformers checkpoint `path` (CheckpointError
        naming what is missing or mis-shaped)."""
        raise NotImplementedError(f"{self.name} has no transformers head")

    # -- model and evaluation -----------------------------------------------------------------

    def builds(self, model):
        """Whether `model` is a model of this task type (`registry.task_of_model`)."""
        return False

    def raw_examples(self):
        """A few raw inputs of this type's Keras model as a user gives them (a
        `raw_examples.RawExamples`: model class, arguments, fit and predict inputs); None
        where it has no task model of its own. Every task type's contract test runs on them."""
        return None

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None, options=None):
        """The task model over `encoder`; `checkpoint`: the directory the encoder came from
        (a family's own head, or a fine-tuned head, may come with it); `options`: the run's
        task options (an `options_class` object; None: its defaults)."""
        raise NotImplementedError

    def predict(self, model, examples, features, label_map, config):
        """(one JSON-able dict per example, the predicted values that `score` takes);
        `config`: the run's FinetuneConfig (its eval batch size, its task_options)."""
        raise NotImplementedError

    def score(self, examples, predicted, label_map, glue_task=None):
        """Metrics (bert_keras.metrics) of the predictions against the examples' labels."""
        raise NotImplementedError

    def baselines(self, train, examples, label_map):
        """Scores of trivial predictors on `examples`: the floor the model must clear."""
        return {}

    def teacher_metrics(self, predicted, teacher_predicted):
        """How far a distilled student's predictions (`predict`'s second value) agree with its
        teacher's on the same examples (task distillation)."""
        return {"teacher_agreement": metrics.accuracy(teacher_predicted, predicted)}
