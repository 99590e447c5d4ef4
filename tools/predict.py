r"""Runs an exported SavedModel on lines of text and writes one JSON object per line.

Works on any export of tools/export.py; the model needs only TensorFlow and tensorflow-text.
Input lines: the text for single-text models; "text_a<TAB>text_b" for pair classifiers;
"question<TAB>context" for span QA; text with [MASK] for pretrainers. Output: {"line": N,
"inputs": {...}, "outputs": {name: value}} per input line, in order, keys in a fixed order;
each line's outputs hold only its own values (a tagger's words, a pretrainer's [MASK]s), never
padding from the lines batched with it. Inputs over a few hundred lines show a progress line
(lines/s and ETA) on stderr when it is a terminal (--quiet: none).

Bad input (stdin and --input alike, `bert_keras.text_files`): a binary file, no text, more
than 1% of lines not valid UTF-8, or a line with the wrong number of fields fails with a
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
from bert_keras_tools.progress import Progress

flags.DEFINE_string("model_dir", None, "An export version directory, or the model directory "
                    "(its highest version is used).")
flags.DEFINE_string("input", "-", "Text file to read, '-' for stdin.")
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
    if files.exists(files.join(path, "saved_model.pb")):
        return path
    versions = (sorted(int(n) for n in files.listdir(path) if n.isdigit())
                if files.isdir(path) else [])
    if not versions:
        raise app.UsageError(
            f"--model_dir {path} has no saved_model.pb and no version directories.")
    return files.join(path, str(versions[-1]))


def split_line(n, line, fields, name):
    """{field: text} of input line `n`; TextFileError naming `name` and the line if it has the
    wrong number of tab-separated fields."""
    parts = line.split("\t") if len(fields) > 1 else [line]
    if len(parts) != len(fields):
        raise text_files.TextFileError(
            f"{name}: Line {n} has {len(parts)} tab-separated fields; this model takes "
            f"{len(fields)}: {'<TAB>'.join(fields)}")
    return dict(zip(fields, parts))


def read_input(path, fields):
    """[(line number, {field: text})] of every line of `path` ('-': stdin), all read and
    checked (the text policy, the fields of each line) before the first prediction, so that a
    bad line anywhere leaves no output at all, on stdout too."""
    name = "stdin" if path == "-" else path
    counts = text_files.TextCounts(name)
    lines = text_files.read_lines(name, stream=sys.stdin.buffer if path == "-" else None,
                                  counts=counts, on_bad="replace")
    rows = [(n, split_line(n, line, fields, name)) for n, line in lines]
    text_files.require_text([counts])
    return rows


def predict_rows(fn, fields, rows, task):
    """[(line number, {field: text})] -> JSON-able dicts, one per row, in one model call:
    {"line", "inputs", "outputs"}, each line's outputs only its own (the task's
    `prediction_rows`: no batch padding), keys in sorted order."""
    import numpy as np
    import tensorflow as tf

    if not rows:
        return []
    if fields == ["words"]:  # [B, W] words, "" padding
        split = [r["words"].split() for _, r in rows]
        width = max(len(w) for w in split)
        words = np.array([w + [""] * (width - len(w)) for w in split], dtype=object)
        out = fn(words=tf.constant(words.reshape(len(rows), width), tf.string))
    else:
        out = fn(**{f: tf.constant([r[f] for _, r in rows], tf.string) for f in fields})
    outputs = task.prediction_rows({k: v.numpy() for k, v in out.items()})
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


def predict_input(fn, fields, path, sink, batch_size, task, progress):
    """Predicts every line of `path` ('-': stdin) in batches, writing JSON lines to `sink`."""
    rows = read_input(path, fields)
    progress.start(len(rows))
    for start in range(0, len(rows), batch_size):
        for row in predict_rows(fn, fields, rows[start:start + batch_size], task):
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
        progress.update(min(start + batch_size, len(rows)))
    progress.finish()


def task_of_export(path, signature):
    """The task type whose rows the export's `signature` answers: its metadata's task for
    serving_default; a plain one (values as the signature returns them) otherwise, or for a
    SavedModel that tools/export.py did not write."""
    from bert_keras.serving.export import METADATA_FILE, read_metadata
    from bert_keras.tasks.base import Task
    from bert_keras.tasks.registry import get_task

    if not files.exists(files.join(path, "assets", METADATA_FILE)):
        return Task()
    task = get_task(read_metadata(path)["task"])
    return task if signature in ("serving_default", *task.extra_signatures) else Task()


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
    fields = sorted(fn.structured_input_signature[1])
    if fields == ["context", "question"]:
        fields = ["question", "context"]
    elif fields == ["words"] and not FLAGS.words:
        raise app.UsageError(f"Signature {signature!r} takes pre-split words: add --words.")
    elif len(fields) != 1 and fields != ["text_a", "text_b"]:
        raise app.UsageError(f"Signature {signature!r} takes {fields}, not text lines.")
    task = task_of_export(path, signature)
    progress = Progress(sys.stderr, quiet=FLAGS.quiet)
    with output_sink(FLAGS.output) as sink:
        predict_input(fn, fields, FLAGS.input, sink, FLAGS.batch_size, task, progress)


def run():
    startup.run(main)


if __name__ == "__main__":
    run()
