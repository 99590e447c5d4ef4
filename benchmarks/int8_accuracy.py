"""Test scores of the float32, bfloat16 and int8 exports of fine-tuned task directories on the
bundled paraphrase (accuracy) and NER (entity F1) test sets, each served by its SavedModel:

    python -m benchmarks.int8_accuracy --paraphrase_dir=RUN/paraphrase/best \
        --ner_dir=RUN/ner/best [--exports_dir=/tmp/int8_exports]

Paraphrase pairs go through `serving_default` (text_a, text_b); NER sentences through
`tag_words` (the test set's own words), scored by `metrics.entities.entity_f1`. Prints one
Markdown row per task and dtype, with the agreement of its labels with float32's. With
--torch_python (an interpreter with torch and transformers), also the paraphrase model written
as transformers (`bk.save_transformers`, the same weights) in PyTorch float32 and dynamic int8
(benchmarks/torch_int8_accuracy.py).
"""

import gzip
import json
import os
import subprocess
import tempfile

import numpy as np
from absl import app, flags

from bert_keras import assets
from bert_keras.metrics.entities import entity_f1
from bert_keras.serving import export
from bert_keras.serving.export_config import EXPORT_DTYPES

flags.DEFINE_string("paraphrase_dir", None, "Fine-tuned paraphrase task directory.")
flags.DEFINE_string("ner_dir", None, "Fine-tuned NER (tagging) task directory.")
flags.DEFINE_string("exports_dir", None, "Where the exports go (default: a temporary folder).")
flags.DEFINE_string("torch_python", None, "Python with torch + transformers for PyTorch's rows.")
FLAGS = flags.FLAGS
BATCH = 64


def paraphrase_test():
    with gzip.open(assets.path("bible_paraphrase.test.tsv.gz"), "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def ner_test():
    """(sentences as word lists, their gold tags) of the CoNLL test set."""
    sentences, tags, words, labels = [], [], [], []
    with gzip.open(assets.path("bible_ner.test.conll.gz"), "rt", encoding="utf-8") as f:
        for line in list(f) + [""]:
            if line.strip():
                word, tag = line.split()
                words.append(word)
                labels.append(tag)
            elif words:
                sentences.append(words)
                tags.append(labels)
                words, labels = [], []
    return sentences, tags


def serve_paraphrase(loaded):
    gold, a, b = paraphrase_test()
    fn = loaded.signatures["serving_default"]
    predicted = []
    for start in range(0, len(a), BATCH):
        out = fn(text_a=tf_strings(a[start:start + BATCH]),
                 text_b=tf_strings(b[start:start + BATCH]))
        predicted += [label.decode() for label in out["labels"].numpy()]
    return predicted, float(np.mean(np.array(predicted) == np.array(gold)))


def serve_ner(loaded):
    sentences, gold = ner_test()
    fn = loaded.signatures["tag_words"]
    predicted = []
    for start in range(0, len(sentences), BATCH):
        batch = sentences[start:start + BATCH]
        width = max(len(s) for s in batch)
        words = [s + [""] * (width - len(s)) for s in batch]
        tags = fn(words=tf_strings(words))["tags"].numpy()
        predicted += [[t.decode() for t in row[:len(s)]] for row, s in zip(tags, batch)]
    return predicted, entity_f1(gold, predicted)


def tf_strings(values):
    import tensorflow as tf

    return tf.constant(values, tf.string)


def main(argv):
    del argv
    import tensorflow as tf

    tasks = [(name, path, serve) for name, path, serve in (
        ("paraphrase (accuracy)", FLAGS.paraphrase_dir, serve_paraphrase),
        ("NER (entity F1)", FLAGS.ner_dir, serve_ner)) if path]
    base = FLAGS.exports_dir or tempfile.mkdtemp(prefix="int8_accuracy_")
    print("| task | export | test score | labels as float32's | variables/ MB |")
    print("|---|---|---|---|---|")
    for name, path, serve in tasks:
        reference = None
        for dtype in EXPORT_DTYPES:
            exported = export.export_task(path, base, f"{name.split()[0]}_{dtype}", dtype=dtype)
            predicted, score = serve(tf.saved_model.load(exported))
            reference = reference or predicted
            agreement = np.mean([p == r for p, r in zip(predicted, reference)])
            folder = os.path.join(exported, "variables")
            size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
            print(f"| {name} | {dtype} | {100 * score:.2f} | {100 * agreement:.2f}% | "
                  f"{size / 1e6:.1f} |", flush=True)
    if FLAGS.torch_python and FLAGS.paraphrase_dir:
        torch_rows(FLAGS.paraphrase_dir, base)


def torch_rows(task_dir, base):
    """PyTorch float32 and dynamic int8 of the paraphrase model's weights."""
    from bert_keras.checkpoints.transformers_writer import save_transformers
    from bert_keras.tasks import registry

    model, tokenizer, info = registry.load_task(task_dir)
    checkpoint = os.path.join(base, "paraphrase_transformers")
    save_transformers(model, checkpoint, tokenizer=tokenizer, labels=info["labels"])
    script = os.path.join(os.path.dirname(__file__), "torch_int8_accuracy.py")
    done = subprocess.run([FLAGS.torch_python, script, checkpoint, str(info["seq_length"])],
                          capture_output=True, text=True, check=True)
    results = [json.loads(line[len("RESULT "):]) for line in done.stdout.splitlines()
               if line.startswith("RESULT ")]
    reference = results[0]["labels"]
    for result in results:
        agreement = np.mean(np.array(result["labels"]) == np.array(reference))
        print(f"| paraphrase (accuracy) | PyTorch {result['system']} (same weights) | "
              f"{100 * result['accuracy']:.2f} | {100 * agreement:.2f}% (of PyTorch float32's) "
              f"| {result['mb']:.1f} (state dict) |", flush=True)


if __name__ == "__main__":
    app.run(main)
