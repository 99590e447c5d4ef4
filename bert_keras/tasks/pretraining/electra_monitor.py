"""ELECTRA's monitor: a discriminator stuck at the "nothing is replaced" baseline.

`StuckDiscriminatorReport` is a Keras callback that the ELECTRA objective adds to its
pretraining runs; `StuckDiscriminatorDetector` holds the rule it applies to each logging window.
"""

import math

import keras
from absl import logging

from bert_keras.metrics.logs import scalar_floats


def binary_entropy(p):
    """The loss (nats) of always predicting probability `p` for labels that are 1 with
    frequency `p`: the discriminator loss of the best constant guess."""
    p = min(max(p, 1e-7), 1 - 1e-7)
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


class StuckDiscriminatorDetector:
    """Reads ELECTRA's logging windows and says, once, when the discriminator has sat at the
    "nothing is replaced" baseline for `windows` windows in a row: it finds (almost) none of
    the replaced tokens (`replaced_recall` <= `max_recall`) and its loss is within
    `loss_margin` (relative) of the base-rate loss, the binary entropy of the window's
    `replaced_fraction`. Such a discriminator learns nothing from context (docs/variants.md).

    >>> detector = StuckDiscriminatorDetector(windows=2)
    >>> stuck = {"replaced_recall": 0.0, "discriminator_loss": 0.39, "replaced_fraction": 0.135}
    >>> detector.observe(100, stuck) is None
    True
    >>> detector.observe(200, stuck).split(":")[0]
    'The ELECTRA discriminator is stuck at the all-original baseline'
    >>> detector.observe(300, stuck) is None  # said once
    True
    """

    NEEDS = ("replaced_recall", "discriminator_loss", "replaced_fraction")

    def __init__(self, windows=3, max_recall=0.01, loss_margin=0.02, advice=""):
        self.windows = windows
        self.max_recall = max_recall
        self.loss_margin = loss_margin
        self.advice = advice
        self.stuck_steps = []  # the steps of the current run of stuck windows
        self.warned = False

    def observe(self, step, values):
        """The warning (one line) the first time `windows` stuck windows follow each other,
        else None. `values`: one window's metrics, as logged."""
        if self.warned or not all(name in values for name in self.NEEDS):
            return None
        if not self.at_baseline(values):
            self.stuck_steps = []
            return None
        self.stuck_steps.append(step)
        if len(self.stuck_steps) < self.windows:
            return None
        self.warned = True
        return self.message(values)

    def at_baseline(self, values):
        base_rate_loss = binary_entropy(values["replaced_fraction"])
        return (values["replaced_recall"] <= self.max_recall
                and values["discriminator_loss"] >= (1 - self.loss_margin) * base_rate_loss)

    def message(self, values):
        base_rate_loss = binary_entropy(values["replaced_fraction"])
        return (
            "The ELECTRA discriminator is stuck at the all-original baseline: for "
            f"{len(self.stuck_steps)} logging windows (steps {self.stuck_steps[0]}-"
            f"{self.stuck_steps[-1]}) it found {values['replaced_recall']:.1%} of the replaced "
            f"tokens and its loss {values['discriminator_loss']:.4f} is within "
            f"{self.loss_margin:.0%} of the base-rate loss {base_rate_loss:.4f} (always "
            f"predicting the replaced fraction {values['replaced_fraction']:.3f}), so it learns "
            f"nothing from context. {self.advice}").strip()


class StuckDiscriminatorReport(keras.callbacks.Callback):
    """Feeds every logging window of an ELECTRA run to a `StuckDiscriminatorDetector` and
    logs its warning (absl). A window's values are the logs of its last step: the running
    means since the trainer last reset the metrics, the figures it writes to TensorBoard.
    The step is the optimizer's update count (restored on resume, as the step clock is)."""

    def __init__(self, log_every, detector=None, warn=None):
        super().__init__()
        self.log_every = log_every
        self.detector = detector or StuckDiscriminatorDetector()
        self.warn = warn or logging.warning
        self._last_step = None

    def on_train_batch_end(self, batch, logs=None):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if step == self._last_step or step % self.log_every:
            return
        self._last_step = step
        message = self.detector.observe(step, scalar_floats(logs))
        if message:
            self.warn(message)
