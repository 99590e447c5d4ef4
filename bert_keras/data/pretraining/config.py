"""PretrainData: a pretraining run's data (raw text, static TFRecords or a TFDS text
dataset), its tokenizer and how its examples are made.

>>> data = PretrainData(train_text="bert_keras/assets/web_bible_corpus.txt.gz")
>>> data.tfds_text() is None, data.masked_lm_prob
(True, 0.15)
>>> PretrainData(train_text="bert_keras/assets/web_bible_corpus.txt.gz", masked_lm_prob=1.5)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --masked_lm_prob must be in (0, 1), got 1.5.
"""

import dataclasses

import tensorflow as tf

from bert_keras.configs import Config, ConfigError, check, option, section
from bert_keras.data.pretraining.documents import PAIR_MODES, TfdsText
from bert_keras.data.tfds_source import TfdsSource
from bert_keras.files import expand_patterns

SOURCES = ("train_data", "train_text", "tfds_name")


@dataclasses.dataclass(frozen=True)
class PretrainData(Config):
    """Exactly one source of examples, the tokenizer, masking, pairs and the two phases."""

    train_text: str = option(None, "Raw text files (comma-separated globs, .gz ok): one sentence "
                             "per line, blank line between documents. Pairs and masks are made "
                             "on the fly.")
    train_data: str = option(None, "Static pretraining TFRecords (comma-separated globs), e.g. "
                             "from tools/create_pretraining_data.py or Google's script.")
    # Held-out data of `training.pretraining_eval`: TFRecords of --max_seq_length, or raw text.
    eval_data: str = option(None, "Held-out TFRecords, evaluated every --eval_every steps.")
    eval_text: str = option(None, "Or held-out raw text, evaluated every --eval_every steps.")
    tfds: TfdsSource = section(TfdsSource)
    tfds_split: str = option("train", "--tfds_name: the split to train on.", advanced=True)
    tfds_text_key: str = option("text", "--tfds_name: the feature holding the text.",
                                advanced=True)
    vocab_file: str = option(None, "WordPiece vocab; default: the bundled bert_keras/assets/"
                             "vocab.txt, or the vocab of --init_checkpoint.", advanced=True)
    lower_case: bool = option(True, "Uncased vocab (lower-case and strip accents).", advanced=True)
    tokenizer_dir: str = option(None, "Or: a directory of another family's tokenizer files "
                                "(RoBERTa's vocab.json + merges.txt, ALBERT's *.model, or a "
                                "vocab.txt), for pretraining that family from scratch.",
                                advanced=True)
    max_seq_length: int = option(128, "Sequence length (of the data, for --train_data).",
                                 advanced=True)
    max_predictions_per_seq: int = option(20, "Masked positions per sequence.", advanced=True)
    masked_lm_prob: float = option(0.15, "Fraction of tokens masked (--train_text).", advanced=True)
    whole_word_mask: bool = option(False, "Mask whole words (--train_text).", advanced=True)
    ngram: int = option(1, "Mask spans of up to N words (WordPieces without "
                        "--whole_word_mask), n drawn with p proportional to 1/n; ALBERT: 3 "
                        "(--train_text).", advanced=True)
    documents_per_chunk: int = option(1000, "Documents tokenized at once per input worker "
                                      "(--train_text): also the pool of random next documents "
                                      "and the in-chunk shuffle. Smaller: a quicker first step "
                                      "on a small corpus.", advanced=True)
    pair_mode: str | None = option(None, "Sentence-pair task: next sentence, sentence order, "
                                   "or none (MLM only; full sentences packed across documents, "
                                   "RoBERTa). Default: nsp for --objective=mlm, none for electra "
                                   "and distill (which train none).", choices=PAIR_MODES,
                                   advanced=True)
    phase2_seq_length: int = option(None, "Two-phase recipe: the last --phase2_fraction of the "
                                    "steps use this sequence length (BERT: 128, then 512).",
                                    advanced=True)
    phase2_fraction: float = option(0.1, "Fraction of --train_steps in phase 2.", advanced=True)
    phase2_max_predictions_per_seq: int = option(None, "Masked positions in phase 2 (default: "
                                                 "--max_predictions_per_seq; BERT used 80 at 512).",
                                                 advanced=True)
    phase2_train_data: str = option(None, "Static TFRecords of phase 2 (with --train_data).",
                                    advanced=True)

    def validate(self):
        given = {name: getattr(self, name) if name != "tfds_name" else self.tfds.tfds_name
                 for name in SOURCES}
        check(sum(bool(value) for value in given.values()) == 1,
              "Give exactly one of --train_data (TFRecords), --train_text (raw text) and "
              "--tfds_name (a TFDS text dataset); got " + ", ".join(
                  f"--{name}={value!r}" for name, value in given.items()) + ".")
        if not self.tfds.tfds_name:
            self.files("train_data" if self.train_data else "train_text")
        check(not (self.eval_data and self.eval_text),
              f"Give one of --eval_data={self.eval_data!r} (TFRecords) and "
              f"--eval_text={self.eval_text!r} (raw text).")
        if self.eval_data or self.eval_text:
            self.files(self.eval_source())
        if self.phase2_train_data:
            check(bool(self.train_data), "--phase2_train_data goes with --train_data.")
            self.files("phase2_train_data")
        if self.phase2_seq_length:
            check(not (self.train_data and not self.phase2_train_data),
                  "--phase2_seq_length with --train_data needs --phase2_train_data (TFRecords "
                  f"of length {self.phase2_seq_length}).")
            check(0.0 < self.phase2_fraction < 1.0,
                  f"--phase2_fraction must be in (0, 1), got {self.phase2_fraction}.")
        check(not self.vocab_file or tf.io.gfile.exists(self.vocab_file),
              f"--vocab_file={self.vocab_file!r} does not exist.")
        check(not (self.vocab_file and self.tokenizer_dir),
              f"Give one of --vocab_file={self.vocab_file!r} and "
              f"--tokenizer_dir={self.tokenizer_dir!r}.")
        check(not self.tokenizer_dir or tf.io.gfile.isdir(self.tokenizer_dir),
              f"--tokenizer_dir={self.tokenizer_dir!r} is not a directory.")
        for name in ("max_seq_length", "max_predictions_per_seq", "ngram", "documents_per_chunk"):
            value = getattr(self, name)
            check(isinstance(value, int) and value >= 1, f"--{name} must be >= 1, got {value}.")
        check(0.0 < self.masked_lm_prob < 1.0,
              f"--masked_lm_prob must be in (0, 1), got {self.masked_lm_prob}.")
        check(self.pair_mode is None or self.pair_mode in PAIR_MODES,
              f"--pair_mode={self.pair_mode!r} is not one of {PAIR_MODES}.")

    def tfds_text(self):
        """The `documents.TfdsText` of --tfds_name and its options (None without it)."""
        if not self.tfds.tfds_name:
            return None
        return TfdsText(self.tfds.tfds_name, self.tfds_split, self.tfds_text_key,
                        self.tfds.tfds_data_dir or None, self.tfds.tfds_download)

    def eval_source(self):
        """The option that names the held-out data ("eval_data" or "eval_text"), or None."""
        return "eval_data" if self.eval_data else "eval_text" if self.eval_text else None

    def files(self, name):
        """The files of a comma-separated glob option; ConfigError naming it if one matches none."""
        pattern = getattr(self, name)
        try:
            return expand_patterns(pattern)
        except FileNotFoundError as e:
            raise ConfigError(f"No file matches {getattr(e, 'pattern', pattern)!r} "
                              f"(from --{name}={pattern!r}).") from None
