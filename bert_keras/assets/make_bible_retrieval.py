"""Writes bible_retrieval.{train,dev,test}.jsonl.gz: a reranking task (tools/finetune.py
--task=reranking) made from the bundled paraphrase pairs (bible_paraphrase.*.tsv.gz) and
World English Bible corpus (web_bible_corpus.txt.gz), both public domain.

Each line: {"query": a verse in King James wording, "positives": [the same verse in World
English wording], "negatives": [7 other World English verses]}: first the verses before and
after the positive in its chapter (hard: same story, same names), then verses drawn from the
other queries' positives of the same split. Queries are the positive pairs (label 1) of the
paraphrase split, so train, dev and test keep that file's split. Seeded: the same files every
run.

    python bert_keras/assets/make_bible_retrieval.py
"""

import gzip
import json
import os
import random

DIRECTORY = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(DIRECTORY, "web_bible_corpus.txt.gz")
PAIRS = os.path.join(DIRECTORY, "bible_paraphrase.{split}.tsv.gz")
NAME = "bible_retrieval.{split}.jsonl.gz"
SIZES = {"train": 1000, "dev": 200, "test": 200}  # queries per split
NEGATIVES = 7
SEED = 20261205


def neighbours():
    """{verse: [the verses before and after it in its document]} of the corpus."""
    around = {}
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        document = []
        for line in list(f) + [""]:
            line = line.strip()
            if line:
                document.append(line)
                continue
            for i, verse in enumerate(document):
                around.setdefault(verse, document[max(i - 1, 0):i] + document[i + 1:i + 2])
            document = []
    return around


def examples(split, count, around, rng):
    with gzip.open(PAIRS.format(split=split), "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    pairs = sorted({(a, b) for label, a, b in rows if label == "1"})
    pairs = rng.sample(pairs, count)
    pool = [b for _, b in pairs]
    out = []
    for query, positive in pairs:
        negatives = [v for v in around.get(positive, []) if v != positive]
        while len(negatives) < NEGATIVES:
            other = rng.choice(pool)
            if other != positive and other not in negatives:
                negatives.append(other)
        out.append({"query": query, "positives": [positive], "negatives": negatives})
    return out


def main():
    rng = random.Random(SEED)
    around = neighbours()
    for split, count in SIZES.items():
        rows = examples(split, count, around, rng)
        hard = sum(bool(around.get(r["positives"][0])) for r in rows)
        path = os.path.join(DIRECTORY, NAME.format(split=split))
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode())
        print(f"{path}: {len(rows)} queries, {hard} with their chapter neighbours as negatives")


if __name__ == "__main__":
    main()
