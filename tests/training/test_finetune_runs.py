"""Fine-tuning runs on the trainer: with --gradient_accumulation_steps one optimizer update per
N batches, so the learning-rate schedule (warmup + linear decay over the run's updates) ends
at --end_learning_rate exactly at the last batch (an update per batch would reach it after a
third of the run); --early_stopping_patience ends a run whose main metric stops improving,
with best/ from the best epoch."""

import glob
import os
import pathlib

import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.data.finetuning.bundled import load_bundled_task

DATA = pathlib.Path(__file__).resolve().parents[2] / "bert_keras" / "assets"


def _scalars(directory):
    out = {}
    for path in glob.glob(os.path.join(directory, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                out.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    return out


def _encoder(tmp_path):
    tokenizer = bk.BertTokenizer(str(DATA / "vocab.txt"))
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=32,
                             num_heads=2, intermediate_size=64, max_positions=64)
    encoder.save_pretrained(str(tmp_path / "encoder"), tokenizer=tokenizer)
    return str(tmp_path / "encoder")


@pytest.mark.parametrize("accumulation", [1, 3])
def test_accumulated_updates_follow_the_schedule_to_its_end(tmp_path, accumulation):
    _encoder(tmp_path)
    train = load_bundled_task("bible_paraphrase", "train")[:192]  # 12 batches of 16 an epoch
    record = bk.run_finetuning(
        task="classification", init_checkpoint=str(tmp_path / "encoder"),
        output_dir=str(tmp_path / "run"), train_examples=train, eval_examples=train[:32],
        max_seq_length=64, train_batch_size=16, num_train_epochs=2, learning_rate=1e-3,
        warmup_proportion=0.25, gradient_accumulation_steps=accumulation, verbose=0)
    assert record["steps_per_epoch"] == 12 and record["complete"]
    rates = _scalars(str(tmp_path / "run" / "train"))["learning_rate"]
    # 24 batches = 24 / N updates; warmup over a quarter of them, then decay to 0 at the end.
    assert sorted(rates) == [12, 24]
    assert rates[24] == pytest.approx(0.0, abs=1e-9)
    updates = 24 // accumulation
    warmup = int(0.25 * updates)
    done = 12 // accumulation  # updates after epoch 1
    want = 1e-3 * (updates - done) / (updates - warmup)
    assert rates[12] == pytest.approx(want, rel=1e-4)


def test_early_stopping_ends_a_run_that_stops_improving_and_keeps_the_best_epoch(tmp_path):
    # A learning rate far too high: the model falls to one answer and its accuracy stays.
    train = load_bundled_task("bible_paraphrase", "train")[:96]
    record = bk.run_finetuning(
        task="classification", init_checkpoint=_encoder(tmp_path),
        output_dir=str(tmp_path / "run"), train_examples=train, eval_examples=train[:48],
        max_seq_length=64, train_batch_size=16, num_train_epochs=8, learning_rate=0.5,
        early_stopping_patience=2, verbose=0)
    epochs, best = record["epochs"], record["best_epoch"]
    accuracies = [e["eval"]["accuracy"] for e in epochs]
    assert len(epochs) < 8 and record["stopped_early_after_epoch"] == len(epochs) == best + 2
    # The first epoch of the highest accuracy: a tie is no improvement.
    assert best - 1 == accuracies.index(max(accuracies))
    assert record["eval"] == epochs[best - 1]["eval"] and record["complete"]
