"""DeBERTa-v3's tokenizer (also DeBERTa-v2's and mDeBERTa-v3's): a SentencePiece unigram model
(`spm.model`) in-graph through `SentencePieceTokenizer` (tf-text), with the model's own ids.

The model's first pieces are [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3, and [MASK] is the id after its
last piece (transformers adds it): transformers' `DebertaV2Tokenizer` ids. The text is
normalized as transformers does it: whitespace runs split the words, then the model's own
rule (v3's `nmt_nfkc`); no lower-casing, no quote replacement (ALBERT's). Pairs are packed
`[CLS] A [SEP] B [SEP]` with type ids 0 then 1, as transformers' tokenizer gives them (v3
models have no token types, so they change nothing there). Offsets are transformers 5's too:
a word that follows whitespace starts at the whitespace character just before it (the "▁" of
its first piece keeps the space it stands for), as its served tagging spans show, and a lone
"▁" piece there spans that character alone.

A transformers 5 directory may hold tokenizer.json alone: `tokenizer_json.convert` rebuilds
spm.model from its pieces, scores and charsmap (`tokenizers.load_tokenizer`). Known
differences: special tokens written in a text ("[MASK]") are matched as those tokens by
transformers, split like other text here; `SentencePieceTokenizer`'s known deviations hold.

Example (the test fixture's small model):
>>> import pathlib
>>> path = pathlib.Path(__file__).parents[2] / "tests" / "fixtures" / "families" / "deberta_v3"
>>> tok = DebertaV3Tokenizer.from_pretrained(str(path))
>>> tok.pad_id, tok.cls_id, tok.sep_id, tok.unk_id, tok.mask_id == tok.vocab_size - 1
(0, 1, 2, 3, True)
"""

import json
import os

import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.files import read_json
from bert_keras.text.sentencepiece_tokenizer import SentencePieceTokenizer

MODEL_FILE = "spm.model"
SPECIAL_PIECES = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]  # the model's pieces 0-3
MASK_TOKEN = "[MASK]"  # after the pieces
# tokenizer_config.json as transformers reads it.
TOKENIZER_CONFIG = dict(tokenizer_class="DebertaV2Tokenizer", do_lower_case=False,
                        split_by_punct=False, bos_token="[CLS]", eos_token="[SEP]",
                        unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                        cls_token="[CLS]", mask_token=MASK_TOKEN, vocab_type="spm")


def check_config(config, config_file):
    """InputError naming `config_file` when its dict `config` asks for what this tokenizer
    lacks: lower-casing or punctuation splitting (no published DeBERTa-v3 uses them)."""
    for key in ("do_lower_case", "split_by_punct"):
        if config.get(key):
            raise InputError(f"{config_file}: {key} is true; the DeBERTa tokenizer here reads "
                             "only cased models without punctuation splitting (v3's).")


class DebertaV3Tokenizer(SentencePieceTokenizer):
    """DeBERTa's SentencePiece model with its own ids (see the module).

    Args:
      model_file: the `spm.model` file.
    """

    pair_quotes = False
    # What nmt_nfkc's charsmap (every DeBERTa-v3's) makes a space, which splits DeBERTa's words
    # in transformers: whitespace, U+061C, U+200B, U+200C, U+200E, U+200F, "▁",
    # U+FEFF, U+FFFD; not U+0085, which Rust's whitespace split (ALBERT's) takes and nmt_nfkc
    # keeps (an unknown piece).
    spaces = (r"[\s\p{Z}\x{61C}\x{200B}\x{200C}\x{200E}\x{200F}\x{2581}"
              r"\x{FEFF}\x{FFFD}]+")

    def __init__(self, model_file):
        super().__init__(model_file, lower_case=False, pair_type_ids=True)

    def _vocab_of(self, pieces):
        if pieces[:4] != SPECIAL_PIECES:
            raise InputError(f"{self.vocab_file}: the first pieces of DeBERTa's SentencePiece "
                             f"model are {SPECIAL_PIECES}, not {pieces[:4]} (another family's "
                             "model?).")
        return pieces + [MASK_TOKEN] * (MASK_TOKEN not in pieces)

    def _set_special_ids(self, pieces):
        self.pad_id, self.cls_id, self.sep_id, self.unk_id = range(len(SPECIAL_PIECES))
        self.mask_id = self._vocab.first_id[MASK_TOKEN]

    @classmethod
    def from_pretrained(cls, path):
        """The tokenizer of a directory with an `spm.model` (transformers' DeBERTa-v2/v3
        directories, ours); InputError for a tokenizer_config.json that asks for lower-casing
        or punctuation splitting, which no published DeBERTa-v3 uses and this class lacks."""
        model_file = os.path.join(path, MODEL_FILE)
        if not tf.io.gfile.exists(model_file):
            raise FileNotFoundError(f"{path} has no {MODEL_FILE}.")
        config_file = os.path.join(path, "tokenizer_config.json")
        check_config(read_json(config_file) if tf.io.gfile.exists(config_file) else {},
                     config_file)
        return cls(model_file)

    def _pieces_with_offsets(self, texts):
        """`SentencePieceTokenizer`'s, each word-start piece that follows a whitespace
        character starting at that character, a lone "▁" there spanning that character alone
        (transformers' offsets: the "▁" stands for it, the first word's too)."""
        ids, starts, ends, is_start = super()._pieces_with_offsets(texts)
        chars, char_starts = tf.strings.unicode_split_with_offsets(
            texts, "UTF-8", errors="replace", replacement_char=0xFFFD)
        # Characters and pieces keyed by (row, byte), to find the character a piece starts at.
        stride = tf.cast(tf.reduce_max(tf.strings.length(texts)) + 1, tf.int64)
        char_rows = chars.value_rowids()
        char_keys = char_rows * stride + char_starts.flat_values
        piece_rows = ids.value_rowids()
        flat_starts = tf.cast(starts.flat_values, tf.int64)
        at = tf.searchsorted(char_keys, piece_rows * stride + flat_starts, side="left")
        flat_chars = chars.flat_values
        before = tf.maximum(at - 1, 0)
        moved = (is_start.flat_values & (at > 0)
                 & (tf.gather(char_rows, before) == piece_rows)
                 & tf.strings.regex_full_match(tf.gather(flat_chars, before), self.spaces))
        # The charsmap maps "\r\n" to one space, which transformers aligns with the "\r".
        crlf = ((at > 1) & (tf.gather(flat_chars, before) == "\n")
                & (tf.gather(flat_chars, tf.maximum(at - 2, 0)) == "\r")
                & (tf.gather(char_rows, tf.maximum(at - 2, 0)) == piece_rows))
        space = tf.where(crlf, at - 2, before)  # the whitespace character a "▁" stands for
        new_starts = tf.where(moved, tf.gather(char_starts.flat_values, space), flat_starts)
        # A moved lone "▁" spans that character alone.
        lone = moved & (ids.flat_values == self._vocab.first_id.get(self.word_start_marker, -1))
        space_end = tf.gather(char_starts.flat_values, tf.minimum(
            space + 1, tf.size(flat_chars, out_type=space.dtype) - 1))
        new_ends = tf.where(lone, tf.cast(space_end, ends.dtype), ends.flat_values)
        return (ids, starts.with_flat_values(tf.cast(new_starts, starts.dtype)),
                ends.with_flat_values(new_ends), is_start)

    @property
    def asset_files(self):
        """{name in an export's assets/: file} of the files that define this tokenizer."""
        return {MODEL_FILE: self.vocab_file}

    def save(self, directory):
        """Writes spm.model and a tokenizer_config.json that transformers reads (its
        `DebertaV2Tokenizer` and special tokens) to `directory`."""
        tf.io.gfile.copy(self.vocab_file, os.path.join(directory, MODEL_FILE), True)
        with tf.io.gfile.GFile(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            f.write(json.dumps(TOKENIZER_CONFIG, indent=1) + "\n")
