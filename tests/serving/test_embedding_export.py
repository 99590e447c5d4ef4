"""Sentence-embedding exports (task type `embedding`): `bk.export_model(embedder)` and
`tools/export.py --encoder_dir=... --pooling=... --normalize --truncate_dim=D` serve
`text -> embeddings`, equal to `BertEmbedder.predict` (and to transformers' recipe, cut to D
and renormalized) in a process without this project; bad flags are refused in one line. A
third pooling runs through the same serving functions in this process (the SavedModel adds
nothing per pooling; its SentencePiece tokenizer is served so in tests/families/)."""

import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.serving import export
from bert_keras.tasks.registry import get_task

import tool_runner  # tests/support
from export_harness import _enc, _outputs, _texts, run_client

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
FAMILIES = FIXTURES / "families"
REF = np.load(FIXTURES / "embedding_references.npz")
TEXTS = [str(t) for t in REF["texts"]]
# (fixture, pooling, normalize): WordPiece, SentencePiece and byte-level BPE tokenizers.
EXPORTS = {"distilbert": ("distilbert", "mean", True)}
IN_PROCESS = {"albert": ("albert", "cls", False)}
TOOL_FIXTURE = "roberta"
TRUNCATE_DIM = 16  # the tool's export: a Matryoshka cut of the fixture's 32 values


def _tool_reference(rows=None):
    """transformers' embeddings of the tool's fixture, cut to TRUNCATE_DIM and renormalized."""
    full = REF[f"{TOOL_FIXTURE}_16_embeddings"][:rows, :TRUNCATE_DIM]
    return full / np.linalg.norm(full, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """{name: (embedder, version dir)}: one export by `bk.export_model`, one by the tool."""
    base = tmp_path_factory.mktemp("saved_models")
    out = {}
    for name, (fixture, pooling, normalize) in EXPORTS.items():
        embedder = bk.BertEmbedder.from_pretrained(FAMILIES / fixture, pooling=pooling,
                                                   normalize=normalize, seq_length=16)
        out[name] = (embedder, bk.export_model(embedder, export_dir_base=str(base),
                                               model_name=name))
    proc = tool_runner.run_tool("export", f"--encoder_dir={FAMILIES / TOOL_FIXTURE}",
                                "--pooling=mean", "--normalize", "--seq_length=16",
                                f"--truncate_dim={TRUNCATE_DIM}",
                                f"--export_dir_base={base}", "--model_name=tool")
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = proc.stdout.splitlines()[0]
    assert path == str(base / "tool" / "1")
    assert '"embeddings"' in proc.stdout and "Traceback" not in proc.stderr
    out["tool"] = (bk.BertEmbedder.from_pretrained(FAMILIES / TOOL_FIXTURE, seq_length=16,
                                                   truncate_dim=TRUNCATE_DIM), path)
    return out


def test_metadata_and_signature(exports):
    for name, (embedder, path) in exports.items():
        meta = export.read_metadata(path)
        assert meta["task"] == "embedding" and meta["seq_length"] == 16
        assert (meta["pooling"], meta["normalize"], meta["truncate_dim"]) == (
            embedder.pooling, embedder.normalize, embedder.truncate_dim)
        serving = meta["signatures"]["serving_default"]
        assert serving["inputs"] == {"text": {"dtype": "string", "shape": [None]}}
        assert serving["outputs"] == {"embeddings": {
            "dtype": "float32", "shape": [None, embedder.truncate_dim or 32],
            "doc": get_task("embedding").output_docs["embeddings"]}}  # the task's own


def test_in_process_serving_functions_embed_as_predict():
    texts = np.array(TEXTS + ["word " * 5000, b"caf\xe9 invalid utf-8"], dtype=object)
    for name, (fixture, pooling, normalize) in IN_PROCESS.items():
        embedder = bk.BertEmbedder.from_pretrained(FAMILIES / fixture, pooling=pooling,
                                                   normalize=normalize, seq_length=16)
        info = dict(task="embedding", labels=None, seq_length=16,
                    lower_case=embedder.preprocessor.tokenizer.lower_case, text_fields=["text"])
        fns = export.serving_functions(embedder, embedder.preprocessor.tokenizer, info)
        assert fns.task.export_metadata(fns) == {"pooling": pooling, "normalize": normalize,
                                                 "truncate_dim": None}
        out = fns.serve(tf.constant(texts))["embeddings"].numpy()
        assert out.dtype == np.float32 and out.shape == (len(texts), 32)
        batch = [t if isinstance(t, bytes) else t.encode() for t in texts]  # the same bytes
        np.testing.assert_allclose(out, embedder.predict(batch, verbose=0), atol=1e-5,
                                   err_msg=name)
        assert fns.serve(tf.constant([], tf.string))["embeddings"].shape == (0, 32)


def test_served_embeddings_equal_predict_without_the_project(tmp_path, exports):
    texts = np.array(TEXTS + ["word " * 5000, b"caf\xe9 invalid utf-8"], dtype=object)
    requests = {path: [["serving_default", {"text": _enc(texts)}],
                       ["serving_default", {"text": _enc(np.array([], dtype=object))}]]
                for _, path in exports.values()}
    report = run_client(tmp_path, [path for _, path in exports.values()], requests)
    for name, (embedder, path) in exports.items():
        results = report["exports"][path]
        assert [r["signature"] for r in results if r["warmup"]] == [
            "serving_default"] * 3 + ["preprocess", "encode"]
        served = 0
        for r in results:
            if r["signature"] != "serving_default":
                _outputs(r)  # tf1 and tf2 agree, no error
                continue
            out = _outputs(r)["embeddings"]
            batch = _texts(r["inputs"], "text")
            assert out.dtype == np.float32
            assert out.shape == (len(batch), embedder.truncate_dim or 32)
            if not batch:
                continue
            want = embedder.predict(batch, verbose=0)  # the same bytes
            np.testing.assert_allclose(out, want, atol=1e-5, err_msg=name)
            if embedder.normalize:
                np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
            served += len(batch)
        assert served == 1 + 3 + 1 + len(texts)  # the warmup requests and ours
        # The tool's export is the sentence-transformers recipe (transformers' embeddings),
        # cut to TRUNCATE_DIM values, then normalized.
        if name == "tool":
            mine = [r for r in results if not r["warmup"]][0]
            got = _outputs(mine)["embeddings"][:len(TEXTS)]
            np.testing.assert_allclose(got, _tool_reference(), atol=1e-4)


@pytest.mark.parametrize("args, message", [
    ([f"--task_dir={FAMILIES / 'bert_tagger'}", "--pooling=mean"],
     f"--pooling is an option of encoder exports, not of {FAMILIES / 'bert_tagger'}'s tagging "
     "model."),
    ([f"--encoder_dir={FAMILIES / 'distilbert'}", "--normalize"], "--normalize needs --pooling"),
    ([f"--encoder_dir={FAMILIES / 'distilbert'}", "--pooling=mean", "--pairs"],
     "--pairs is an option of classification, multi_label and regression exports, not of "),
    ([f"--encoder_dir={FAMILIES / 'distilbert'}", "--pooling=sum"],
     "flag --pooling=sum: value should be one of <mean|cls|max>"),
    ([f"--encoder_dir={FAMILIES / 'distilbert'}", "--truncate_dim=8"],
     "--truncate_dim needs --pooling"),
    ([f"--encoder_dir={FAMILIES / 'distilbert'}", "--pooling=mean", "--truncate_dim=64"],
     "--truncate_dim=64 is more than the hidden size 32 of"),
])
def test_bad_flags_are_refused_in_one_line(tmp_path, args, message):
    proc = tool_runner.run_tool("export", *args, f"--export_dir_base={tmp_path}")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if message in line]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert not list(tmp_path.iterdir())  # nothing written


def test_predict_tool_writes_each_texts_embedding(exports):
    _, path = exports["tool"]
    proc = tool_runner.run_tool("predict", f"--model_dir={pathlib.Path(path).parent}",
                                input="\n".join(TEXTS[:3]) + "\n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3]
    got = np.array([r["outputs"]["embeddings"] for r in rows], np.float32)
    np.testing.assert_allclose(got, _tool_reference(3), atol=1e-4)
