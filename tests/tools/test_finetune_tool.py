"""End-to-end tests of tools/finetune.py and bk.run_finetuning on tiny slices of the bundled
data, tiny encoder."""

import gzip
import json
import os
import pathlib
import sys

import numpy as np
import pytest

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "bert_keras" / "assets"
TOOL = ROOT / "tools" / "finetune.py"


def run_tool(args, prelude=None):
    """Runs the tool in a subprocess (absl flags are process-global); returns CompletedProcess."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    options = dict(cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if prelude is None:
        return tool_runner.run([sys.executable, str(TOOL), *args], **options)
    # Python run before the tool in the same process, e.g. a TFDS mock.
    return tool_runner.run_code(prelude, *args, **options)


def common(checkpoint, out, **extra):
    args = {"init_checkpoint": checkpoint, "output_dir": out, "max_seq_length": 64,
            "train_batch_size": 16, "eval_batch_size": 16, "num_train_epochs": 2,
            "learning_rate": 1e-3, "verbose": 0, **extra}
    return [f"--{k}={v}" for k, v in args.items()]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def check_outputs(out, task, num_eval, labels):
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["task"] == task and len(metrics["epochs"]) == 2
    assert metrics["best_epoch"] in (1, 2)
    best = metrics["epochs"][metrics["best_epoch"] - 1]["eval"][metrics["main_metric"]]
    assert best == max(e["eval"][metrics["main_metric"]] for e in metrics["epochs"])
    assert metrics["eval"] == metrics["epochs"][metrics["best_epoch"] - 1]["eval"]
    assert len(read_jsonl(out / "eval_predictions.jsonl")) == num_eval
    info = json.loads((out / "best" / "task.json").read_text())
    assert info["task"] == task and info["labels"] == labels and info["seq_length"] == 64
    assert json.loads((out / "flags.json").read_text())["task"] == task
    return metrics


def test_pair_classification_end_to_end(tiny_checkpoint, tmp_path):
    import tensorflow as tf

    from bert_keras import finetuning_data as fd
    from bert_keras import task_features as tfe
    from bert_keras.data.finetuning import batching
    from bert_keras.data.finetuning.label_map import LabelMap
    from bert_keras.serving.export import export_task
    from bert_keras.tasks import registry

    out = tmp_path / "run"
    result = run_tool(common(tiny_checkpoint, out, task="classification",
                             train_file=DATA / "bible_paraphrase.train.tsv.gz",
                             eval_file=DATA / "bible_paraphrase.dev.tsv.gz",
                             test_file=DATA / "bible_paraphrase.test.tsv.gz", text_b_column=2,
                             max_train_examples=96, max_eval_examples=24,
                             dtype="mixed_bfloat16"))
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = check_outputs(out, "classification", 24, ["0", "1"])
    assert {"accuracy", "f1", "mcc", "macro_f1"} <= set(metrics["eval"])
    assert {"accuracy", "f1"} <= set(metrics["test"])
    assert metrics["baselines"]["majority_accuracy"] > 0
    assert len(read_jsonl(out / "test_predictions.jsonl")) == 24
    # best/ loads for export and reproduces the best epoch's eval predictions.
    model, tokenizer, info = registry.load_task(str(out / "best"))
    assert info["text_fields"] == ["text_a", "text_b"]
    examples = fd.load_bundled_task("bible_paraphrase", "dev")[:24]
    feats = tfe.classification_features(examples, tokenizer, 64, LabelMap(info["labels"]))
    logits = np.stack(batching.predict(model, feats, batch_size=8))
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    rows = read_jsonl(out / "eval_predictions.jsonl")
    saved = np.array([[r["probabilities"][label] for label in info["labels"]] for r in rows])
    np.testing.assert_allclose(probs, saved, atol=2e-4)
    assert [r["prediction"] for r in rows] == [info["labels"][i] for i in probs.argmax(-1)]
    # Trained in mixed bfloat16, it reports what its float32 export serves.
    serve = tf.saved_model.load(export_task(str(out / "best"), str(tmp_path / "exports")))
    test = fd.load_bundled_task("bible_paraphrase", "test")[:24]
    served = serve.signatures["serving_default"](
        text_a=tf.constant([ex.text_a for ex in test]),
        text_b=tf.constant([ex.text_b for ex in test]))["probabilities"].numpy()
    saved = [[r["probabilities"][label] for label in info["labels"]]
             for r in read_jsonl(out / "test_predictions.jsonl")]
    np.testing.assert_allclose(served, saved, atol=1e-5)  # 5e-5 apart in bfloat16


def test_run_finetuning_from_python(tiny_checkpoint, tmp_path):
    import bert_keras as bk
    from bert_keras import finetuning_data as fd
    from bert_keras.data.finetuning import batching
    from bert_keras.data.finetuning.label_map import LabelMap
    from bert_keras.tasks import registry

    all_train = fd.load_bundled_task("wordnet_topics", "train")
    train, dev = all_train[:64], fd.load_bundled_task("wordnet_topics", "dev")[:16]
    label_map = LabelMap.from_examples(all_train)  # all 45 topics; 64 rows miss some
    out = tmp_path / "run"
    record = bk.run_finetuning(task="classification", init_checkpoint=str(tiny_checkpoint),
                               output_dir=str(out), train_examples=train, eval_examples=dev,
                               label_map=label_map,
                               max_seq_length=64, train_batch_size=16, eval_batch_size=16,
                               num_train_epochs=2, learning_rate=1e-3, verbose=0)
    labels = label_map.labels
    metrics = check_outputs(out, "classification", 16, labels)
    assert record == metrics
    assert metrics["main_metric"] == "accuracy" and metrics["train_examples"] == 64
    assert 0.0 <= metrics["eval"]["accuracy"] <= 1.0 and "f1" not in metrics["eval"]  # not binary
    assert metrics["baselines"]["majority_label"] in labels
    # best/ holds the best epoch's model: it reproduces that epoch's eval accuracy.
    model, tokenizer, info = registry.load_task(str(out / "best"))
    assert info["text_fields"] == ["text"] and info["metrics"] == metrics["eval"]
    feats = bk.task_features.classification_features(dev, tokenizer, 64, label_map)
    predicted = np.stack(batching.predict(model, feats, batch_size=8)).argmax(-1)
    accuracy = float(np.mean(predicted == label_map.encode(dev)))
    assert accuracy == pytest.approx(metrics["eval"]["accuracy"])
    with pytest.raises(ValueError, match="exactly one of --train_file, --tfds_name and "
                       r"\(in Python\) train_examples=, got train_examples= and --tfds_name"):
        bk.run_finetuning(task="classification", init_checkpoint=str(tiny_checkpoint),
                          output_dir=str(tmp_path / "bad"), train_examples=train,
                          tfds_name="glue/mrpc")


def test_tagging_with_a_crf_end_to_end(tiny_checkpoint, tmp_path):
    """--task=tagging --crf: the run keeps its CRF in its task directory and its eval
    predictions are that tagger's Viterbi paths. (Tagging without a CRF through the tool:
    tests/tasks/test_transformers_tasks.py; the CRF flags' refusals:
    tests/tasks/tagging/test_crf_tool.py.)"""
    import bert_keras as bk

    out = tmp_path / "run"
    result = run_tool(common(tiny_checkpoint, out, task="tagging", crf=True,
                             crf_constraints="bio",
                             train_file=DATA / "bible_ner.train.conll.gz",
                             eval_file=DATA / "bible_ner.dev.conll.gz",
                             max_train_examples=32, max_eval_examples=20))
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = check_outputs(out, "tagging", 20, ["B-LOC", "B-PER", "O"])
    assert {"precision", "recall", "f1", "word_accuracy"} <= set(metrics["eval"])
    rows = read_jsonl(out / "eval_predictions.jsonl")
    assert all(len(r["predictions"]) == len(r["words"]) == len(r["tags"]) for r in rows)
    assert json.loads((out / "flags.json").read_text())["crf"] is True
    tagger = bk.BertTokenClassifier.from_pretrained(str(out / "best"))
    assert (tagger.crf, tagger.crf_constraints) == (True, "bio")
    assert abs(tagger.crf_layer.transitions.numpy()).max() > 0  # trained
    assert [r["predictions"] for r in rows] == tagger.tag([r["words"] for r in rows])


def test_span_qa_end_to_end(tiny_checkpoint, tmp_path):
    out = tmp_path / "run"
    result = run_tool(common(tiny_checkpoint, out, task="span_qa",
                             train_file=DATA / "wordnet_qa.train.jsonl.gz",
                             eval_file=DATA / "wordnet_qa.dev.jsonl.gz",
                             max_train_examples=64, max_eval_examples=20, max_query_length=24,
                             doc_stride=16))
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = check_outputs(out, "span_qa", 20, None)
    assert {"exact_match", "f1", "total"} <= set(metrics["eval"]) and metrics["eval"]["total"] == 20
    rows = read_jsonl(out / "eval_predictions.jsonl")
    with gzip.open(DATA / "wordnet_qa.dev.jsonl.gz", "rt") as f:
        contexts = [json.loads(line)["context"] for line, _ in zip(f, range(20))]
    # Every prediction is a piece of its own context.
    assert all(r["prediction"] in c for r, c in zip(rows, contexts))


def test_unseen_eval_label_is_a_clear_error(tiny_checkpoint, tmp_path):
    (tmp_path / "train.tsv").write_text("pos\tgood\nneg\tbad\npos\tfine\n")
    (tmp_path / "dev.tsv").write_text("pos\tok\nneg\tmeh\nneutral\tso so\n")
    result = run_tool(common(tiny_checkpoint, tmp_path / "run", task="classification",
                             train_file=tmp_path / "train.tsv", eval_file=tmp_path / "dev.tsv"))
    assert result.returncode != 0
    assert f"label 'neutral' in {tmp_path / 'dev.tsv'}:3 is not in the label map" in result.stderr
    assert not (tmp_path / "run" / "best").exists()


_CHECK_FLAGS = """
import importlib.util, json, sys
from absl import app, flags
spec = importlib.util.spec_from_file_location("finetune_tool", sys.argv[1])
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)
errors = []
for argv in json.loads(sys.argv[2]):
    tool.FLAGS.unparse_flags()
    try:
        tool.FLAGS(["finetune.py"] + argv)
        tool.check_flags()
        errors.append(None)
    except (app.UsageError, flags.Error) as e:
        errors.append(type(e).__name__ + ": " + str(e))
print(json.dumps(errors))
"""


def check_flags(argvs):
    """The tool's check_flags() on each argv, in one process: error strings or None."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = tool_runner.run_code(_CHECK_FLAGS, str(TOOL), json.dumps(argvs), cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_flagfiles_parse_and_pass_the_checks(tiny_checkpoint, tmp_path):
    flagfiles = sorted((ROOT / "flags").glob("finetune_*.flags"))
    assert len(flagfiles) >= 13
    where = [f"--init_checkpoint={tiny_checkpoint}", f"--output_dir={tmp_path}/o"]
    errors = check_flags([[f"--flagfile={f}"] + where for f in flagfiles])
    assert dict(zip([f.name for f in flagfiles], errors)) == {f.name: None for f in flagfiles}


def test_bad_flags_are_usage_errors(tiny_checkpoint, tmp_path):
    ok = ["--task=classification", "--train_file=bert_keras/assets/bible_paraphrase.train.tsv.gz"]
    cases = [
        (ok, None),
        (["--task=classification", "--train_file=/nonexistent/x.tsv"], "UsageError: --train_file"),
        (["--task=translation", "--train_file=x.tsv"], "IllegalFlagValueError"),
        (ok + ["--tfds_name=glue/mrpc"], "not both"),
        (["--task=tagging", "--train_file=bert_keras/assets/bible_paraphrase.train.tsv.gz"],
         "reads ('conll',)"),
        (["--task=span_qa", "--tfds_name=glue/mrpc"], "is a classification task"),
        (["--task=classification", "--tfds_name=glue/nope"], "unsupported TFDS task"),
        (["--task=classification"], "--train_file (or --tfds_name) is required"),
        (ok + ["--eval_file=/nonexistent/dev.tsv"], "--eval_file"),
        (["--task=span_qa", "--train_file=bert_keras/assets/wordnet_qa.train.jsonl.gz",
          "--max_seq_length=64"], "leaves no room"),
        # An empty value unsets a flagfile's: its files give way to --tfds_name.
        (["--flagfile=flags/finetune_wordnet_topics.flags", "--train_file=", "--eval_file=",
          "--test_file=", "--tfds_name=glue/mrpc"], None),
        (["--flagfile=flags/finetune_wordnet_topics.flags", "--train_file="],
         "--train_file (or --tfds_name) is required"),
    ]
    where = [f"--init_checkpoint={tiny_checkpoint}", f"--output_dir={tmp_path}/o"]
    argvs = [args + where for args, _ in cases]
    argvs.append(ok + [f"--init_checkpoint={tmp_path}/missing", f"--output_dir={tmp_path}/o"])
    cases.append((None, "is not a directory"))
    errors = check_flags(argvs)
    for (_, message), error in zip(cases, errors):
        if message is None:
            assert error is None
        else:
            assert error is not None and message in error, (message, error)
    assert not (tmp_path / "o").exists()


def test_bad_flag_exits_before_work(tiny_checkpoint, tmp_path):
    result = run_tool(["--task=classification", "--train_file=/nonexistent/x.tsv",
                       f"--init_checkpoint={tiny_checkpoint}", f"--output_dir={tmp_path}/o"])
    assert result.returncode != 0 and "no files match '/nonexistent/x.tsv'" in result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_tfds_glue_task_with_mock_data(tiny_checkpoint, tmp_path):
    prelude = (
        "import runpy, sys, tensorflow_datasets as tfds\n"
        f"sys.argv = [{str(TOOL)!r}] + sys.argv[1:]\n"
        "with tfds.testing.mock_data(num_examples=40):\n"
        f"    runpy.run_path({str(TOOL)!r}, run_name='__main__')\n"
    )
    out = tmp_path / "run"
    result = run_tool(common(tiny_checkpoint, out, task="classification", tfds_name="glue/mrpc"),
                      prelude=prelude)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = check_outputs(out, "classification", 40, ["not_equivalent", "equivalent"])
    assert metrics["main_metric"] == "f1"  # GLUE's MRPC metric
    assert {"glue_accuracy", "glue_f1"} <= set(metrics["eval"])
