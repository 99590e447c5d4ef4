r"""Creates masked-LM + NSP/SOP pretraining TFRecords with Google BERT's feature names.

Input: text files in BERT's original format (one sentence per line, blank line between
documents; globs, comma-separated, `.gz` ok) or a TFDS text dataset (--tfds_name, prepared in
--tfds_data_dir: one that is not is refused at once unless --tfds_download). Output:
--num_output_shards TFRecord files readable by Google's run_pretraining.py and by
`bert_keras.data.pretraining.records.read_pretraining_tfrecords`. Workers (--num_workers processes)
each write whole shards; output bytes depend only on the flags, not on the number of workers.
A summary (documents, skipped, instances written, examples/s) is logged at the end.
Input that cannot be used (a binary or mis-named compressed file, more than 1% of lines not
valid UTF-8, no text, too few documents for --pair_mode, no instance at all) fails with a
one-line message naming the files, and no output file is left (shards are renamed into place
only when all are complete).

Example (the default mini run):
  python tools/create_pretraining_data.py --flagfile=flags/create_pretraining_data_mini.flags

Example (custom):
  python tools/create_pretraining_data.py --input_file='corpus/*.txt.gz' \
      --output_file=runs/pretrain_data/train.tfrecord --num_output_shards=8 --num_workers=4 \
      --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5 --do_whole_word_mask
"""

from bert_keras_tools import startup  # first: quiets TensorFlow's start-up

# isort: split
import json

from absl import app, flags, logging

from bert_keras.data.pretraining import pipeline as pretraining_data
from bert_keras.errors import InputError

flags.DEFINE_string("input_file", None, "Input text files: comma-separated globs (.gz ok).")
flags.DEFINE_string("tfds_name", None, "TFDS text dataset instead of --input_file, e.g. "
                    "wikipedia/20230601.en (one example = one document, lines = sentences).")
flags.DEFINE_string("tfds_split", "train", "TFDS split.")
flags.DEFINE_string("tfds_text_key", "text", "TFDS feature holding the text.")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data dir holding the prepared --tfds_name "
                    "(default: $TFDS_DATA_DIR, else ~/tensorflow_datasets).")
flags.DEFINE_bool("tfds_download", False, "Download and prepare --tfds_name into "
                  "--tfds_data_dir if it is not there (needs the network); without it an "
                  "unprepared dataset is refused at once.")
flags.DEFINE_string("output_file", None, "Output TFRecord path; with --num_output_shards=N>1 "
                    "the files are OUTPUT-0000k-of-0000N.")
flags.DEFINE_integer("num_output_shards", 1, "Number of output files.")
flags.DEFINE_integer("num_workers", 1, "Parallel worker processes (at most num_output_shards).")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab; default: the bundled vocab.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (uncased vocab).")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum masked LM predictions per sequence.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of tokens to mask.")
flags.DEFINE_integer("dupe_factor", 10, "Times to duplicate the input with different masks.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter-than-maximum sequence.")
flags.DEFINE_bool("do_whole_word_mask", False, "Mask all WordPieces of a word together.")
flags.DEFINE_integer("ngram", 1, "Mask spans of up to N words (WordPieces without "
                     "--do_whole_word_mask), n drawn with p proportional to 1/n; ALBERT: 3.")
flags.DEFINE_enum("pair_mode", "nsp", ["nsp", "sop", "none"], "nsp: BERT next sentence; sop: "
                  "ALBERT sentence order; none: RoBERTa FULL-SENTENCES packing (label 0).")
flags.DEFINE_integer("random_seed", 12345, "Random seed.")
flags.DEFINE_integer("documents_per_chunk", 1000, "Documents held at once per worker; also the "
                     "pool for random next documents and the in-chunk shuffle.")
flags.DEFINE_integer("log_every", 10000, "Log progress every N examples per worker.")
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.output_file:
        raise app.UsageError("--output_file is required")
    # An empty value means unset: `--flagfile=f --input_file= --tfds_name=x` drops f's files.
    input_file, tfds_name = FLAGS.input_file or None, FLAGS.tfds_name or None
    if (input_file is None) == (tfds_name is None):
        got = (f"--input_file={input_file!r} and --tfds_name={tfds_name!r}" if input_file
               else "neither")
        raise app.UsageError(f"Give exactly one of --input_file and --tfds_name, got {got}.")
    if FLAGS.num_workers > FLAGS.num_output_shards:
        logging.warning("--num_workers=%d > --num_output_shards=%d: only %d workers will run",
                        FLAGS.num_workers, FLAGS.num_output_shards, FLAGS.num_output_shards)
    try:
        summary = pretraining_data.create_pretraining_tfrecords(
            FLAGS.output_file, input_files=input_file, vocab_file=FLAGS.vocab_file or None,
            lower_case=FLAGS.do_lower_case, tfds_name=tfds_name, tfds_split=FLAGS.tfds_split,
            tfds_text_key=FLAGS.tfds_text_key, tfds_data_dir=FLAGS.tfds_data_dir or None,
            tfds_download=FLAGS.tfds_download,
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            masked_lm_prob=FLAGS.masked_lm_prob, dupe_factor=FLAGS.dupe_factor,
            short_seq_prob=FLAGS.short_seq_prob, whole_word_mask=FLAGS.do_whole_word_mask,
            ngram=FLAGS.ngram,
            pair_mode=FLAGS.pair_mode, random_seed=FLAGS.random_seed,
            num_output_shards=FLAGS.num_output_shards, num_workers=FLAGS.num_workers,
            documents_per_chunk=FLAGS.documents_per_chunk, log_every=FLAGS.log_every)
    except InputError:
        raise  # bad input text (no output written): startup.run prints it in one line
    except (FileNotFoundError, ValueError) as e:
        raise app.UsageError(str(e)) from e
    print(json.dumps(summary, indent=1))



def run():
    flags.mark_flag_as_required("output_file")
    startup.run(main)


if __name__ == "__main__":
    run()
