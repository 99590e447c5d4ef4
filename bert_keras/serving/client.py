"""A serving client of an export (what tools/predict.py runs): the version directory to load
(`versions`), the signature's inputs in the export's order, lines of text read as requests
of it (the export's task type's `Task.input_line`), and each line's own outputs
(`Task.prediction_rows`: no batch padding), as JSON-able rows.

Needs only TensorFlow and tensorflow-text at prediction time, as TF Serving does; the task
type of an export and its signatures' inputs come from its metadata, so a client reads and
checks its input before the SavedModel loads (at the first prediction); a SavedModel that
tools/export.py did not write loads at once and is served as the base Task (tab-separated
fields, outputs as returned).

>>> signature = open_signature("saved_models/qa", "serving_default")  # doctest: +SKIP
>>> rows = read_requests("questions.tsv", signature.line_format, jsonl=False)  # doctest: +SKIP
>>> predict_rows(signature, rows)[0]["outputs"]["answer"]  # doctest: +SKIP
'Paul'
"""

import json
import os
import sys

from bert_keras import files, text_files
from bert_keras.errors import InputError
from bert_keras.serving import versions
from bert_keras.serving.saved_model import METADATA_FILE, read_metadata
from bert_keras.serving.server_environment import SERVER_ENVIRONMENT
from bert_keras.tasks import task_io
from bert_keras.tasks.base import Task
from bert_keras.tasks.registry import get_task

WORDS_SIGNATURE = "tag_words"  # a tagger's pre-split words (tasks/tagging/task.py)


class SignatureError(ValueError):
    """A signature the client cannot run as asked (a usage mistake: tools/predict.py says it
    as a flag error)."""


class Signature:
    """A signature of an export as the client runs it: `path` (its version directory), `name`,
    `task` (the Task whose rows it returns), `line_format` (an `input_lines.InputLine`: how a
    line is one request) and `function` (the concrete function). For an export of
    tools/export.py all but `function` come from its metadata, and the SavedModel loads when
    `function` is first used: a caller reads and checks its whole input first, so a bad input
    is refused without paying for the load (~0.3 s of CPU for a tiny model, more for a large
    one)."""

    def __init__(self, path, name, task, line_format, function=None):
        self.path, self.name, self.task, self.line_format = path, name, task, line_format
        self._function = function

    @property
    def function(self):
        if self._function is None:
            self._function = _load_described(self)
        return self._function


def resolve_version_dir(path, name="--model_dir"):
    """A version directory: `path` itself if it holds saved_model.pb, else its newest version;
    InputError naming `name` (the flag) otherwise."""
    if files.exists(files.join(path, "saved_model.pb")):
        return path
    newest = versions.newest_version_dir(path)
    if newest:
        return newest
    if task_io.is_task_directory(path):
        raise InputError(f"{name}={path} is a trained task directory, not an export: "
                         f"export it first with `python tools/export.py --task_dir={path}`, "
                         "then give the directory it prints.")
    if not files.exists(path):
        raise InputError(f"{name}={path} does not exist.")
    raise InputError(f"{name}={path} has no saved_model.pb and no version directories.")


def export_metadata(path):
    """The metadata of an export of tools/export.py; None for another SavedModel."""
    if not files.exists(files.join(path, "assets", METADATA_FILE)):
        return None
    return read_metadata(path)


def open_signature(model_dir, signature="serving_default", words=False):
    """The Signature `signature` of the export in `model_dir` (`resolve_version_dir`), or with
    `words` its tagger's WORDS_SIGNATURE; SignatureError for one the export lacks or one that
    takes no text. Where the export's metadata describes its signatures (tools/export.py's
    exports), its SavedModel loads at the first use of the Signature's `function`; here
    otherwise (another SavedModel: only the loaded one knows its signatures)."""
    path = resolve_version_dir(model_dir)
    metadata = export_metadata(path)
    described = (metadata or {}).get("signatures") or {}
    if described and all("inputs" in d for d in described.values()):
        name = _chosen(path, described, signature, words)
        inputs = {key: (spec["dtype"], len(spec["shape"]))
                  for key, spec in described[name]["inputs"].items()}
        return _signature(path, name, metadata, _text_inputs(name, inputs))
    loaded = _load(path)
    name = _chosen(path, loaded.signatures, signature, words)
    function = loaded.signatures[name]
    return _signature(path, name, metadata, signature_inputs(function, name, metadata), function)


def _load(path):
    """The loaded SavedModel at `path`, in this serving process's environment; InputError
    naming the file that keeps it from loading (a damaged export is bad input, not a bug)."""
    for name, value in SERVER_ENVIRONMENT.items():  # this process only serves
        os.environ.setdefault(name, value)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  Registers the tokenizer ops.

    try:
        return tf.saved_model.load(path)
    except tf.errors.PermissionDeniedError:  # a file it may not read: the startup's line
        raise
    except (FileNotFoundError, IndexError, tf.errors.OpError) as e:
        # Restoring the weights: no variables/ (NotFoundError, which the loader raises as
        # FileNotFoundError), a truncated index (OpError) or data file (IndexError: "Read
        # less bytes than requested"), a checksum mismatch (DataLossError).
        problem = "missing" if isinstance(e, FileNotFoundError) else "truncated or corrupt"
        raise InputError(f"{files.join(path, 'variables')}: the model's weights are "
                         f"{problem}: export the model again.") from None
    except OSError as e:
        if "Cannot parse file" not in str(e):  # the loader's words for a bad saved_model.pb
            raise
        raise InputError(f"{files.join(path, 'saved_model.pb')} is not a SavedModel (cannot "
                         "parse it): export the model again.") from None


def _chosen(path, signatures, signature, words):
    """The name of the signature asked for, `signature` or with `words` WORDS_SIGNATURE;
    SignatureError unless `signatures` (the export's names) has it."""
    if words and WORDS_SIGNATURE not in signatures:
        raise SignatureError(f"--words: the export {path} has no {WORDS_SIGNATURE} signature "
                             "(a tagger's, exported by this version of tools/export.py).")
    name = WORDS_SIGNATURE if words else signature
    if name not in signatures:
        raise SignatureError(f"--signature {name!r} is not one of {sorted(signatures)}.")
    return name


def _signature(path, name, metadata, inputs, function=None):
    """The Signature `name` whose string inputs are `inputs` ((name, rank), ...)."""
    task = get_task(metadata["task"]) if metadata else Task()
    line_format = task.input_line(name, inputs)
    # The task's rows for its own signatures; the values as returned for the others
    # (preprocess: the packed ids).
    if name not in ("serving_default", *task.extra_signatures):
        task = Task()
    return Signature(path, name, task, line_format, function)


def _load_described(signature):
    """The concrete function of a Signature its export's metadata described; InputError if
    the SavedModel's signature takes other inputs (a metadata file from another export)."""
    function = _load(signature.path).signatures.get(signature.name)
    served = _served_inputs(function) if function is not None else {}
    described = {key: ("string", rank) for key, rank in sorted(signature.line_format.inputs)}
    if served != described:
        raise InputError(f"The export {signature.path} has a signature {signature.name!r} "
                         f"taking {served or 'nothing'}, not the {described} its "
                         f"{METADATA_FILE} describes: export the model again.")
    return function


def _text_inputs(signature, inputs):
    """((input name, rank), ...) of `inputs` ({name: (dtype name, rank)}, in the export's
    order); SignatureError unless all are strings."""
    if any(dtype != "string" for dtype, _ in inputs.values()):
        raise SignatureError(f"Signature {signature!r} takes {list(inputs)}, not text lines.")
    return tuple((name, rank) for name, (_, rank) in inputs.items())


def signature_inputs(function, signature, metadata):
    """((input name, rank), ...) of `signature` in the export's order (its metadata's; sorted
    for a SavedModel that tools/export.py did not write: a loaded signature keeps no order);
    SignatureError unless all are strings."""
    described = (metadata or {}).get("signatures", {}).get(signature, {}).get("inputs", {})
    served = _served_inputs(function)
    names = list(described) if set(described) == set(served) else served
    return _text_inputs(signature, {name: served[name] for name in names})


def _served_inputs(function):
    """{input name: (dtype name, rank)} of a loaded signature's `function`, sorted by name."""
    specs = function.structured_input_signature[1]
    return {name: (specs[name].dtype.name, specs[name].shape.rank) for name in sorted(specs)}


def is_jsonl(path, input_format):
    """Whether the input is JSON lines: `input_format` ("text", "jsonl"), or for "auto" the
    name of `path`."""
    if input_format != "auto":
        return input_format == "jsonl"
    return path.lower().removesuffix(".gz").endswith(".jsonl")


def parse_line(n, line, line_format, jsonl, name):
    """{input name: str or [str]} of input line `n`; TextFileError naming `name` and the line
    if it is not one request of the signature."""
    try:
        if not jsonl:
            return line_format.from_text(line)
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"not JSON ({e.msg})") from None
        return line_format.from_json(row)
    except ValueError as e:
        raise text_files.TextFileError(f"{name}: Line {n} has {e}") from None


def read_requests(path, line_format, jsonl):
    """[(line number, {input name: str or [str]})] of every line of `path` ('-': stdin), all
    read and checked (the text policy, each line a request of the signature) before the
    first prediction, so that a bad line anywhere leaves no output at all, on stdout too."""
    name = "stdin" if path == "-" else path
    counts = text_files.TextCounts(name)
    lines = text_files.read_lines(name, stream=sys.stdin.buffer if path == "-" else None,
                                  counts=counts, on_bad="replace")
    rows = [(n, parse_line(n, line, line_format, jsonl, name)) for n, line in lines
            if line.strip() or not jsonl]
    text_files.require_text([counts])
    return rows


def predict_rows(signature, rows):
    """[(line number, {input name: value})] -> JSON-able dicts, one per row: {"line",
    "inputs", "outputs"}, each line's outputs only its own (the task's `prediction_rows`: no
    batch padding). One model call per group of the line format's `batches`."""
    import tensorflow as tf

    outputs = [None] * len(rows)
    inputs = [r for _, r in rows]
    for group in signature.line_format.batches(inputs):
        tensors = signature.line_format.tensors([inputs[i] for i in group])
        out = signature.function(**{k: tf.constant(v, tf.string) for k, v in tensors.items()})
        rows_out = signature.task.prediction_rows({k: v.numpy() for k, v in out.items()})
        for i, row in zip(group, rows_out):
            outputs[i] = row
    return [{"line": n, "inputs": r, "outputs": o} for (n, r), o in zip(rows, outputs)]


def write_predictions(signature, rows, sink, batch_size, progress):
    """Predicts `rows` in batches of `batch_size`, writing a JSON line per row to `sink`
    (`progress`: a tools.progress.Progress, or anything with start / update / finish)."""
    progress.start(len(rows))
    for start in range(0, len(rows), batch_size):
        for row in predict_rows(signature, rows[start:start + batch_size]):
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
        progress.update(min(start + batch_size, len(rows)))
    progress.finish()
