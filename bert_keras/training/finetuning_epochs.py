"""The epochs of a fine-tuning run for the trainer (`loop.train`): the evaluation after each
epoch, the best one on disk (best/, metrics.json), the run's record in each checkpoint and
what a resumed run takes back from it. `finetuning.py` makes one per run."""

import time

from bert_keras import files
from bert_keras.training import finetuning_state as state_lib
from bert_keras.training.loop import Evaluation


class FinetuneEpochs(Evaluation):
    """The epochs of a run for the trainer: evaluation after each, the best one on disk, the
    run's record in each checkpoint (the state holds the position as `epoch`: epochs done,
    `batch`: steps done of the next one)."""

    def __init__(self, run, steps_per_epoch):
        config = run.config
        super().__init__(steps_per_epoch, main_metric=run.main_metric if run.evaluation else None,
                         patience=config.early_stopping_patience)
        self.run, self.model, self.steps_per_epoch = run, None, steps_per_epoch
        self.done, self.best_rows, self._rows = 0, None, None

    def evaluate(self, model):
        run = self.run
        if not run.evaluation:
            return {}
        self._rows, predicted = run.predict(run.served(self.model), run.evaluation,
                                            run.eval_features)
        result = run.task.score(run.evaluation, predicted, run.label_map, run.glue_task)
        if run.teacher is not None:
            result.update(run.task.teacher_metrics(predicted, run.teacher_predicted))
        return result

    def describe(self, step, result, train_metrics):
        if not result:
            return None
        main = self.main_metric
        agreement = "".join(f", {k} {v:.4f}" for k, v in result.items() if k.startswith("teacher_"))
        return (f"epoch {step // self.steps_per_epoch}: eval {main} = {result[main]:.4f}"
                f"{agreement} (train loss {train_metrics.get('loss', float('nan')):.4f})")

    def before_checkpoint(self, step, result, train_metrics, better):
        run, record = self.run, self.run.record
        epoch = step // self.steps_per_epoch
        train_metrics = dict(train_metrics)
        entry = {"epoch": epoch, "train_loss": train_metrics.pop("loss")}
        if run.teacher is not None:  # the soft and hard loss terms and the teacher agreement
            entry.update({f"train_{k}": v for k, v in train_metrics.items()})
        entry["seconds"] = round(time.time() - run.started, 1)
        if result:
            entry["eval"] = result
        record["epochs"].append(entry)
        if better:
            record["best_epoch"], self.best_rows = epoch, self._rows
        self.done = epoch

    def after_checkpoint(self, step, better):
        """best/ and metrics.json after the checkpoint: a kill during the best/ save is then
        redone by `restore`."""
        if not self.chief:
            return
        record = self.run.record
        if better:
            self.run.save_best(self.model, record["epochs"][-1].get("eval", {}))
        files.write_json(files.join(self.run.config.output_dir, "metrics.json"), record)

    def state(self, step):
        record = self.run.record
        return dict(epoch=step // self.steps_per_epoch, batch=step % self.steps_per_epoch,
                    epochs=record["epochs"], best_epoch=record["best_epoch"],
                    seconds=time.time() - self.run.started,
                    data_fingerprint=record["data_fingerprint"])

    def restore(self, saved):
        if not saved:
            return
        run, record = self.run, self.run.record
        state_lib.check_same_data(run.config.output_dir, "an unfinished run",
                                  saved["data_fingerprint"], record["data_fingerprint"])
        self.done = saved["epoch"]
        record["epochs"], record["best_epoch"] = saved["epochs"], saved["best_epoch"]
        run.started = time.time() - saved["seconds"]
        if self.chief and record["best_epoch"] == self.done and not saved["batch"]:
            # The kill may have cut this epoch's best/ save, which follows its checkpoint (a
            # checkpoint inside the next epoch comes after a complete save).
            run.save_best(self.model, record["epochs"][self.done - 1].get("eval", {}))

    def position(self, step, train_steps):
        epochs, done = self.run.config.num_train_epochs, f"epoch {self.done} of"
        batch = step % self.steps_per_epoch
        if not batch:
            return f": {done} {epochs} done, training from epoch {self.done + 1}"
        return (f": {done} {epochs} done and {batch} of {self.steps_per_epoch} steps of epoch "
                f"{self.done + 1}, training from its step {batch + 1}")


__all__ = ["FinetuneEpochs"]
