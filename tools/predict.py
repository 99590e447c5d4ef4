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
checked before the first prediction (so it is held in memory), and before the model loads
(the signature's inputs come from the export's metadata), and --output is renamed into
place only when every line succeeded (a full disk leaves no file either). Fewer bad lines get
their bad bytes replaced, with one warning. An --input or --output that cannot work (stdin or
stdout closed, a directory, a missing file or directory) fails the same way before the model
loads, and so does a write to stdout that fails (a full disk, a reader that closed the pipe),
and an export that cannot load (a saved_model.pb that is not a SavedModel, its variables
missing, truncated or corrupt).

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
import sys

from absl import app, flags

from bert_keras.serving import client
from bert_keras.tasks.registry import TASKS, get_task
from bert_keras_tools import text_io
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


def main(argv):
    del argv
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be positive, got {FLAGS.batch_size}.")
    text_io.check_input_flag(FLAGS.input)
    text_io.check_output_flag(FLAGS.output)
    try:
        signature = client.open_signature(FLAGS.model_dir, FLAGS.signature, FLAGS.words)
    except client.SignatureError as e:
        raise app.UsageError(str(e)) from None
    with text_io.output_sink(FLAGS.output) as sink:
        rows = client.read_requests(FLAGS.input, signature.line_format,
                                    client.is_jsonl(FLAGS.input, FLAGS.input_format))
        client.write_predictions(signature, rows, sink, FLAGS.batch_size,
                                 Progress(sys.stderr, quiet=FLAGS.quiet))


def run():
    startup.run(main)


if __name__ == "__main__":
    run()
