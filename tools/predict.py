r"""Runs an exported SavedModel on lines of text and writes one JSON object per line.

Works on any export of tools/export.py and needs only TensorFlow and tensorflow-text (nothing
from bert_keras is imported). Input lines: the text for single-text models; "text_a<TAB>text_b"
for pair classifiers; "question<TAB>context" for span QA; text with [MASK] for pretrainers.
Output: {"line": N, "inputs": {...}, "outputs": {name: value}} per input line, in order.

Examples:
  python tools/predict.py --model_dir=saved_models/paraphrase --input=pairs.tsv
  echo "Who wrote it?	Paul wrote it." | python tools/predict.py --model_dir=saved_models/qa/1
"""

import json
import os
import sys

from absl import app, flags

flags.DEFINE_string("model_dir", None, "An export version directory, or the model directory "
                    "(its highest version is used).")
flags.DEFINE_string("input", "-", "Text file to read, '-' for stdin.")
flags.DEFINE_string("output", "-", "JSON-lines file to write, '-' for stdout.")
flags.DEFINE_string("signature", "serving_default", "Signature to run.")
flags.DEFINE_integer("batch_size", 32, "Lines per model call.")
FLAGS = flags.FLAGS


def resolve_version_dir(path):
    """A version directory: `path` itself if it holds saved_model.pb, else its highest
    integer subdirectory."""
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        return path
    versions = sorted(int(n) for n in os.listdir(path) if n.isdigit()) if os.path.isdir(path) else []
    if not versions:
        raise app.UsageError(f"--model_dir {path} has no saved_model.pb and no version directories.")
    return os.path.join(path, str(versions[-1]))


def to_json(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value


def predict_lines(fn, fields, lines, first_line=1):
    """[(line number, {field: text})] -> JSON-able dicts, one per line."""
    import tensorflow as tf

    rows = []
    for n, line in enumerate(lines, start=first_line):
        parts = line.rstrip("\r\n").split("\t") if len(fields) > 1 else [line.rstrip("\r\n")]
        if len(parts) != len(fields):
            raise ValueError(f"Line {n} has {len(parts)} tab-separated fields; this model takes "
                             f"{len(fields)}: {'<TAB>'.join(fields)}.")
        rows.append((n, dict(zip(fields, parts))))
    if not rows:
        return []
    out = fn(**{f: tf.constant([r[f] for _, r in rows], tf.string) for f in fields})
    out = {k: v.numpy().tolist() for k, v in out.items()}
    return [{"line": n, "inputs": r, "outputs": {k: to_json(v[i]) for k, v in out.items()}}
            for i, (n, r) in enumerate(rows)]


def main(argv):
    del argv
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be positive, got {FLAGS.batch_size}.")
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  Registers the tokenizer ops.

    path = resolve_version_dir(FLAGS.model_dir)
    loaded = tf.saved_model.load(path)
    if FLAGS.signature not in loaded.signatures:
        raise app.UsageError(f"--signature {FLAGS.signature!r} is not one of {sorted(loaded.signatures)}.")
    fn = loaded.signatures[FLAGS.signature]
    fields = sorted(fn.structured_input_signature[1])
    if fields == ["context", "question"]:
        fields = ["question", "context"]
    elif len(fields) != 1 and fields != ["text_a", "text_b"]:
        raise app.UsageError(f"Signature {FLAGS.signature!r} takes {fields}, not text lines.")
    source = sys.stdin if FLAGS.input == "-" else open(FLAGS.input, encoding="utf-8", errors="replace")
    sink = sys.stdout if FLAGS.output == "-" else open(FLAGS.output, "w", encoding="utf-8")
    try:
        batch, first = [], 1
        for n, line in enumerate(source, start=1):
            if not batch:
                first = n
            batch.append(line)
            if len(batch) == FLAGS.batch_size:
                for row in predict_lines(fn, fields, batch, first):
                    sink.write(json.dumps(row, ensure_ascii=False) + "\n")
                batch = []
        for row in predict_lines(fn, fields, batch, first):
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if source is not sys.stdin:
            source.close()
        if sink is not sys.stdout:
            sink.close()



def run():
    app.run(main)


if __name__ == "__main__":
    run()
