"""The trainer's own rules (loop.train): when it checkpoints and evaluates, what a resumed run
restores (running metrics, the evaluation's state), the best metric and early stopping, the
eval scalars; with toy regressions in-process (seconds)."""

import glob
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_keras.training import callbacks as callbacks_lib
from bert_keras.training import loop


def _data(n=48):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype("float32")
    return x, (x @ np.array([1.0, -2.0, 0.5], "float32"))[:, None]


def model_fn():
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return model


def dataset_fn(batch_size, input_context):
    x, y = _data()
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size)


def checkpoint_steps(model_dir):
    names = glob.glob(os.path.join(model_dir, "checkpoints", "ckpt-*.index"))
    return sorted(int(os.path.basename(n)[5:-6]) for n in names)


class Recorder(loop.Evaluation):
    """An evaluation that records what the trainer tells it, with a state of its own."""

    def __init__(self, every_steps, scores=None, **kwargs):
        super().__init__(every_steps, **kwargs)
        self.scores, self.seen, self.calls = list(scores or []), [], 0

    def evaluate(self, model):
        self.calls += 1
        x, y = _data()
        mse = float(np.mean((model.predict(x, verbose=0) - y) ** 2))
        return {"score": self.scores.pop(0) if self.scores else -mse, "mse": mse}

    def before_checkpoint(self, step, result, train_metrics, better):
        self.seen.append((step, result["score"], dict(train_metrics), better))

    def state(self, step):
        return {"seen": len(self.seen), "at": step}

    def restore(self, state):
        self.restored = state


def train(model_dir, train_steps, **kwargs):
    return loop.train(model_fn, dataset_fn, model_dir=str(model_dir), train_steps=train_steps,
                      global_batch_size=4, progress=False, **kwargs)


def test_checkpoints_fall_on_multiples_of_the_step_at_each_evaluation_and_at_the_end(tmp_path):
    train(tmp_path, 23, checkpoint_every=5, keep_checkpoints=20, evaluation=Recorder(7))
    assert checkpoint_steps(tmp_path) == [5, 7, 10, 14, 15, 20, 21, 23]


def test_with_checkpoint_every_0_checkpoints_follow_the_training_time(tmp_path, monkeypatch):
    clock = [0.0]

    class TwoHundredFiftySecondSteps(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            clock[0] += 250.0

    monkeypatch.setattr(callbacks_lib, "now", lambda: clock[0])
    train(tmp_path, 10, checkpoint_every=0, checkpoint_every_seconds=600, keep_checkpoints=20,
          extra_callbacks=[TwoHundredFiftySecondSteps()])
    assert checkpoint_steps(tmp_path) == [3, 6, 9, 10]  # 750 s, 1500 s, 2250 s; the end


def test_a_run_resumed_inside_a_window_reports_the_means_of_an_uninterrupted_one(tmp_path):
    """Evaluations every 6 steps, logging windows of 4: the run killed after its checkpoint
    of step 3 (inside a window and an evaluation period) and resumed ends with the
    uninterrupted run's figures, windows, weights and train means; the evaluation gets its
    state back."""

    class Killed(Exception):
        pass

    class KillAtStep3(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                raise Killed()

    whole = Recorder(6)
    want = train(tmp_path / "whole", 12, checkpoint_every=100, log_every=4, evaluation=whole)
    with pytest.raises(Killed):
        train(tmp_path / "resumed", 12, checkpoint_every=3, log_every=4, evaluation=Recorder(6),
              extra_callbacks=[KillAtStep3()])
    resumed = Recorder(6)
    got = train(tmp_path / "resumed", 12, checkpoint_every=100, log_every=4, evaluation=resumed)
    assert resumed.restored == {"seen": 0, "at": 3}
    assert [s for s, *_ in resumed.seen] == [6, 12] == [s for s, *_ in whole.seen]
    for (_, g_score, g_train, _), (_, w_score, w_train, _) in zip(resumed.seen, whole.seen):
        assert g_score == pytest.approx(w_score, rel=1e-6)
        assert g_train == pytest.approx(w_train, rel=1e-6)
    assert [s for s, _ in want.history] == [4, 6, 8, 12]  # windows end at evaluations too
    assert got.history[-1][1]["loss"] == pytest.approx(want.history[-1][1]["loss"], rel=1e-6)
    assert [s for s, _ in got.evaluations] == [6, 12]
    for a, b in zip(got.model.get_weights(), want.model.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_the_best_metric_is_tracked_and_early_stopping_ends_the_run(tmp_path):
    # Scores 1, 3, 2, 2.5, 2.9: better at 1 and 3, then 3 evaluations without: stop at step 10.
    evaluation = Recorder(2, scores=[1, 3, 2, 2.5, 2.9, 4], main_metric="score", patience=3)
    result = train(tmp_path, 20, checkpoint_every=100, evaluation=evaluation)
    assert [(s, better) for s, _, _, better in evaluation.seen] == [
        (2, True), (4, True), (6, False), (8, False), (10, False)]
    assert result.stopped_early and result.step == 10
    # A rerun of the stopped run trains nothing and keeps the answer.
    again = Recorder(2, main_metric="score", patience=3)
    rerun = train(tmp_path, 20, checkpoint_every=100, evaluation=again)
    assert rerun.stopped_early and again.calls == 0 and again.restored["at"] == 10


def test_a_main_metric_missing_from_the_evaluation_is_named(tmp_path):
    with pytest.raises(ValueError, match="main_metric='accuracy' is not among the eval metrics "
                                         r"\['mse', 'score'\]"):
        train(tmp_path, 4, checkpoint_every=100, evaluation=Recorder(2, main_metric="accuracy"))


def test_evaluations_are_written_to_tensorboard_eval(tmp_path):
    train(tmp_path, 6, checkpoint_every=100, evaluation=Recorder(3, scores=[0.25, 0.5]))
    scalars = {}
    for path in glob.glob(os.path.join(tmp_path, "eval", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    assert scalars["score"] == {3: 0.25, 6: 0.5} and set(scalars["mse"]) == {3, 6}
