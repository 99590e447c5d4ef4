"""The teacher of task distillation (`--teacher_dir`): a fine-tuned task directory, checked
against the run, and its logits on the training data as a second target.

`run_finetuning` with a teacher trains the student (the usual model over `--init_checkpoint`)
on alpha x the soft-target loss against the teacher's logits + (1 - alpha) x the task's own
loss (`models.objectives.task_distillation.TaskDistiller`). The student must read the
teacher's inputs: same task type, the same vocabulary (the teacher reads the student's token
ids), and the student's labels among the teacher's (the student then takes the teacher's
label list, so their logits line up); anything else is an `InputError` naming both sides.

Why the teacher's logits are computed once per example, before the student is built, and not
by a frozen teacher inside every training step: the teacher runs with training=False, so its
logits on a feature are the same in every epoch, and as one more target column of the data
(next to the labels):
- the model that trains holds no teacher, so the epoch checkpoints hold only the student and
  its optimizer and resume after a kill exactly as without a teacher (a restarted run
  recomputes the logits from the same teacher; the hash of the teacher's files is part of the
  run's data fingerprint, so a changed teacher is refused instead of silently resumed);
- under tf.distribute each replica gets its batch's logits with the batch (no teacher
  variables to mirror, no teacher in the strategy scope);
- best/ is the plain student task model, exported as any other;
- one teacher forward pass per example in all, not one per example and epoch.
The cost is memory: N x C floats (tagging: N x tokens x C), small next to the features.

>>> import bert_keras.training.finetuning_teacher as ft
>>> ft.TEACHER_LOGITS
'teacher_logits'
"""

import hashlib
import os

import numpy as np

from bert_keras import files
from bert_keras.data.finetuning import batching
from bert_keras.data.finetuning.label_map import LabelMap
from bert_keras.errors import InputError
from bert_keras.models.objectives.task_distillation import TEACHER_LOGITS, TaskDistiller
from bert_keras.tasks import registry, task_io
from bert_keras.text.tokenizers import load_tokenizer, tokenizer_difference


def find_task_directory(path):
    """The task directory of `path`: itself, or its best/ (a tools/finetune.py output dir);
    InputError naming the path otherwise."""
    directory = task_io.find_task_directory(path, "best")
    if directory:
        return directory
    if not files.isdir(path):
        raise InputError(f"--teacher_dir={path!r} does not exist.")
    raise InputError(f"--teacher_dir={path!r} is not a fine-tuned task directory: no task.json "
                     "in it or in its best/ (give a tools/finetune.py output dir or its best/).")


class Teacher:
    """A fine-tuned teacher for `config` (a FinetuneConfig with `teacher_dir`).

    Opening it reads task.json and the two vocabularies and checks the task type and the
    vocabulary (before any work); `label_map` and `annotate` then check and use it on the
    run's data.
    """

    def __init__(self, config):
        self.config = config
        self.directory = find_task_directory(config.distillation.teacher_dir)
        self.flag = f"--teacher_dir={config.distillation.teacher_dir}"
        self.info = task_io.read_task_info(self.directory)
        if self.info["task"] != config.task:
            raise InputError(f"{self.flag} holds a {self.info['task']!r} model, but "
                             f"--task={config.task}: the teacher must be of the student's task "
                             "type.")
        self.check_vocab(load_tokenizer(config.init_checkpoint))

    def check_vocab(self, tokenizer):
        """InputError unless the student's tokenizer (of --init_checkpoint) is the teacher's
        kind of tokenizer, packs pairs as it does and has its vocabulary and casing: the
        teacher reads the student's token ids (the vocabularies are compared, not the
        families' names)."""
        teacher = load_tokenizer(self.directory, lower_case=self.info["lower_case"])
        difference = tokenizer_difference(teacher, tokenizer)
        if difference:
            raise InputError(f"{self.flag}: the teacher's tokenizer and the student's "
                             f"(--init_checkpoint={self.config.init_checkpoint}) differ: "
                             f"{difference}; the teacher reads the student's token ids, so "
                             "both need the same tokenizer.")

    def label_map(self, label_map):
        """The student's LabelMap: the teacher's labels, in its order, when the student's
        labels are all among them (so the logits line up); InputError naming the others."""
        labels = self.info.get("labels")
        if label_map is None or labels is None:
            return label_map
        unknown = [label for label in label_map.labels if label not in labels]
        if unknown:
            raise InputError(f"{self.flag} was trained on the labels {_listed(labels)}, which "
                             f"lack {_listed(unknown)} of the student's data: distil on data "
                             "of the teacher's label set.")
        return LabelMap(labels, multi_label=label_map.multi_label)

    def fingerprint(self):
        """{"teacher": hash of the teacher's model.keras and task.json}: for the run's data
        fingerprint (a resumed run must learn from the same teacher)."""
        digest = hashlib.sha256()
        for name in ("task.json", "model.keras"):
            with files.open_file(files.join(self.directory, name), "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
        return {"teacher": [digest.hexdigest()]}

    def annotate(self, run):
        """Adds the teacher's logits on the training features as `TEACHER_LOGITS` (float32,
        (N, C) or one (T_i, C) row per feature), sets `run.teacher_predicted` (its predictions
        on the eval data, for the eval agreement) and records the teacher's eval scores."""
        config, task = run.config, run.task
        model, _, _ = registry.load_task(self.directory)
        positions = model.encoder.max_positions
        if config.max_seq_length > positions:
            raise InputError(f"--max_seq_length={config.max_seq_length} exceeds the "
                             f"{positions} positions of the teacher ({self.flag}).")
        logits = batching.predict(model, run.train_features, config.eval_batch_size,
                                  token_outputs=task.token_outputs, pad_id=run.tokenizer.pad_id)
        if task.token_outputs:
            logits = [np.asarray(row, np.float32) for row in logits]  # (T_i, C) each
        else:
            logits = np.stack(logits).astype(np.float32)  # (N, C)
        run.train_features[TEACHER_LOGITS] = logits
        directory = os.path.abspath(self.directory) if files.is_local(self.directory) else (
            self.directory)
        record = {"dir": directory, "metrics": self.info.get("metrics", {})}
        run.teacher_predicted = None
        if run.evaluation:
            _, run.teacher_predicted = task.predict(model, run.evaluation, run.eval_features,
                                                    run.label_map, config)
            record["eval"] = task.score(run.evaluation, run.teacher_predicted, run.label_map,
                                        run.glue_task)
            print(f"teacher: eval {run.main_metric} = "
                  f"{record['eval'].get(run.main_metric, float('nan')):.4f}", flush=True)
        run.record["teacher"] = record

    def trainer(self, student, task):
        """The model that trains `student` against the teacher's logits."""
        return TaskDistiller(student, task.soft_targets,
                             temperature=self.config.distillation.distill_temperature,
                             alpha=self.config.distillation.distill_alpha,
                             token_level=bool(task.token_outputs))

    def dataset(self, task, features, batch_size, *, shuffle, seed, pad_id):
        """Batches of (inputs, {"labels", TEACHER_LOGITS}) for the trainer."""
        return batching.make_dataset(features, batch_size, (task.label_keys, TEACHER_LOGITS),
                                     shuffle=shuffle, seed=seed, pad_id=pad_id)


def _listed(labels, most=10):
    """The first `most` labels, and how many there are in all when there are more."""
    shown = ", ".join(repr(label) for label in labels[:most])
    return f"[{shown}]" if len(labels) <= most else f"[{shown}, ...] ({len(labels)} in all)"


__all__ = ["TEACHER_LOGITS", "Teacher", "find_task_directory"]
