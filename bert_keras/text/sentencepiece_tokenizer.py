"""ALBERT's SentencePiece tokenizer, in-graph (tf-text's SentencepieceTokenizer, which TF
Serving links), with the preprocessing of transformers' `AlbertTokenizer`.

Pipeline (all TF ops): whitespace runs -> one space and the ends stripped; `` and '' -> ";
(uncased) NFKD, combining marks (\\p{Mn}) removed, lower-case; then the SentencePiece model
(its own normalization rule included). The same ids as `transformers.AlbertTokenizer` 5.x
(tests/test_families.py). Known deviations: Google's original (and transformers 4 "slow")
tokenizer re-splits pieces that end in digit + comma ("9,"); transformers 5 does not and
neither do we. Accent stripping uses \\p{Mn}, where Python's `unicodedata.combining` differs
on rare code points.

Example:
>>> import pathlib
>>> path = pathlib.Path(__file__).parents[2] / "tests" / "fixtures" / "families" / "albert"
>>> tok = SentencePieceTokenizer.from_pretrained(str(path))  # doctest: +SKIP
>>> tok.tokenize(["In the beginning"]).to_list()  # doctest: +SKIP
[[13, 6, 25, 98, 91, 16]]
"""

import json
import os
import shutil

import tensorflow as tf
import tensorflow_text as tf_text

from bert_keras.text.packing import without_ids
from bert_keras.errors import InputError

MODEL_FILE = "spiece.model"
_SPACES = r"[\s\p{Z}\x{1c}-\x{1f}\x{85}]+"  # what Python's str.split() splits on


def find_model_file(path):
    """The SentencePiece model of directory `path`: spiece.model (Hugging Face), else its only
    `*.model` file (Google's ALBERT directories ship `30k-clean.model`); None if neither."""
    if tf.io.gfile.exists(os.path.join(path, MODEL_FILE)):
        return os.path.join(path, MODEL_FILE)
    models = tf.io.gfile.glob(os.path.join(path, "*.model"))
    return models[0] if len(models) == 1 else None


class SentencePieceTokenizer(tf.Module):
    """A SentencePiece model with ALBERT's special tokens ([CLS], [SEP], [MASK], <pad>, <unk>).

    Args:
      model_file: the `spiece.model` file.
      lower_case: lower-case and strip accents first (ALBERT's uncased models).
    """

    def __init__(self, model_file, lower_case=True):
        super().__init__(name="sentencepiece_tokenizer")
        self.vocab_file = os.fspath(model_file)
        with tf.io.gfile.GFile(self.vocab_file, "rb") as f:
            model = f.read()
        self.lower_case = bool(lower_case)
        self._sp = tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        self.vocab_size = int(self._sp.vocab_size())
        self._vocab = tuple(t.decode("utf-8") for t in
                            self._sp.id_to_string(tf.range(self.vocab_size)).numpy().tolist())
        index = {token: i for i, token in reversed(list(enumerate(self._vocab)))}
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>") if t not in index]
        if missing:
            raise InputError(f"SentencePiece model {self.vocab_file!r} lacks ALBERT's special "
                             f"tokens {missing}.")
        self.cls_id, self.sep_id, self.mask_id = index["[CLS]"], index["[SEP]"], index["[MASK]"]
        self.pad_id, self.unk_id = index["<pad>"], index["<unk>"]

    @property
    def vocab(self):
        return list(self._vocab)

    @classmethod
    def from_pretrained(cls, path):
        """The tokenizer of a checkpoint directory: its spiece.model (`find_model_file`), and
        casing from tokenizer_config.json (`do_lower_case`, default True as in ALBERT)."""
        lower_case = True
        config_file = os.path.join(path, "tokenizer_config.json")
        if tf.io.gfile.exists(config_file):
            with tf.io.gfile.GFile(config_file) as f:
                lower_case = bool(json.load(f).get("do_lower_case", True))
        model_file = find_model_file(path)
        if model_file is None:
            raise FileNotFoundError(f"{path} has no {MODEL_FILE} (nor a single *.model file).")
        return cls(model_file, lower_case=lower_case)

    @property
    def asset_files(self):
        """{name in an export's assets/: file} of the files that define this tokenizer."""
        return {MODEL_FILE: self.vocab_file}

    separators_between = 1  # [CLS] A [SEP] B [SEP]
    word_start_marker = "\u2581"  # "▁the": pieces that start a word (whole-word masking)

    def save(self, directory):
        """Writes spiece.model and the casing (tokenizer_config.json) to `directory`."""
        shutil.copyfile(self.vocab_file, os.path.join(directory, MODEL_FILE))
        with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": self.lower_case}, f)

    def normalize(self, texts):
        # Some string ops read C strings, where a NUL ends the text. A private-use character
        # is, like NUL, one unknown piece to SentencePiece.
        texts = tf.strings.regex_replace(texts, r"\x{0}", "\uE000")
        texts = tf.strings.strip(tf.strings.regex_replace(texts, _SPACES, " "))
        texts = tf.strings.regex_replace(texts, "``|''", '"')
        if self.lower_case:
            texts = tf_text.normalize_utf8(texts, "NFKD")
            texts = tf.strings.regex_replace(texts, r"\p{Mn}", "")
            texts = tf.strings.lower(texts, encoding="utf-8")
        return texts

    def tokenize(self, texts):
        """Texts (str, list or string tensor [B]) -> ids int32 [B, (pieces)], no special tokens."""
        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank == 0:
            return self.tokenize(tf.reshape(texts, [1]))[0]
        return self._sp.tokenize(self.normalize(texts))

    def detokenize(self, ids):
        """Ids [B, (pieces)] -> text [B] (special tokens dropped)."""
        ids = without_ids(ids, (self.pad_id, self.cls_id, self.sep_id, self.mask_id))
        return self._sp.detokenize(ids)

    def __call__(self, texts):
        return self.tokenize(texts)
