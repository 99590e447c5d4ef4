"""Warmup requests of an export: PredictionLog records TF Serving replays before serving.

Written by hand (protobuf wire format) so that exporting does not need tensorflow-serving-api;
the tests parse them with the real serving protos.
"""

import os

import numpy as np
import tensorflow as tf

from bert_keras.protobuf_wire import length_delimited

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")

EXAMPLES = {
    "text": ["The quick brown fox jumps over the lazy dog.", "Hello!", ""],
    "text_a": ["The quick brown fox jumps over the lazy dog.", "He went home.", ""],
    "text_b": ["A fast fox leaps over a sleepy dog.", "He stayed at work.", ""],
    "question": ["Who wrote the letter?", "Where did he go?", ""],
    "context": ["Paul wrote the letter to the church in Rome.", "He went to the city.", ""],
    "query": ["Who ran into the woods?", "Hello?", "Where?"],  # a reranker's: none empty
    "choices": [["It ran into the woods.", "It slept all day.", "It sang a song."],
                ["Goodbye!", "Hi.", ""], ["", "", ""]],
    "masked": ["The quick brown [MASK] jumps over the lazy dog.", "In the [MASK] God [MASK].",
               "No mask here."],
}



def prediction_log_bytes(model_name, signature_name, inputs):
    """A serialized tensorflow.serving.PredictionLog holding one PredictRequest.

    PredictionLog{predict_log (6): PredictLog{request (1): PredictRequest{
      model_spec (1): ModelSpec{name (1), signature_name (3)},
      inputs (2): map<string, TensorProto> (entries: key (1), value (2))}}}
    Built by hand so that exporting does not need tensorflow-serving-api.
    """
    spec = length_delimited(1, model_name.encode()) + length_delimited(3, signature_name.encode())
    request = length_delimited(1, spec)
    for key in sorted(inputs):
        tensor = tf.make_tensor_proto(inputs[key]).SerializeToString()
        entry = length_delimited(1, key.encode()) + length_delimited(2, tensor)
        request += length_delimited(2, entry)
    return length_delimited(6, length_delimited(1, request))


def warmup_requests(functions, examples=None):
    """[(signature name, {input name: np.ndarray})]: serving_default on one text, on a batch
    and on the longest texts the task serves (`Task.warmup_longest`), `preprocess`, and `encode`
    on the packed batch."""
    fields = functions.text_fields
    if examples is None:
        examples = {f: EXAMPLES[k] for f, k in functions.task.warmup_texts(fields).items()}
    batch = {f: np.array(examples[f], dtype=object) for f in fields}
    longest = {f: np.array([functions.task.warmup_longest(functions, f, examples[f][0])],
                           dtype=object) for f in fields}
    one = {f: v[:1] for f, v in batch.items()}
    packed = functions.preprocess(*[tf.constant(batch[f]) for f in fields])
    return [
        ("serving_default", one),
        ("serving_default", batch),
        ("serving_default", longest),
        ("preprocess", batch),
        ("encode", {k: v.numpy() for k, v in packed.items()}),
    ] + functions.task.extra_warmup(functions)


def write_warmup(export_dir, model_name, requests):
    path = os.path.join(export_dir, WARMUP_FILE)
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for signature, inputs in requests:
            writer.write(prediction_log_bytes(model_name, signature, inputs))
    return path
