"""Tests for bert_keras.export: exports loaded without this project, as TF Serving loads them."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from bert_keras.serving import export, op_audit, warmup
from bert_keras.tasks.classification import BertClassifier
from bert_keras.tasks.span_qa import BertSpanQA
from bert_keras.text import packing

import tool_runner  # tests/support: tools forked without their imports
from export_harness import (  # noqa: F401  (fixtures too)
    CLIENT,
    LONG_TEXT,
    ROOT,
    SEQ,
    _dec,
    _enc,
    _info,
    _keras_inputs,
    _outputs,
    _texts,
    encoder,
    run_client,
    tokenizer,
)

# -- pieces -----------------------------------------------------------------------------------

def test_pack_segments_matches_tf_text_round_robin(tokenizer):
    # The reference: tf-text's RoundRobinTrimmer + combine_segments (= Google's
    # _truncate_seq_pair), which our core-op packer replaces in the graph.
    a = ["The quick brown fox jumps over the lazy dog again and again and again.", "Hi", "",
         "one two three four five six seven eight nine ten eleven twelve", "x"]
    b = ["A fast fox.", "one two three four five six seven eight nine ten eleven twelve", "",
         "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty", ""]
    for seq_length in (5, 8, 12, 64):
        for texts in ([a], [a, b]):
            segments = [tokenizer.tokenize(t) for t in texts]
            trimmer = tf_text.RoundRobinTrimmer(max_seq_length=seq_length - 1 - len(texts))
            trimmed = trimmer.trim(segments)
            ids, types = tf_text.combine_segments(trimmed, tokenizer.cls_id, tokenizer.sep_id)
            want = {"input_word_ids": ids.to_tensor(tokenizer.pad_id),
                    "input_mask": tf.ones_like(ids).to_tensor(0),
                    "input_type_ids": tf.cast(types, tf.int32).to_tensor(0)}
            got, _ = packing.pack_segments([tokenizer.tokenize(t) for t in texts], seq_length,
                                        tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
            for key in want:
                np.testing.assert_array_equal(got[key].numpy(), want[key].numpy(), err_msg=key)
    # Dynamic length: the longest packed row; an empty batch packs to shape (0, 2).
    got, _ = packing.pack_segments([tokenizer.tokenize(tf.constant([], tf.string))], 16,
                                tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    assert got["input_word_ids"].shape == (0, 2)


def test_prediction_log_bytes_parse(tokenizer):
    sys.path.insert(0, str(CLIENT.parent))
    try:
        import serving_client
    finally:
        sys.path.remove(str(CLIENT.parent))
    texts = np.array([b"caf\xc3\xa9", b"\xff", b""], dtype=object)
    ids = np.arange(6, dtype=np.int32).reshape(2, 3)
    raw = warmup.prediction_log_bytes("my_model", "serving_default", {"text": texts, "ids": ids})
    name, signature, tensors = serving_client.parse_prediction_log(raw)
    assert (name, signature, sorted(tensors)) == ("my_model", "serving_default", ["ids", "text"])
    np.testing.assert_array_equal(tf.make_ndarray(_tensor_proto(tensors["text"])), texts)
    np.testing.assert_array_equal(tf.make_ndarray(_tensor_proto(tensors["ids"])), ids)
    try:  # The real message class, where tensorflow-serving-api is installed.
        from tensorflow_serving.apis import prediction_log_pb2
    except ImportError:
        return
    log = prediction_log_pb2.PredictionLog.FromString(raw)
    assert log.predict_log.request.model_spec.signature_name == "serving_default"
    np.testing.assert_array_equal(tf.make_ndarray(log.predict_log.request.inputs["ids"]), ids)


def _tensor_proto(blob):
    from tensorflow.core.framework import tensor_pb2

    proto = tensor_pb2.TensorProto()
    proto.ParseFromString(blob)
    return proto


def test_op_audit_rejects_unservable_ops(tmp_path):
    class PyModule(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def f(self, x):
            return tf.py_function(lambda v: v * 2, [x], tf.float32)

    path = str(tmp_path / "py")
    tf.saved_model.save(PyModule(), path)
    with pytest.raises(op_audit.OpAuditError, match="EagerPyFunc") as err:
        op_audit.audit_saved_model(path)
    assert "EagerPyFunc" in err.value.ops
    assert "EagerPyFunc" in op_audit.audit_saved_model(path, extra_allowed=["EagerPyFunc"])

    # An op the server's tf-text lacks (what tf-text's RoundRobinTrimmer emits).
    import tensorflow_text as tf_text

    class Trim(tf.Module):
        @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int32)])
        def f(self, x):
            return tf_text.RoundRobinTrimmer(4).trim([x])[0].to_tensor()

    path = str(tmp_path / "trim")
    tf.saved_model.save(Trim(), path)
    with pytest.raises(op_audit.OpAuditError, match="TFText>RoundRobinTrim"):
        op_audit.audit_saved_model(path)


def test_export_fails_and_leaves_nothing_on_unservable_op(tmp_path, tokenizer, encoder,
                                                          monkeypatch):
    monkeypatch.setattr(op_audit, "TF_SERVING_TEXT_OPS", frozenset())  # tf-text ops now "missing"
    with pytest.raises(op_audit.OpAuditError, match="FastWordpieceTokenizeWithOffsets"):
        export.export_saved_model(encoder, tokenizer, _info("encoder"), tmp_path, "enc")
    assert os.listdir(tmp_path / "enc") == []


def test_export_removes_what_a_killed_export_left_and_keeps_a_running_one(tmp_path, tokenizer,
                                                                           encoder, monkeypatch):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process id that no longer runs
    (tmp_path / "enc" / f".tmp-1-{dead.pid}").mkdir(parents=True)
    (tmp_path / "enc" / f".tmp-1-{os.getppid()}").mkdir()  # a live process, still exporting
    monkeypatch.setattr(op_audit, "TF_SERVING_TEXT_OPS", frozenset())  # fail after the cleanup
    with pytest.raises(op_audit.OpAuditError):
        export.export_saved_model(encoder, tokenizer, _info("encoder"), tmp_path, "enc")
    assert os.listdir(tmp_path / "enc") == [f".tmp-1-{os.getppid()}"]


# -- end to end: classifier -------------------------------------------------------------------

BAD_REQUESTS = {
    "empty_strings": {"text_a": ["", ""], "text_b": ["", "b"]},
    "long_text": {"text_a": [LONG_TEXT], "text_b": [LONG_TEXT[:5000]]},
    "non_utf8": {"text_a": [b"caf\xe9 \xff\xfe bad", b"\xc3"], "text_b": [b"ok", b"\x80"]},
    "empty_batch": {"text_a": [], "text_b": []},
    "missing_key": {"text_a": ["only one input"]},
    "batch_mismatch": {"text_a": ["a", "b"], "text_b": ["c"]},
    "after": {"text_a": ["still serving?"], "text_b": ["yes"]},
}


@pytest.fixture(scope="module")
def classifier_export(tmp_path_factory, tokenizer, encoder):
    keras.utils.set_random_seed(1)
    model = BertClassifier(encoder, num_classes=3)
    base = tmp_path_factory.mktemp("saved_models")
    info = _info("classification", labels=["neg", "neu", "pos"], text_fields=["text_a", "text_b"])
    path = export.export_saved_model(model, tokenizer, info, base, "pairs")
    return model, path


def test_classifier_served_without_project(tmp_path, tokenizer, classifier_export):
    model, path = classifier_export
    assert path.endswith(os.path.join("pairs", "1"))
    assert sorted(os.listdir(os.path.join(path, "assets"))) == ["bert_keras_metadata.json",
                                                               "vocab.txt"]
    meta = export.read_metadata(path)
    assert meta["labels"] == ["neg", "neu", "pos"] and meta["seq_length"] == SEQ
    # float32: AVX-512's faster
    assert meta["dtype"] == "float32" and meta["kernel_layout"] == "keras"
    assert meta["signatures"]["serving_default"]["outputs"]["labels"]["dtype"] == "string"
    assert meta["signatures"]["serving_default"]["inputs"] == {
        "text_a": {"dtype": "string", "shape": [None]},
        "text_b": {"dtype": "string", "shape": [None]}}
    assert sorted(meta["signatures"]["encode"]["inputs"]) == ["input_mask", "input_type_ids",
                                                              "input_word_ids"]
    requests = {path: [["serving_default", {k: _enc(np.array(v, dtype=object))
                                            for k, v in r.items()}]
                       for r in BAD_REQUESTS.values()]}
    report = run_client(tmp_path, [path], requests)
    results = report["exports"][path]
    warmup = [r for r in results if r["warmup"]]
    assert [r["signature"] for r in warmup] == ["serving_default"] * 3 + ["preprocess", "encode"]
    assert {r["model_name"] for r in warmup} == {"pairs"}
    sig_defs = report["signature_defs"][path]
    assert sig_defs["serving_default"]["inputs"]["text_a"][1] == tf.string.as_datatype_enum

    labels = np.array([b"neg", b"neu", b"pos"], dtype=object)
    for r in results:
        if r["signature"] != "serving_default" or "tf1_error" in r:
            continue
        out = _outputs(r)
        a, b = _texts(r["inputs"], "text_a"), _texts(r["inputs"], "text_b")
        if not a:  # the empty batch: empty outputs of the documented shapes
            assert out["probabilities"].shape == (0, 3) and out["labels"].shape == (0,)
            continue
        x = _keras_inputs(tokenizer, a, b)
        probs = tf.nn.softmax(model(x, training=False)).numpy()
        np.testing.assert_allclose(out["probabilities"], probs, atol=1e-5)
        np.testing.assert_array_equal(out["label_ids"], probs.argmax(-1))
        np.testing.assert_array_equal(out["labels"], labels[probs.argmax(-1)])
    for r in warmup[3:]:
        out = _outputs(r)
        if r["signature"] == "preprocess":
            x = _keras_inputs(tokenizer, _texts(r["inputs"], "text_a"),
                              _texts(r["inputs"], "text_b"))
            for key in x:
                np.testing.assert_array_equal(out[key], x[key].numpy())
        else:
            want = model.encoder({k: _dec(v) for k, v in r["inputs"].items()}, training=False)
            np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=1e-5)
            np.testing.assert_allclose(out["sequence_output"], want["sequence_output"], atol=1e-5)

    bad = dict(zip(BAD_REQUESTS, results[len(warmup):]))
    assert _outputs(bad["long_text"])["probabilities"].shape == (1, 3)
    assert _outputs(bad["non_utf8"])["labels"].shape == (2,)
    assert _outputs(bad["empty_strings"])["labels"].shape == (2,)
    assert "feed" in bad["missing_key"]["tf1_error"] or "text_b" in bad["missing_key"]["tf1_error"]
    assert "text_b" in bad["missing_key"]["tf2_error"]
    assert "same batch size" in bad["batch_mismatch"]["tf1_error"]
    assert "same batch size" in bad["batch_mismatch"]["tf2_error"]
    assert _outputs(bad["after"])["labels"].shape == (1,)  # the process survived


def test_bfloat16_export_has_bfloat16_encoder_weights(tmp_path, tokenizer, classifier_export):
    model, _ = classifier_export
    info = _info("classification", labels=["neg", "neu", "pos"], text_fields=["text_a", "text_b"])
    path = export.export_saved_model(model, tokenizer, info, tmp_path, "pairs16", dtype="bfloat16")
    assert export.read_metadata(path)["dtype"] == "bfloat16"
    reader = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    dtypes = reader.get_variable_to_dtype_map()  # the encoder's weights, not cast per request
    assert {"bfloat16", "float32"} <= {d.name for d in dtypes.values()}  # encoder, heads
    assert export.read_metadata(path)["kernel_layout"] == "transposed"  # 16-bit: as before
    loaded = tf.saved_model.load(path)
    a, b = ["a fine day", "rain again"], ["sunny", "and cold"]
    out = loaded.signatures["serving_default"](text_a=tf.constant(a), text_b=tf.constant(b))
    assert out["probabilities"].dtype == tf.float32
    want = tf.nn.softmax(model(_keras_inputs(tokenizer, a, b), training=False)).numpy()
    np.testing.assert_allclose(out["probabilities"].numpy(), want, atol=0.02)


def test_saved_model_cli_lists_signatures(classifier_export):
    _, path = classifier_export
    cli = pathlib.Path(sys.executable).parent / "saved_model_cli"
    if not cli.exists():
        pytest.skip(f"no saved_model_cli next to {sys.executable}")
    proc = subprocess.run([str(cli), "show", "--dir", path, "--all"], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    blocks = {}
    for block in proc.stdout.split("signature_def['")[1:]:
        name, body = block.split("']", 1)
        blocks[name] = body
    assert {"serving_default", "encode", "preprocess"} <= set(blocks)

    def tensor(block, kind, key):
        part = block.split(f"{kind}['{key}'] tensor_info:", 1)[1]
        return part.split("dtype: ", 1)[1].split()[0], part.split("shape: ", 1)[1].split("\n")[0]

    serving = blocks["serving_default"]
    assert tensor(serving, "inputs", "text_a") == ("DT_STRING", "(-1)")
    assert tensor(serving, "inputs", "text_b") == ("DT_STRING", "(-1)")
    assert tensor(serving, "outputs", "probabilities") == ("DT_FLOAT", "(-1, 3)")
    assert tensor(serving, "outputs", "label_ids") == ("DT_INT32", "(-1)")
    assert tensor(serving, "outputs", "labels") == ("DT_STRING", "(-1)")
    for key in ("input_word_ids", "input_mask", "input_type_ids"):
        assert tensor(blocks["encode"], "inputs", key) == ("DT_INT32", "(-1, -1)")
    assert tensor(blocks["encode"], "outputs", "sequence_output") == ("DT_FLOAT", "(-1, -1, 16)")
    assert tensor(blocks["encode"], "outputs", "pooled_output") == ("DT_FLOAT", "(-1, 16)")
    assert "TFText>RoundRobinTrim" not in proc.stdout


# -- end to end: every other model type --------------------------------------------------------

@pytest.mark.slow
def test_tools_export_then_predict(tmp_path, tokenizer, encoder, classifier_export):
    from bert_keras.tasks.task_io import save_task

    keras.utils.set_random_seed(3)
    model = BertSpanQA(encoder)
    task_dir = tmp_path / "runs" / "qa" / "best"
    save_task(str(task_dir), model, tokenizer, task="span_qa", seq_length=SEQ,
              text_fields=["question", "context"])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    base = tmp_path / "saved_models"
    # An earlier version (another model's export): the tool writes the next one, and
    # predict.py serves the newest.
    shutil.copytree(classifier_export[1], base / "qa" / "1")
    proc = tool_runner.run([sys.executable, str(ROOT / "tools" / "export.py"),
                            f"--task_dir={task_dir}", f"--export_dir_base={base}",
                            "--dtype=float32"],  # the scores are compared with float32's
                           capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[0] == str(base / "qa" / "2")
    lines = "Who wrote the letter?\tPaul wrote the letter to the church.\n\t\nno tab here\n"
    proc = tool_runner.run([sys.executable, str(ROOT / "tools" / "predict.py"),
                            f"--model_dir={base / 'qa'}", "--batch_size=2"], input=lines,
                           capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode != 0 and "Line 3 has 1 tab-separated fields" in proc.stderr
    assert proc.stdout == ""  # nothing before the bad line either: no partial output
    proc = tool_runner.run([sys.executable, str(ROOT / "tools" / "predict.py"),
                            f"--model_dir={base / 'qa'}", "--batch_size=2"],
                           input=lines.rsplit("no tab here", 1)[0], capture_output=True, text=True,
                           env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["line"] for r in rows] == [1, 2]
    x = _keras_inputs(tokenizer, ["Who wrote the letter?"],
                      ["Paul wrote the letter to the church."])
    logits = model(x, training=False)
    first = rows[0]["outputs"]
    context = "Paul wrote the letter to the church."
    assert first["answer"] == context[first["answer_start"]:first["answer_end"]]
    best = max(float(logits["start_logits"][0, s] + logits["end_logits"][0, e])
               for s in range(7, 17) for e in range(s, 17))  # context tokens 7..16
    assert first["score"] == pytest.approx(best, abs=1e-4)
    assert rows[1]["outputs"]["answer"] == "" and rows[1]["outputs"]["answer_start"] == -1
    proc = tool_runner.run([sys.executable, str(ROOT / "tools" / "export.py")],
                           capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert proc.returncode != 0 and "exactly one of --task_dir or --encoder_dir" in proc.stderr
