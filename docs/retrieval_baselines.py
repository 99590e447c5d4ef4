"""The bundled reranking task (bert_keras/assets/bible_retrieval.*) ranked without fine-tuning:
each query's 8 candidates ordered by the cosine of a sentence embedder (the bi-encoder,
`bk.BertEmbedder`, mean pooling + normalize), scored as tools/finetune.py --task=reranking
scores a reranker (MRR@10, NDCG@10, Recall@1).

    .venv/bin/python docs/retrieval_baselines.py --encoder_dir=path/to/all-MiniLM-L6-v2

Prints one JSON line per split: {"split", "mrr@10", "ndcg@10", "recall@1", ...}.
"""

import bert_keras as bk  # first: it sets up TensorFlow's CPU kernels

# isort: split
import json

import numpy as np
from absl import app, flags

from bert_keras import assets
from bert_keras.tasks.registry import get_task
from bert_keras.tasks.reranking.ranking_metrics import ranking_metrics

flags.DEFINE_string("encoder_dir", None, "Encoder checkpoint of the embedder.", required=True)
flags.DEFINE_integer("seq_length", 128, "Tokens per text.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    embedder = bk.BertEmbedder.from_pretrained(FLAGS.encoder_dir, seq_length=FLAGS.seq_length)
    task = get_task("reranking")
    for split in ("dev", "test"):
        examples = task.read_files([assets.path(f"bible_retrieval.{split}.jsonl.gz")], "jsonl")
        queries = embedder.predict([ex.query for ex in examples], verbose=0)
        documents = [d for ex in examples for d in ex.candidates]
        vectors = embedder.predict(documents, verbose=0)
        ends = np.cumsum([len(ex.candidates) for ex in examples])[:-1]
        scores = [v @ q for q, v in zip(queries, np.split(vectors, ends))]
        metrics = ranking_metrics(scores, [ex.relevance for ex in examples])
        print(json.dumps(dict(split=split, **{k: round(float(v), 4)
                                              for k, v in metrics.items()})), flush=True)


if __name__ == "__main__":
    app.run(main)
