r"""Converts a BERT checkpoint between Hugging Face, Google TF1 and bert_keras layouts.

Reads a Hugging Face directory (config.json, model.safetensors and its family's tokenizer
files: vocab.txt, vocab.json + merges.txt, spiece.model or tokenizer.json), a Google TF1
directory (bert_config.json, bert_model.ckpt.*, vocab.txt) or a bert_keras directory, checks
every tensor against the encoder's exact name map, and writes a directory that
`bk.BertEncoder.from_pretrained` and `bk.load_tokenizer` load, with every file of the
tokenizer (`tokenizer.save`).

Example:
  python tools/convert_checkpoint.py --input_dir=all-MiniLM-L6-v2/ \
      --output_dir=checkpoints/minilm
"""

from bert_keras_tools import startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import pathlib

from absl import app, flags, logging

import bert_keras as bk
from bert_keras.checkpoints.google import save_google_checkpoint
from bert_keras.text.tokenizers import load_tokenizer

flags.DEFINE_string("input_dir", None, "Checkpoint directory to read (HF, Google TF1 or bert_keras).")
flags.DEFINE_string("output_dir", None, "Directory to write.")
flags.DEFINE_enum("output_format", "bert_keras", ["bert_keras", "google"],
                  "Layout to write: bert_keras (bert_keras.json + model.safetensors) or google "
                  "(bert_config.json + bert_model.ckpt, Google's TF1 variable names).")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    if not FLAGS.input_dir or not FLAGS.output_dir:
        raise app.UsageError("--input_dir and --output_dir are required.")
    if pathlib.Path(FLAGS.output_dir).resolve() == pathlib.Path(FLAGS.input_dir).resolve():
        raise app.UsageError(f"--output_dir must differ from --input_dir ({FLAGS.input_dir}).")

    encoder = bk.BertEncoder.from_pretrained(FLAGS.input_dir)
    tokenizer = load_tokenizer(FLAGS.input_dir)
    encoder.check_tokenizer(tokenizer, FLAGS.input_dir)
    if FLAGS.output_format == "google":
        save_google_checkpoint(encoder, FLAGS.output_dir, tokenizer)
    else:
        encoder.save_pretrained(FLAGS.output_dir, tokenizer)
    logging.info("Wrote %s (%s, %d layers, hidden %d, vocab %d).", FLAGS.output_dir,
                 FLAGS.output_format, encoder.num_layers, encoder.hidden_size, encoder.vocab_size)
    print(f"Converted {FLAGS.input_dir} -> {FLAGS.output_dir} ({FLAGS.output_format}; "
          f"tokenizer files {', '.join(sorted(tokenizer.asset_files))})")



def run():
    startup.run(main)


if __name__ == "__main__":
    run()
