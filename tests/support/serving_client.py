"""Loads exports the way TF Serving does, in a process without this project (run by test_export).

    python -I -S tests/support/serving_client.py CONFIG.json
    python -I -S tests/support/serving_client.py --serve   # one CONFIG path a line on stdin

-I: no PYTHONPATH, no script directory, no user site; -S: no site-packages .pth files (so an
editable install of bert_keras is not on the path either). CONFIG holds {"site": [dirs with
tensorflow and tensorflow_text], "exports": [version dirs], "requests": {export dir: [[signature,
inputs]]}, "out": path}; inputs are encoded by `encode`. For each export the client
  1. parses assets.extra/tf_serving_warmup_requests with a hand-written protobuf decoder (and
     with tensorflow-serving-api's PredictionLog too when that package is importable),
  2. loads the SavedModel with the TF1 SavedModelBundle path (tf.compat.v1 loader, a Session,
     signature tensor names: what tensorflow_model_server does) and with tf.saved_model.load,
  3. replays the warmup requests and the extra requests through both, recording outputs or
     errors (a bad request must give an error, never kill the process), and what
     tf.saved_model.load warned of (a served model's load logs nothing alarming),
and writes everything to "out" as JSON.

With --serve it stays up and answers one CONFIG path per line of stdin (a REPLY line on stdout
for each, once its "out" is written, or the traceback if it failed): the tests then pay
TensorFlow's import once per test process instead of once per batch of exports, and every
batch is still served in a process without this project.
"""

import base64
import contextlib
import importlib.util
import json
import logging
import os
import sys


def encode(array):
    import numpy as np

    array = np.asarray(array)
    if array.dtype == object or array.dtype.kind in "SU":
        values = [base64.b64encode(v if isinstance(v, bytes) else str(v).encode()).decode()
                  for v in array.ravel().tolist()]
        return {"dtype": "string", "shape": list(array.shape), "b64": values}
    return {"dtype": array.dtype.name, "shape": list(array.shape), "values": array.ravel().tolist()}


def decode(obj):
    import numpy as np

    if obj["dtype"] == "string":
        flat = np.array([base64.b64decode(v) for v in obj["b64"]] or [], dtype=object)
    else:
        flat = np.array(obj["values"], dtype=obj["dtype"])
    return flat.reshape(obj["shape"])


# -- protobuf wire format ------------------------------------------------------------------------

def _varint(buf, i):
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def fields(buf):
    """[(field number, bytes or int)] of one serialized message."""
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"Unsupported wire type {wire} for field {number}.")
        out.append((number, value))
    return out


def parse_prediction_log(raw):
    """(model name, signature name, {input: TensorProto bytes}) of a PredictionLog."""
    (predict_log,) = [v for n, v in fields(raw) if n == 6]
    (request,) = [v for n, v in fields(predict_log) if n == 1]
    name = signature = ""
    inputs = {}
    for number, value in fields(request):
        if number == 1:  # model_spec
            for n, v in fields(value):
                if n == 1:
                    name = v.decode()
                elif n == 3:
                    signature = v.decode()
        elif number == 2:  # inputs map entry
            entry = dict(fields(value))
            inputs[entry[1].decode()] = entry[2]
    return name, signature, inputs


REPLY = "serving_client:"


@contextlib.contextmanager
def _warnings_logged():
    """The messages of the warnings (and worse) that TensorFlow's loggers log inside."""
    messages = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(record.getMessage())
    loggers = [logging.getLogger(name) for name in ("absl", "tensorflow")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield messages
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def main(config_path):
    with open(config_path) as f:
        config = json.load(f)
    sys.path.extend(d for d in config["site"] if d not in sys.path)
    report = {"sys_path": sys.path, "bert_keras_importable":
              importlib.util.find_spec("bert_keras") is not None}
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  Registers the tf-text ops, as TF Serving links them.
    from tensorflow.core.framework import tensor_pb2

    try:
        from tensorflow_serving.apis import prediction_log_pb2
    except ImportError:
        prediction_log_pb2 = None
    report["serving_api"] = prediction_log_pb2 is not None
    report["exports"] = {}
    for export_dir in config["exports"]:
        requests = []
        path = os.path.join(export_dir, "assets.extra", "tf_serving_warmup_requests")
        for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
            name, signature, tensors = parse_prediction_log(raw)
            inputs = {}
            for key, blob in tensors.items():
                proto = tensor_pb2.TensorProto()
                proto.ParseFromString(blob)
                inputs[key] = tf.make_ndarray(proto)
            if prediction_log_pb2 is not None:  # an independent parser must agree
                log = prediction_log_pb2.PredictionLog.FromString(raw)
                request = log.predict_log.request
                assert request.model_spec.name == name, (request.model_spec.name, name)
                assert request.model_spec.signature_name == signature
                assert sorted(request.inputs) == sorted(inputs)
                for key, value in request.inputs.items():
                    np.testing.assert_array_equal(tf.make_ndarray(value), inputs[key])
            requests.append({"warmup": True, "model_name": name, "signature": signature,
                             "inputs": inputs})
        for signature, inputs in config.get("requests", {}).get(export_dir, []):
            requests.append({"warmup": False, "signature": signature,
                             "inputs": {k: decode(v) for k, v in inputs.items()}})
        results = [dict(warmup=r["warmup"], model_name=r.get("model_name"),
                        signature=r["signature"],
                        inputs={k: encode(v) for k, v in r["inputs"].items()})
                   for r in requests]

        # 1. TF1 SavedModelBundle path: what tensorflow_model_server does.
        with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as sess:
            meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], export_dir)
            report.setdefault("signature_defs", {})[export_dir] = {
                name: {"inputs": {k: [v.name, v.dtype] for k, v in sig.inputs.items()},
                       "outputs": {k: [v.name, v.dtype] for k, v in sig.outputs.items()}}
                for name, sig in meta.signature_def.items()}
            for request, result in zip(requests, results):
                sig = meta.signature_def[request["signature"]]
                try:
                    unknown = sorted(set(request["inputs"]) - set(sig.inputs))
                    if unknown:
                        raise KeyError(f"unknown inputs {unknown}")
                    feed = {sig.inputs[k].name: v for k, v in request["inputs"].items()}
                    fetch = {k: v.name for k, v in sig.outputs.items()}
                    result["tf1"] = {k: encode(v) for k, v in sess.run(fetch, feed).items()}
                except Exception as e:  # A bad request: record its error.
                    result["tf1_error"] = f"{type(e).__name__}: {str(e)[:500]}"

        # 2. TF2: tf.saved_model.load and the signature functions; what the loader warns of.
        with _warnings_logged() as warnings:
            loaded = tf.saved_model.load(export_dir)
        report.setdefault("load_warnings", {})[export_dir] = warnings
        for request, result in zip(requests, results):
            fn = loaded.signatures[request["signature"]]
            try:
                out = fn(**{k: tf.constant(v) for k, v in request["inputs"].items()})
                result["tf2"] = {k: encode(v.numpy()) for k, v in out.items()}
            except Exception as e:
                result["tf2_error"] = f"{type(e).__name__}: {str(e)[:500]}"
        report["exports"][export_dir] = results
    with open(config["out"], "w") as f:
        json.dump(report, f)


def serve():
    """Answers CONFIG paths, one a line of stdin, until stdin closes (see the docstring)."""
    import traceback

    for line in sys.stdin:
        config_path = line.strip()
        if not config_path:
            continue
        try:
            with open(config_path) as f:
                config = json.load(f)
            os.chdir(config.get("cwd") or os.getcwd())
            if config.get("home"):
                os.environ["HOME"] = config["home"]
            main(config_path)
            reply = {"ok": True}
        except Exception:  # a bug of a test or of an export: reported, the server goes on
            reply = {"ok": False, "error": traceback.format_exc()[-4000:]}
        sys.stdout.write(REPLY + json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve() if sys.argv[1] == "--serve" else main(sys.argv[1])
