"""ObjectiveModel: the base of the pretraining models whose loss is a sum of terms computed from
their own outputs (`ElectraPretrainer`, `DistillationPretrainer`), trained by Keras' own
`train_step` (so `loop.train`'s strategies, precision and resume apply unchanged)."""

import keras

from bert_keras.models.idle_layers import IdleLayers
from bert_keras.models.objectives.losses import scale_for_replicas
from bert_keras.optimization.slots import build_before_fit


class ObjectiveModel(IdleLayers, keras.Model):
    """`call` returns what the loss needs; subclasses define `loss_terms(x, y_pred)` ->
    {"loss", term: value} of one replica's batch, name the terms to track as mean metrics in
    `loss_term_names`, and update any further metrics in `update_metrics(x, y_pred)`; layers
    the loss never reads go in `idle_layers()`. A subclass whose layers are all built when
    its `__init__` ends says so (`self.built = True`): `fit` then makes the optimizer's slots
    before its first trace (`build_before_fit`)."""

    loss_term_names = ()

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.trackers = {name: keras.metrics.Mean(name=name) for name in self.loss_term_names}

    def fit(self, *args, **kwargs):
        """Keras `fit`, with the optimizer built first where the model is."""
        build_before_fit(self)
        return super().fit(*args, **kwargs)

    def loss_terms(self, x, y_pred):
        raise NotImplementedError

    def update_metrics(self, x, y_pred):
        pass

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return scale_for_replicas(self.loss_terms(x, y_pred)["loss"])

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        terms = self.loss_terms(x, y_pred)
        for name, tracker in self.trackers.items():
            tracker.update_state(terms[name])
        self.update_metrics(x, y_pred)
        return self.get_metrics_result()  # "loss" itself: Keras' train_step tracks it
