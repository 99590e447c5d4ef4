"""Writes bible_next_verse.{train,dev,test}.csv.gz: a SWAG-style multiple-choice task made from
the bundled World English Bible corpus (web_bible_corpus.txt.gz, public domain).

Each example: a verse as the context, and four endings, the verse that follows it in the
same document and three verses drawn from other documents, shuffled; the label is the
index of the true next verse. Documents (chapters) are split 80/10/10 into train/dev/test
first, so no verse of a dev or test context or ending is in the training data. Seeded: the
same files every run.

    python bert_keras/assets/make_bible_next_verse.py

CSV with a header row: context,ending0,ending1,ending2,ending3,label (SWAG's ending columns).
"""

import csv
import gzip
import io
import os
import random

DIRECTORY = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(DIRECTORY, "web_bible_corpus.txt.gz")
NAME = "bible_next_verse.{split}.csv.gz"
SIZES = {"train": 1200, "dev": 200, "test": 200}  # examples per split
CHOICES = 4
SEED = 20261128


def documents():
    """The corpus's documents, each a list of verses."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        docs, current = [], []
        for line in f:
            line = line.strip()
            if line:
                current.append(line)
            elif current:
                docs.append(current)
                current = []
        if current:
            docs.append(current)
    return docs


def examples(docs, count, rng):
    """`count` examples from `docs`: (context, endings, label), distractors from other
    documents of the same split."""
    pairs = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc) - 1)]
    out = []
    for d, i in rng.sample(pairs, count):
        endings = [docs[d][i + 1]]
        while len(endings) < CHOICES:
            other = rng.randrange(len(docs))
            if other != d:
                endings.append(rng.choice(docs[other]))
        order = list(range(CHOICES))
        rng.shuffle(order)
        out.append((docs[d][i], [endings[j] for j in order], order.index(0)))
    return out


def write(path, rows):
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["context"] + [f"ending{k}" for k in range(CHOICES)] + ["label"])
    for context, endings, label in rows:
        writer.writerow([context, *endings, label])
    with open(path, "wb") as f:  # mtime 0: the same bytes every run
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
            gz.write(text.getvalue().encode("utf-8"))


def main():
    rng = random.Random(SEED)
    docs = [doc for doc in documents() if len(doc) >= 2]
    rng.shuffle(docs)
    cut_dev, cut_test = int(len(docs) * 0.8), int(len(docs) * 0.9)
    splits = {"train": docs[:cut_dev], "dev": docs[cut_dev:cut_test], "test": docs[cut_test:]}
    for split, split_docs in splits.items():
        path = os.path.join(DIRECTORY, NAME.format(split=split))
        write(path, examples(split_docs, SIZES[split], rng))
        print(path, SIZES[split], os.path.getsize(path))


if __name__ == "__main__":
    main()
