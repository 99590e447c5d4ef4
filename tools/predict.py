r"""Runs an exported SavedModel on lines of text and writes one JSON object per line.

Works on any export of tools/export.py, of every task type; the model needs only TensorFlow
and tensorflow-text. An input line is one request of the signature (--signature, default
serving_default), as the export's task type reads it (`Task.input_line`):
{input_lines}
As JSON lines (--input_format=jsonl, the default for an --input named *.jsonl): one object
per line, a key per input of the signature, a string each, or a list of strings for a list
input: {"text": "She opened the door.", "choices": ["She left.", "It rained."]} (multiple
choice), {"words": ["Mr.", "Bumble's", "letter"]} (--words); empty lines are skipped.

Output: {"line": N, "inputs": {...}, "outputs": {name: value}} per input line, in order (N:
its line number), keys in a fixed order;
each line's outputs hold only its own values (a tagger's words, a pretrainer's [MASK]s), never
padding from the lines batched with it. Inputs over a few hundred lines show a progress line
(lines/s and ETA) on stderr when it is a terminal (--quiet: none).

Bad input (stdin and --input alike, `bert_keras.text_files`): a binary file, no text, more
than 1% of lines not valid UTF-8, or a line that is not one request (the wrong number of
fields, too few endings, a JSON line without the signature's keys) fails with a
one-line message and exit status 1, and nothing is written: the whole input is read and
checked before the first prediction (so it is held in memory), and --output is renamed into
place only when every line succeeded (a full disk leaves no file either). Fewer bad lines get
their bad bytes replaced, with one warning. An --input or --output that cannot work (stdin or
stdout closed, a directory, a missing file or directory) fails the same way before the model
loads, and so does a write to stdout that fails (a full disk, a reader that closed the pipe).

With --words (taggers), each line is a sentence's words separated by whitespace, tagged
as given (the export's `tag_words` signature): "Mr. Bumble's letter" is three words, as a
CoNLL file holds them. A tagger's outputs also hold its entities (type, text, start, end,
score; B/I/E/S tags merged as seqeval merges them).

Examples:
  python tools/predict.py --model_dir=saved_models/paraphrase --input=pairs.tsv
  echo "Mr. Bumble's letter" | python tools/predict.py --model_dir=saved_models/ner --words
  echo "Who wrote it?	Paul wrote it." | python tools/predict.py --model_dir=saved_models/qa/1
  printf 'She opened the door.\tShe left.\tIt rained.\n' | \
      python tools/predict.py --model_dir=saved_models/swag
"""

from bert_keras_tools import startup  # first: quiets TensorFlow's start-up

# isort: split
import contextlib
import json
import os
import sys

from absl import app, flags

from bert_keras import files, text_files
from bert_keras.errors import InputError, WriteError, write_error
from bert_keras.serving.server_environment import SERVER_ENVIRONMENT
from bert_keras.tasks.registry import TASKS, get_task
from bert_keras_tools.progress import Progress

__doc__ = __doc__.replace("{input_lines}", "\n".join(  # each task type's own, from the registry
    f"  {name}: {get_task(name).input_line_help}" for name in TASKS))

flags.DEFINE_string("model_dir", None, "An export version directory, or the model directory "
                    "(its highest version is used).")
flags.DEFINE_string("input", "-", "Text file to read, '-' for stdin.")
flags.DEFINE_enum("input_format", "auto", ["auto", "text", "jsonl"],
                  "text: tab-separated fields per line; jsonl: a JSON object per line; auto: "
                  "jsonl for an --input named *.jsonl or *.jsonl.gz, else text.")
flags.DEFINE_string("output", "-", "JSON-lines file to write, '-' for stdout.")
flags.DEFINE_string("signature", "serving_default", "Signature to run.")
flags.DEFINE_integer("batch_size", 32, "Lines per model call.")
flags.DEFINE_bool("words", False, "Input lines are pre-split words, separated by whitespace "
                  "(a tagger's `tag_words` signature: each word tagged as given, as CoNLL "
                  "training files give them).")
flags.DEFINE_bool("quiet", False, "No progress line on stderr (shown only when stderr is a "
                  "terminal and the input has more than a few hundred lines).")
FLAGS = flags.FLAGS
WORDS_SIGNATURE = "tag_words"  # a tagger's pre-split words (tasks/tagging/task.py)


def resolve_version_dir(path):
    """A version directory: `path` itself if it holds saved_model.pb, else its highest
    integer subdirectory."""
    from bert_keras.tasks import task_io

    if files.exists(files.join(path, "saved_model.pb")):
        return path
    versions = (sorted(int(n) for n in files.listdir(path) if n.isdigit())
                if files.isdir(path) else [])
    if versions:
        return files.join(path, str(versions[-1]))
    if task_io.is_task_directory(path):
        raise InputError(f"--model_dir={path} is a trained task directory, not an export: "
                         f"export it first with `python tools/export.py --task_dir={path}`, "
                         "then give the directory it prints.")
    if not files.exists(path):
        raise InputError(f"--model_dir={path} does not exist.")
    raise InputError(f"--model_dir={path} has no saved_model.pb and no version directories.")


def is_jsonl(path, input_format):
    """Whether the input is JSON lines: --input_format, or for 'auto' the --input's name."""
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


def read_input(path, line_format, jsonl):
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


def predict_rows(fn, line_format, rows, task):
    """[(line number, {input name: value})] -> JSON-able dicts, one per row: {"line",
    "inputs", "outputs"}, each line's outputs only its own (the task's `prediction_rows`: no
    batch padding), keys in sorted order. One model call per group of `line_format.batches`."""
    import tensorflow as tf

    outputs = [None] * len(rows)
    inputs = [r for _, r in rows]
    for group in line_format.batches(inputs):
        tensors = line_format.tensors([inputs[i] for i in group])
        out = fn(**{k: tf.constant(v, tf.string) for k, v in tensors.items()})
        for i, row in zip(group, task.prediction_rows({k: v.numpy() for k, v in out.items()})):
            outputs[i] = row
    return [{"line": n, "inputs": r, "outputs": o} for (n, r), o in zip(rows, outputs)]


def check_input_flag(path):
    """InputError for an --input that cannot be read: closed stdin, a directory, no file.
    Checked before the model loads, so a wrong path fails at once in one line."""
    if path == "-":
        if sys.stdin is None:
            raise InputError("--input=- reads stdin, but stdin is closed: give --input=FILE, "
                             "or pipe the text in")
    elif files.isdir(path):
        raise InputError(f"--input={path} is a directory, not a text file")
    elif not files.exists(path):
        raise InputError(f"--input={path} does not exist")


def check_output_flag(path):
    """InputError for an --output that cannot be written: closed stdout, a directory, a
    missing parent directory. Checked before the model loads."""
    if path == "-":
        if sys.stdout is None:
            raise InputError("--output=- writes to stdout, but stdout is closed: give "
                             "--output=FILE")
        return
    if files.isdir(path):
        raise InputError(f"--output={path} is a directory: give the path of a file to write")
    if not files.is_local(path):
        return  # a bucket has no directories to check (output_sink makes a file:// one)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError(f"--output={path}: its directory {parent} does not exist")


def _silence_stdout():
    """Points fd 1 at /dev/null, so that the interpreter's last flush of what stdout still
    buffers cannot fail again (and print "Exception ignored ...") after our one line."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


@contextlib.contextmanager
def stdout_sink():
    """sys.stdout, flushed when the block completes; a write that fails (a full disk, a pipe
    whose reader has gone) becomes a WriteError naming stdout, not a traceback."""
    try:
        yield sys.stdout
        sys.stdout.flush()
    except OSError as e:
        error = write_error(e, "stdout")
        if error is None and not isinstance(e, BrokenPipeError):
            raise
        _silence_stdout()
        raise error or WriteError("stdout", "the reader closed the pipe") from None


@contextlib.contextmanager
def output_sink(path):
    """stdout for '-'; else a temporary file beside `path`, renamed to `path` only if the
    block completes, so a failed run leaves no partial output."""
    if path == "-":
        with stdout_sink() as sink:
            yield sink
        return
    if not files.is_local(path):
        files.makedirs(os.path.dirname(path))
    with files.atomic_path(path) as tmp, files.open_file(tmp, "w") as sink:
        yield sink


def predict_input(fn, line_format, jsonl, sink, task, progress):
    """Predicts every line of --input in batches of --batch_size, writing JSON lines to
    `sink`."""
    rows = read_input(FLAGS.input, line_format, jsonl)
    progress.start(len(rows))
    for start in range(0, len(rows), FLAGS.batch_size):
        for row in predict_rows(fn, line_format, rows[start:start + FLAGS.batch_size], task):
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
        progress.update(min(start + FLAGS.batch_size, len(rows)))
    progress.finish()


def export_metadata(path):
    """The metadata of an export of tools/export.py; None for another SavedModel."""
    from bert_keras.serving.export import METADATA_FILE, read_metadata

    if not files.exists(files.join(path, "assets", METADATA_FILE)):
        return None
    return read_metadata(path)


def signature_inputs(fn, signature, metadata):
    """((input name, rank), ...) of `signature` in the export's order (its metadata's; sorted
    for a SavedModel that tools/export.py did not write); UsageError unless all are
    strings."""
    import tensorflow as tf

    specs = fn.structured_input_signature[1]
    described = (metadata or {}).get("signatures", {}).get(signature, {}).get("inputs", {})
    names = list(described) if set(described) == set(specs) else sorted(specs)
    if any(specs[name].dtype != tf.string for name in names):
        raise app.UsageError(f"Signature {signature!r} takes {names}, not text lines.")
    return tuple((name, specs[name].shape.rank) for name in names)


def main(argv):
    del argv
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be positive, got {FLAGS.batch_size}.")
    check_input_flag(FLAGS.input)
    check_output_flag(FLAGS.output)
    for name, value in SERVER_ENVIRONMENT.items():  # this process only serves
        os.environ.setdefault(name, value)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  Registers the tokenizer ops.

    from bert_keras.tasks.base import Task

    path = resolve_version_dir(FLAGS.model_dir)
    loaded = tf.saved_model.load(path)
    signature = WORDS_SIGNATURE if FLAGS.words else FLAGS.signature
    if FLAGS.words and signature not in loaded.signatures:
        raise app.UsageError(f"--words: the export {path} has no {WORDS_SIGNATURE} signature "
                             "(a tagger's, exported by this version of tools/export.py).")
    if signature not in loaded.signatures:
        raise app.UsageError(
            f"--signature {signature!r} is not one of {sorted(loaded.signatures)}.")
    fn = loaded.signatures[signature]
    metadata = export_metadata(path)
    task = get_task(metadata["task"]) if metadata else Task()
    line_format = task.input_line(signature, signature_inputs(fn, signature, metadata))
    # The task's rows for its own signatures; the values as returned for the others
    # (preprocess: the packed ids).
    if signature not in ("serving_default", *task.extra_signatures):
        task = Task()
    progress = Progress(sys.stderr, quiet=FLAGS.quiet)
    with output_sink(FLAGS.output) as sink:
        predict_input(fn, line_format, is_jsonl(FLAGS.input, FLAGS.input_format), sink, task,
                      progress)


def run():
    startup.run(main)


if __name__ == "__main__":
    run()
