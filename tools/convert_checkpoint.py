r"""Converts a BERT checkpoint between Hugging Face (transformers), Google TF1 and bert_keras
layouts.

Reads a Hugging Face directory (config.json, model.safetensors and its family's tokenizer
files: vocab.txt, vocab.json + merges.txt, spiece.model or tokenizer.json), a Google TF1
directory (bert_config.json, bert_model.ckpt.*, vocab.txt), a bert_keras encoder directory,
or (for --output_format=transformers) a task directory of tools/finetune.py or
tools/pretrain.py (best/, final/, or the run directory holding one), checks every tensor
against the exact name maps, and writes:

  bert_keras    bert_keras.json + model.safetensors (the encoder) + every tokenizer file, which
                `bk.BertEncoder.from_pretrained` and `bk.load_tokenizer` load;
  google        bert_config.json + bert_model.ckpt.* (BERT encoders with Google's GELU);
  transformers  config.json + model.safetensors + the tokenizer files (tokenizer.json,
                tokenizer_config.json, ...) of the model with its heads, as transformers saves
                its class: a fine-tuned classifier as *ForSequenceClassification (id2label,
                problem_type), a tagger *ForTokenClassification, span QA
                *ForQuestionAnswering, pretraining's final/ *ForMaskedLM (*ForPreTraining with
                NSP / SOP), an ELECTRA discriminator ElectraForPreTraining, an encoder *Model
                (`bk.save_transformers`). The family is the input's own (a transformers
                directory's model_type), --model_type, or the one whose classes compute the
                model; a model that no transformers class computes is refused in one line.

Examples:
  python tools/convert_checkpoint.py --input_dir=all-MiniLM-L6-v2/ \
      --output_dir=runs/checkpoints/minilm
  python tools/convert_checkpoint.py --input_dir=runs/paraphrase/best \
      --output_dir=runs/paraphrase-hf --output_format=transformers
  # then, with transformers: pipeline("text-classification", model="runs/paraphrase-hf")
"""

from bert_keras_tools import startup  # first: quiets TensorFlow's start-up

# isort: split
import pathlib

from absl import app, flags, logging

import bert_keras as bk
from bert_keras import files
from bert_keras.checkpoints.google import save_google_checkpoint
from bert_keras.errors import InputError
from bert_keras.families import FAMILIES
from bert_keras.files import read_json
from bert_keras.tasks import registry, sources

flags.DEFINE_string("input_dir", None, "Checkpoint directory to read (HF, Google TF1 or "
                    "bert_keras; for transformers output also a task directory).")
flags.DEFINE_string("output_dir", None, "Directory to write.")
flags.DEFINE_enum("output_format", "bert_keras", ["bert_keras", "google", "transformers"],
                  "Layout to write: bert_keras (bert_keras.json + model.safetensors), google "
                  "(bert_config.json + bert_model.ckpt, Google's TF1 variable names) or "
                  "transformers (config.json + model.safetensors + tokenizer files, the model "
                  "with its heads).")
flags.DEFINE_enum("model_type", None, sorted(FAMILIES),
                  "transformers output: the family to write; default: the input's own, or the "
                  "one whose classes compute the model.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    if not FLAGS.input_dir or not FLAGS.output_dir:
        raise app.UsageError("--input_dir and --output_dir are required.")
    if _same_directory(FLAGS.output_dir, FLAGS.input_dir):
        raise app.UsageError(f"--output_dir must differ from --input_dir ({FLAGS.input_dir}).")
    if FLAGS.model_type and FLAGS.output_format != "transformers":
        raise app.UsageError("--model_type is for --output_format=transformers.")
    if FLAGS.output_format == "transformers":
        return write_transformers(FLAGS.input_dir, FLAGS.output_dir, FLAGS.model_type)

    source = registry.describe_encoder(FLAGS.input_dir)  # its files read once
    encoder, _ = sources.load(source)
    tokenizer = source.tokenizer
    if FLAGS.output_format == "google":
        save_google_checkpoint(encoder, FLAGS.output_dir, tokenizer)
    else:
        encoder.save_pretrained(FLAGS.output_dir, tokenizer)
    logging.info("Wrote %s (%s, %d layers, hidden %d, vocab %d).", FLAGS.output_dir,
                 FLAGS.output_format, encoder.num_layers, encoder.hidden_size, encoder.vocab_size)
    print(f"Converted {FLAGS.input_dir} -> {FLAGS.output_dir} ({FLAGS.output_format}; "
          f"tokenizer files {', '.join(sorted(tokenizer.asset_files))})")


def write_transformers(input_dir, output_dir, model_type=None):
    """The model of `input_dir` (`registry.load_model`) written to `output_dir` as
    transformers' class of it."""
    model, tokenizer, labels, own_type = registry.load_model(input_dir)
    try:
        written = bk.save_transformers(model, output_dir, tokenizer=tokenizer,
                                       model_type=model_type or own_type, labels=labels)
    except InputError as e:
        raise InputError(f"{input_dir}: {e}") from None
    config = read_json(files.join(output_dir, "config.json"))
    print(f"Converted {input_dir} -> {output_dir} (transformers {config['architectures'][0]}, "
          f"model_type {written}; tokenizer files {', '.join(sorted(tokenizer.asset_files))})")


def _same_directory(a, b):
    """Whether paths `a` and `b` name the same directory (symlinks resolved where local)."""
    if files.is_local(a) and files.is_local(b):
        return pathlib.Path(a).resolve() == pathlib.Path(b).resolve()
    return a.rstrip("/") == b.rstrip("/")


def run():
    startup.run(main)


if __name__ == "__main__":
    run()
