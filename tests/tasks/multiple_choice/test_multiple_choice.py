"""The multiple-choice task type against transformers: every family's `*ForMultipleChoice`
checkpoint (tests/fixtures/make_multiple_choice_references.py) imports with its head and
scores each choice, packed as the pair (context, ending), as transformers does: from ids, from
raw text in user code, and through the export's serving function. One export (tools/export.py
--task_dir) served in a process without this project; tools/finetune.py on the bundled
bible_next_verse task (CSV) with JSON lines eval data; fit / predict / save in user code."""

import json
import pathlib
import shutil
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.errors import InputError
from bert_keras.models.encoder.inference import cast_for_inference
from bert_keras.serving import export
from bert_keras.tasks import registry
from bert_keras.tasks.multiple_choice import featurizer
from bert_keras.tasks.multiple_choice.reader import MultipleChoiceExample

import tool_runner  # tests/support: tools forked without their imports
from export_harness import _enc, _outputs, run_client

SEQ = 64  # the fixtures' position table
ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
CHOICES = FIXTURES / "multiple_choice"
# The checkpoint -> the family fixture whose tokenizer files it takes.
SOURCES = json.loads((CHOICES / "sources.json").read_text())
NAMES = sorted(SOURCES)
BATCHES = json.loads((CHOICES / "examples.json").read_text(encoding="utf-8"))
NOT_TOKENIZER = ("config.json", "model.safetensors", "*.npz", "multilingual.json", "answers.json")


def checkpoint(name, directory):
    """`directory`/`name`: the checkpoint `name` with its tokenizer files; returns the path."""
    path = pathlib.Path(directory) / name
    shutil.copytree(FIXTURES / "families" / SOURCES[name], path,
                    ignore=shutil.ignore_patterns(*NOT_TOKENIZER))
    for file in ("config.json", "model.safetensors"):
        shutil.copyfile(CHOICES / name / file, path / file)
    return path


def reference(name):
    return dict(np.load(CHOICES / name / "reference.npz"))


def examples_of(name):
    """(contexts, choices, labels) of a batch of examples.json."""
    examples = BATCHES[name]
    return ([ex["context"] for ex in examples], [ex["choices"] for ex in examples],
            [ex["label"] for ex in examples])


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def reference_ids(ref, batch):
    """The (B, K, T) inputs transformers' tokenizer made for `batch`."""
    ids = ref[f"{batch}_input_ids"]
    return {"input_word_ids": ids, "input_mask": ref[f"{batch}_attention_mask"],
            "input_type_ids": ref.get(f"{batch}_token_type_ids", np.zeros_like(ids))}


@pytest.mark.parametrize("name", NAMES)
def test_each_family_scores_the_choices_as_transformers(tmp_path, name):
    path = checkpoint(name, tmp_path)
    ref = reference(name)
    model, tokenizer, info = registry.load_task(str(path))
    assert info["task"] == "multiple_choice" and isinstance(model, bk.BertMultipleChoice)
    user_model = bk.BertMultipleChoice.from_pretrained(path, seq_length=SEQ)
    functions = export.serving_functions(model, tokenizer, dict(info, seq_length=SEQ))
    for batch in ("four", "two"):
        want = ref[f"{batch}_logits"]  # (B, K)
        np.testing.assert_allclose(model.predict(reference_ids(ref, batch), verbose=0), want,
                                   atol=1e-4, err_msg=name)
        contexts, choices, _ = examples_of(batch)
        examples = [MultipleChoiceExample(c, row) for c, row in zip(contexts, choices)]
        features = featurizer.choice_features(examples, tokenizer, SEQ)
        for n, rows in enumerate(features["input_word_ids"]):  # transformers' ids, unpadded
            np.testing.assert_array_equal(rows, ref[f"{batch}_input_ids"][n, :, :rows.shape[1]])
            np.testing.assert_array_equal(features["input_mask"][n], ref[
                f"{batch}_attention_mask"][n, :, :rows.shape[1]])
        np.testing.assert_allclose(user_model.predict((contexts, choices)), want, atol=1e-4)
        out = functions.serve(tf.constant(contexts), tf.constant(choices))
        np.testing.assert_allclose(out["probabilities"], softmax(want), atol=1e-4, err_msg=name)
        np.testing.assert_array_equal(out["choice"], want.argmax(-1))


def test_a_summary_other_than_the_one_read_is_refused_in_one_line(tmp_path):
    path = checkpoint("electra", tmp_path)
    config = json.loads((path / "config.json").read_text())
    config["summary_activation"] = "tanh"
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="summary_activation='tanh'; the "
                                         "ElectraForMultipleChoice head that can be read has "
                                         "summary_activation='gelu'"):
        registry.load_task(str(path))


def test_user_code_fits_predicts_and_saves(tmp_path):
    """A new tiny encoder (the fixtures' N(0, 0.3) weights saturate the pooler: no gradient)
    with the WordPiece fixture's tokenizer."""
    keras.utils.set_random_seed(0)
    tokenizer = bk.load_tokenizer(str(FIXTURES / "families" / "distilbert"))
    encoder = bk.BertEncoder(vocab_size=len(tokenizer.vocab), num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=SEQ, dropout=0.0,
                             attention_dropout=0.0)
    model = bk.BertMultipleChoice(encoder, dropout=0.0,
                                  preprocessor=bk.TextPreprocessor(tokenizer, SEQ))
    contexts, choices, labels = examples_of("four")
    model.compile(optimizer=keras.optimizers.Adam(1e-3))  # the default loss and accuracy
    loss_before, _ = model.evaluate((contexts, choices), labels, verbose=0)
    model.fit((contexts * 4, choices * 4), labels * 4, batch_size=4, epochs=3, verbose=0)
    loss_after, accuracy = model.evaluate((contexts, choices), labels, verbose=0)
    assert loss_after < loss_before and accuracy == 1.0, (loss_before, loss_after, accuracy)
    history = model.fit((contexts * 4, choices * 4), labels * 4, validation_split=0.25,
                        verbose=0)
    assert "val_accuracy" in history.history
    after = model.predict((contexts, choices))
    assert after.shape == (3, 4) and after.dtype == np.float32
    path = tmp_path / "choices.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.predict((contexts, choices)), after, atol=1e-5)
    two = examples_of("two")
    assert loaded.predict(two[:2]).shape == (2, 2)  # any K

    with pytest.raises(ValueError, match="row 1 of choices has 3 choices and row 0 2"):
        model.predict((["a", "b"], [["x", "y"], ["x", "y", "z"]]))
    with pytest.raises(ValueError, match=r"y\[0\] = 4 is not a class id in \[0, 4\)"):
        model.fit((contexts, choices), [4, 0, 0])
    with pytest.raises(ValueError, match=r"takes \(contexts, choices\)"):
        model.predict(["just a text"])
    with pytest.raises(ValueError, match="2 context"):
        model.predict((["a", "b"], [["x", "y"]]))


def test_featurizing_refuses_a_data_set_of_mixed_numbers_of_choices():
    examples = [MultipleChoiceExample("c", ["a", "b"], 0, source="f.jsonl:1"),
                MultipleChoiceExample("c", ["a", "b", "d"], 0, source="f.jsonl:2")]
    with pytest.raises(ValueError, match="f.jsonl:1 has 2 choices and f.jsonl:2 3"):
        featurizer.choice_features(examples, None, SEQ)


# -- one export, served by the TF1 and TF2 loaders in `python -I -S` ---------------------------

BAD_REQUESTS = {
    "one choice": {"text": ["a"], "choices": [["x"]]},
    "rows differ": {"text": ["a", "b"], "choices": [["x", "y"]]},
    "rank-1 choices": {"text": ["a"], "choices": ["x", "y"]},
}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The roberta fixture exported by tools/export.py --task_dir and the client's report on:
    the K = 4 and K = 2 batches, each malformed request followed by a good one."""
    tmp_path = tmp_path_factory.mktemp("served")
    path = checkpoint("roberta", tmp_path)
    tool = tool_runner.run([sys.executable, "tools/export.py", f"--task_dir={path}",
                            f"--seq_length={SEQ}", f"--export_dir_base={tmp_path / 'saved'}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert tool.returncode == 0, tool.stderr[-3000:]
    export_dir = tool.stdout.splitlines()[0]
    good = {batch: {"text": _enc(np.array(examples_of(batch)[0], object)),
                    "choices": _enc(np.array(examples_of(batch)[1], object))}
            for batch in ("four", "two")}
    requests = [["serving_default", good["four"]], ["serving_default", good["two"]]]
    for bad in BAD_REQUESTS.values():
        requests.append(["serving_default", {k: _enc(np.array(v, object))
                                             for k, v in bad.items()}])
        requests.append(["serving_default", good["two"]])
    report = run_client(tmp_path, [export_dir], {export_dir: requests})
    return export_dir, [r for r in report["exports"][export_dir] if not r["warmup"]], \
        [r for r in report["exports"][export_dir] if r["warmup"]]


@pytest.mark.slow
def test_the_export_answers_as_transformers_and_refuses_malformed_requests(served):
    export_dir, results, warmup = served
    ref = reference("roberta")
    for result, batch in zip(results, ["four", "two"] + ["bad", "two"] * len(BAD_REQUESTS)):
        if batch == "bad":
            assert "tf1_error" in result and "tf2_error" in result, result
            assert "InvalidArgument" in result["tf2_error"], result["tf2_error"]
            continue
        out = _outputs(result)  # tf1 and tf2 agree
        want = ref[f"{batch}_logits"]
        np.testing.assert_allclose(out["probabilities"], softmax(want), atol=1e-4)
        np.testing.assert_array_equal(out["choice"], want.argmax(-1))
    errors = [r["tf2_error"] for r in results[2::2]]
    assert "at least 2 choices" in errors[0] and "one row per example" in errors[1]
    assert "choices must be a rank-2 string tensor" in errors[2]
    assert warmup and all("tf1" in r and "tf2" in r for r in warmup), warmup
    longest = [_outputs(r) for r in warmup if r["signature"] == "serving_default"]
    assert {o["probabilities"].shape[1] for o in longest} == {3}
    metadata = export.read_metadata(export_dir)
    assert metadata["task"] == "multiple_choice"
    assert metadata["signatures"]["serving_default"]["inputs"]["choices"]["shape"] == [None, None]


# -- tools/finetune.py ---------------------------------------------------------------------------

@pytest.mark.slow
def test_finetune_tool_reads_csv_and_jsonl_scores_accuracy_and_keeps_the_best(tmp_path):
    """The bundled task's CSV for training, JSON lines (the same rows) for evaluation."""
    from bert_keras import assets

    train = registry.get_task("multiple_choice").read_files(
        [assets.path("bible_next_verse.dev.csv.gz")], "csv", header=True,
        text_a_column="context", label_column="label")[:16]
    eval_file = tmp_path / "eval.jsonl"
    eval_file.write_text("".join(json.dumps(dict(context=ex.context, choices=ex.choices,
                                                 label=ex.label)) + "\n" for ex in train))
    result = tool_runner.run(
        [sys.executable, "tools/finetune.py", "--flagfile=flags/finetune_bible_next_verse.flags",
         f"--init_checkpoint={FIXTURES / 'families' / 'distilbert'}",
         f"--output_dir={tmp_path / 'run'}", f"--eval_file={eval_file}", "--test_file=",
         "--text_a_field=context", "--max_train_examples=32", "--num_train_epochs=1",
         f"--max_seq_length={SEQ}", "--learning_rate=1e-3", "--verbose=0"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert record["main_metric"] == "accuracy" and record["eval_examples"] == 16
    labels = [ex.label for ex in train]
    # The most frequent right index of the 32 training rows, scored on the 16 eval rows.
    assert record["baselines"]["majority_accuracy"] == pytest.approx(
        labels.count(record["baselines"]["majority_choice"]) / 16)
    rows = [json.loads(line) for line in
            (tmp_path / "run" / "eval_predictions.jsonl").read_text().splitlines()]
    assert [r["label"] for r in rows] == labels
    assert record["eval"]["accuracy"] == pytest.approx(
        np.mean([r["prediction"] == r["label"] for r in rows]))
    model, tokenizer, info = registry.load_task(str(tmp_path / "run" / "best"))
    assert info["task"] == "multiple_choice" and info["text_fields"] == ["text", "choices"]
    features = featurizer.choice_features(train, tokenizer, SEQ)
    served = cast_for_inference(model, "float32")  # what the run predicted with
    probabilities = softmax(featurizer.choice_logits(served, features))
    np.testing.assert_allclose(probabilities, [r["probabilities"] for r in rows], atol=1e-4)
