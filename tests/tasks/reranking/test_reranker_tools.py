"""The reranking task type through the tools: one export of the RoBERTa (BPE) CrossEncoder by
tools/export.py --task_dir served in a process without this project (answers as
sentence-transformers ranks, malformed requests refused with InvalidArgument, the next one
answered); tools/finetune.py --task=reranking on JSON lines training data and TSV eval data."""

import json
import sys

import numpy as np
import pytest
from test_reranker import EXAMPLES, ROOT, SEQ, checkpoint, reference

from bert_keras.serving import export

import tool_runner  # tests/support: tools forked without their imports
from export_harness import _enc, _outputs, run_client

MAX_PAIRS = 10


def request(queries, documents):
    return ["serving_default", {"query": _enc(np.array(queries, object)),
                                "documents": _enc(np.array(documents, object))}]


BAD_REQUESTS = {
    "rows differ": (["a", "b"], [["x", "y"]]),
    "rank-1 documents": (["a"], ["x", "y"]),
    "empty query": (["a", " "], [["x"], ["y"]]),
    "too many pairs": (["a"], [["x"] * (MAX_PAIRS + 1)]),
}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The roberta CrossEncoder exported by tools/export.py --task_dir and the client's report
    on the ranking queries (padded with "" to one K), each bad request followed by them."""
    tmp_path = tmp_path_factory.mktemp("served")
    path = checkpoint("roberta", tmp_path)
    tool = tool_runner.run([sys.executable, "tools/export.py", f"--task_dir={path}",
                            f"--seq_length={SEQ}", f"--max_pairs={MAX_PAIRS}",
                            f"--export_dir_base={tmp_path / 'saved'}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert tool.returncode == 0, tool.stderr[-3000:]
    export_dir = tool.stdout.splitlines()[0]
    queries = [q["query"] for q in EXAMPLES["queries"]]
    width = max(len(q["documents"]) for q in EXAMPLES["queries"])
    good = request(queries, [q["documents"] + [""] * (width - len(q["documents"]))
                             for q in EXAMPLES["queries"]])
    requests = [good]
    for bad in BAD_REQUESTS.values():
        requests += [request(*bad), good]
    report = run_client(tmp_path, [export_dir], {export_dir: requests})
    results = report["exports"][export_dir]
    return (export_dir, [r for r in results if not r["warmup"]],
            [r for r in results if r["warmup"]])


@pytest.mark.slow
def test_the_export_ranks_as_sentence_transformers_and_refuses_malformed_requests(served):
    export_dir, results, warmup = served
    ref = reference("roberta")
    for result in results[::2]:
        out = _outputs(result)  # tf1 and tf2 agree
        for row, (query, want) in enumerate(zip(EXAMPLES["queries"], ref["ranks"])):
            k = len(query["documents"])
            assert out["order"][row][:k].tolist() == [r["corpus_id"] for r in want]
            by_id = {r["corpus_id"]: r["score"] for r in want}
            np.testing.assert_allclose(out["scores"][row][:k], [by_id[i] for i in range(k)],
                                       atol=1e-4)
            assert np.all(np.isneginf(out["scores"][row][k:]))
    errors = [r.get("tf2_error", "") for r in results[1::2]]
    assert all("InvalidArgument" in e for e in errors), errors
    assert "one row per query" in errors[0]
    assert "documents must be a rank-2 string tensor" in errors[1]
    assert "every query must be a non-empty string" in errors[2]
    assert f"--max_pairs={MAX_PAIRS}" in errors[3]
    assert warmup and all("tf1" in r and "tf2" in r for r in warmup), warmup
    metadata = export.read_metadata(export_dir)
    assert metadata["task"] == "reranking" and metadata["max_pairs"] == MAX_PAIRS
    assert metadata["activation"] == "identity"
    assert metadata["signatures"]["serving_default"]["inputs"]["documents"]["shape"] == [
        None, None]


@pytest.mark.slow
def test_finetune_tool_trains_a_reranker_and_reports_the_ranking_metrics(tmp_path,
                                                                        tiny_encoder_dir):
    queries = ["Who wept?", "Who created the heavens?", "Where did he go?", "Who is the king?"]
    positives = ["Jesus wept.", "God created the heavens.", "He went up to Jerusalem.",
                 "Yahweh is the king of glory."]
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"query": q, "positives": [p], "negatives": [
        positives[(i + 1) % 4], positives[(i + 2) % 4]]}) + "\n"
        for i, (q, p) in enumerate(zip(queries, positives))))
    evaluation = tmp_path / "eval.tsv"
    evaluation.write_text("".join(f"{q}\t{p}\t{positives[(i + 3) % 4]}\n"
                                  for i, (q, p) in enumerate(zip(queries, positives))))
    result = tool_runner.run(
        [sys.executable, "tools/finetune.py", "--task=reranking",
         f"--init_checkpoint={tiny_encoder_dir}", f"--output_dir={tmp_path / 'run'}",
         f"--train_file={train}", f"--eval_file={evaluation}", "--max_seq_length=32",
         "--train_batch_size=2", "--num_train_epochs=1", "--ranking_loss=pointwise",
         "--in_batch_negatives", "--verbose=0"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert record["main_metric"] == "mrr@10" and record["eval_examples"] == 4
    assert set(record["eval"]) >= {"mrr@10", "ndcg@10", "recall@1", "recall@5", "recall@10"}
    assert "random_mrr@10" in record["baselines"]
    rows = [json.loads(line) for line in
            (tmp_path / "run" / "eval_predictions.jsonl").read_text().splitlines()]
    assert [r["relevance"] for r in rows] == [[1, 0]] * 4
    mrr = np.mean([1.0 / (r["ranking"].index(0) + 1) for r in rows])
    assert record["eval"]["mrr@10"] == pytest.approx(mrr)

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "Who wept?", "positives": []}\n')
    refused = tool_runner.run(
        [sys.executable, "tools/finetune.py", "--task=reranking",
         f"--init_checkpoint={tiny_encoder_dir}", f"--output_dir={tmp_path / 'bad_run'}",
         f"--train_file={bad}", "--verbose=0"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "bad.jsonl:1: no positive document for the query 'Who wept?'" in refused.stderr
