"""ALBERT's SentencePiece tokenizer, in-graph (tf-text's SentencepieceTokenizer, which TF
Serving links), with the preprocessing of transformers' `AlbertTokenizer`.

Pipeline (all TF ops): whitespace runs -> one space and the ends stripped; `` and '' -> ";
(uncased) NFKD, marks removed, lower-case; then the SentencePiece model (its own normalization
rule included), and the pieces of equal-score ties put in transformers' order (`_order_ties`,
a `sentencepiece_ties.TieOrder`).
The same ids as `transformers.AlbertTokenizer` 5.x (tests/families/test_families.py), and with
`tokenize_with_offsets` / `tokenize_words_with_offsets` its `offset_mapping` and `word_ids()`
(tests/text/test_tokenizer_offsets.py).

Known deviations: Google's original (and transformers 4 "slow") tokenizer re-splits pieces
that end in digit + comma ("9,"); transformers 5 does not and neither do we. tokenizers'
Unicode tables are of Unicode 9: code points assigned later (marks such as U+07FD, letters
such as U+A7F2 or U+1CCD6) normalize differently. A run of a repeated root whose pieces cross
the root's boundaries ("hah" + "a" + ... in "hahahaha") can still come out in another order
than transformers' (see `_order_ties`). Offsets of a text that starts with a character the
charsmap deletes (U+0007, ...) are those of the text: transformers shifts all of that text's
offsets by the number of such characters (its Precompiled normalizer drops a deletion at the
start when it aligns), which we do not copy. Cased models: a letter + combining mark that the
charsmap composes spans the letter alone, as in transformers (`_composed_marks`: by NFKC of
the pair, not of a longer run of marks).

`XlmRobertaTokenizer` (xlm_roberta_tokenizer.py) is this class with fairseq's ids (the hooks
`_vocab_of`, `_set_special_ids`, `_ids_of_pieces`, `_pieces_of_ids`) and without ALBERT's quote
replacement (`pair_quotes`).

Speed (4,000 corpus lines in one tf.function batch, 2-core machine): `tokenize_with_offsets`
runs at about half the rate of `tokenize` (per-character normalization of the distinct
characters, tf-text's offsets op); use it only where offsets are needed.

Example:
>>> import pathlib
>>> path = pathlib.Path(__file__).parents[2] / "tests" / "fixtures" / "families" / "albert"
>>> tok = SentencePieceTokenizer.from_pretrained(str(path))  # doctest: +SKIP
>>> tok.tokenize(["In the beginning"]).to_list()  # doctest: +SKIP
[[13, 6, 25, 98, 91, 16]]
"""

import json
import os

import tensorflow as tf
import tensorflow_text as tf_text

from bert_keras.errors import InputError
from bert_keras.files import read_json
from bert_keras.text.packing import without_ids
from bert_keras.text.sentencepiece_model import load_model
from bert_keras.text.sentencepiece_ties import TieOrder
from bert_keras.text.vocab import Tokens
from bert_keras.text.words import group_words

MODEL_FILE = "spiece.model"
# Whitespace that splits words in transformers (Rust's char::is_whitespace, which the Precompiled
# charsmap extends with the zero-width and BOM characters itself). Not \x1c-\x1f, which Python's
# str.split() splits on but tokenizers' charsmap deletes ("a\x1cb" is the one word "ab").
_SPACES = r"[\s\p{Z}\x{85}]+"
# What tokenizers' StripAccents removes after NFKD: every mark (Mn, Mc, Me) of its Unicode 9
# tables, where U+1CF2-U+1CF3 were still marks; not only \p{Mn} (Indic vowel signs are Mc).
# Marks added after Unicode 9 (N'Ko U+07FD, Sinhala U+0D81, ...) it keeps and we remove.
_MARKS = r"[\p{M}\x{1CF2}\x{1CF3}]"
_PAIR_QUOTES = "``|''"  # -> '"' (transformers' Replace normalizers)
# In the offsets path `` and '' become "\x01" + '"' (the same bytes, so the same offsets): the
# '"' keeps the second character's span, as transformers aligns it, and "\x01" is deleted.
_PAIR_QUOTE_MARK = "\x01\""


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
      pair_type_ids: pack the second text of a pair as type 1 (Google's ALBERT); False packs
        every token as type 0, as transformers 5's ALBERT tokenizer does (it sends no
        token_type_ids), which is how checkpoints fine-tuned with it were trained.
    """

    def __init__(self, model_file, lower_case=True, pair_type_ids=True):
        super().__init__(name="sentencepiece_tokenizer")
        self.vocab_file = os.fspath(model_file)
        with tf.io.gfile.GFile(self.vocab_file, "rb") as f:
            model = f.read()
        self.lower_case = bool(lower_case)
        self.pair_type_ids = bool(pair_type_ids)
        self._sp, num_pieces = load_model(model, self.vocab_file)
        pieces = [t.decode("utf-8") for t in
                  self._sp.id_to_string(tf.range(num_pieces)).numpy().tolist()]
        self._vocab = Tokens(self._vocab_of(pieces))
        self.vocab_size = len(self._vocab)
        self._set_special_ids(pieces)
        # Indexed by the model's piece ids (`_ids_of_pieces` maps them to ours afterwards).
        self._starts_word = tf.constant([t.startswith(self.word_start_marker) for t in pieces])
        # `_order_ties(ids[, begins, ends])`: equal-score ties in transformers' order.
        self._order_ties = TieOrder(pieces, self.word_start_marker)

    def _vocab_of(self, pieces):
        """Our vocabulary (id -> token) from the model's pieces: the same list here."""
        return pieces

    def _set_special_ids(self, pieces):
        """The special-token ids, from the pieces; InputError naming the file if one lacks."""
        index = self._vocab.first_id
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>") if t not in index]
        if missing:
            raise InputError(f"SentencePiece model {self.vocab_file!r} lacks ALBERT's special "
                             f"tokens {missing}.")
        self.cls_id, self.sep_id, self.mask_id = index["[CLS]"], index["[SEP]"], index["[MASK]"]
        self.pad_id, self.unk_id = index["<pad>"], index["<unk>"]

    def _ids_of_pieces(self, piece_ids):
        """The model's piece ids (ragged) -> our ids: the same here."""
        return piece_ids

    def _pieces_of_ids(self, ids):
        """Our ids without special tokens (ragged int32) -> the model's piece ids."""
        return ids

    @property
    def vocab(self):
        return list(self._vocab)

    @classmethod
    def from_pretrained(cls, path):
        """The tokenizer of a checkpoint directory: its spiece.model (`find_model_file`), and
        from tokenizer_config.json the casing (`do_lower_case`, default True as in ALBERT) and
        whether pairs get type ids: `model_input_names` when it says, else none in a
        transformers directory (it names a `tokenizer_class`; transformers 5 sends none),
        else types 0 and 1 as Google's ALBERT."""
        config = {}
        config_file = os.path.join(path, "tokenizer_config.json")
        if tf.io.gfile.exists(config_file):
            config = read_json(config_file)
        if "model_input_names" in config:
            pair_type_ids = "token_type_ids" in config["model_input_names"]
        else:
            pair_type_ids = "tokenizer_class" not in config
        model_file = find_model_file(path)
        if model_file is None:
            raise FileNotFoundError(f"{path} has no {MODEL_FILE} (nor a single *.model file).")
        return cls(model_file, lower_case=bool(config.get("do_lower_case", True)),
                   pair_type_ids=pair_type_ids)

    @property
    def asset_files(self):
        """{name in an export's assets/: file} of the files that define this tokenizer."""
        return {MODEL_FILE: self.vocab_file}

    separators_between = 1  # [CLS] A [SEP] B [SEP]
    word_start_marker = "\u2581"  # "▁the": pieces that start a word (whole-word masking)
    pair_quotes = True  # `` and '' -> " first (ALBERT's normalizer, not in the model file)
    spaces = _SPACES  # the whitespace runs that become one space before the model

    def save(self, directory):
        """Writes spiece.model, the casing and the type ids of pairs (tokenizer_config.json,
        in transformers' words) to `directory`."""
        tf.io.gfile.copy(self.vocab_file, os.path.join(directory, MODEL_FILE), True)
        inputs = ["input_ids"] + ["token_type_ids"] * self.pair_type_ids + ["attention_mask"]
        with tf.io.gfile.GFile(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": self.lower_case, "model_input_names": inputs}, f)

    def normalize(self, texts):
        if not self.lower_case:
            # Bytes that are not UTF-8 -> U+FFFD, one per maximal bad sequence (Python's
            # decode(errors="replace"), as `_pieces_with_offsets` splits them); in uncased
            # models the NFKD of `_fold` does it.
            texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
        # Some string ops read C strings, where a NUL ends the text. A private-use character
        # is, like NUL, one unknown piece to SentencePiece.
        texts = tf.strings.regex_replace(texts, r"\x{0}", "\uE000")
        texts = tf.strings.strip(tf.strings.regex_replace(texts, self.spaces, " "))
        if self.pair_quotes:
            texts = tf.strings.regex_replace(texts, _PAIR_QUOTES, '"')
        return self._fold(texts)

    def _fold(self, texts):
        """Uncased models: NFKD, marks removed, lower-case."""
        if self.lower_case:
            texts = tf_text.normalize_utf8(texts, "NFKD")
            texts = tf.strings.regex_replace(texts, _MARKS, "")
            texts = tf.strings.lower(texts, encoding="utf-8")
        return texts

    def _normalize_chars(self, chars):
        """`normalize` of single characters (each whitespace character -> one space, nothing
        stripped: SentencePiece collapses the spaces of the joined text as `normalize` does)."""
        chars = tf.strings.regex_replace(chars, r"\x{0}", "\uE000")
        chars = tf.strings.regex_replace(chars, self.spaces, " ")
        if self.pair_quotes:
            chars = tf.strings.regex_replace(chars, r"\x{1}", "")  # _PAIR_QUOTE_MARK's first
        if not self.lower_case:
            # The model's charsmap (NFKC) expands characters ("ﬁ" -> "fi", "ǌ" -> "nj"); done
            # here, a piece that ends inside one still maps back to it. Marks are left to the
            # charsmap, which composes them with the character before.
            return tf.where(tf.strings.regex_full_match(chars, _MARKS), chars,
                            tf_text.normalize_utf8(chars, "NFKC"))
        return self._fold(chars)

    def tokenize(self, texts):
        """Texts (str, list or string tensor [B]) -> ids int32 [B, (pieces)], no special tokens."""
        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank == 0:
            return self.tokenize(tf.reshape(texts, [1]))[0]
        return self._ids_of_pieces(self._order_ties(self._sp.tokenize(self.normalize(texts))))

    def _pieces_with_offsets(self, texts):
        """texts [B] -> ids, starts, ends, is_start: ragged [B, (pieces)]; `tokenize`'s ids,
        UTF-8 byte offsets into `texts` and whether each piece starts a word ("▁").

        Normalizes character by character, so that each normalized byte maps back to its
        source character, and tokenizes the joined text with tf-text's SentencePiece, whose
        offsets are bytes of that text. A source character is "content" if SentencePiece keeps
        something of it (not a space, not a character its charsmap deletes such as U+0007); a
        piece spans the content characters from its first to its last byte, as in transformers:
        a piece starting with "▁" starts at its word's first content character, and a lone "▁"
        gets that character's span (transformers aligns the "▁" it prepends to that character).
        """
        marked = (tf.strings.regex_replace(texts, _PAIR_QUOTES, _PAIR_QUOTE_MARK)
                  if self.pair_quotes else texts)
        chars, char_starts = tf.strings.unicode_split_with_offsets(
            marked, "UTF-8", errors="replace", replacement_char=0xFFFD)
        flat_starts = char_starts.flat_values  # (C,) int64: each character's first byte
        char_row = chars.value_rowids()
        is_last = (tf.range(tf.size(flat_starts, out_type=tf.int64))
                   == tf.gather(chars.row_limits(), char_row) - 1)
        text_bytes = tf.cast(tf.strings.length(texts), tf.int64)
        flat_ends = tf.where(is_last, tf.gather(text_bytes, char_row),
                             tf.concat([flat_starts[1:], tf.zeros_like(flat_starts[:1])], 0))
        # Each distinct character once: its normalized text and whether it is content.
        unique, index = tf.unique(chars.flat_values)
        unique_norm = self._normalize_chars(unique)
        unique_content = self._sp.tokenize(unique_norm).row_lengths() > 0
        norm = tf.gather(unique_norm, index)
        norm_bytes = tf.strings.length(norm)
        normalized = tf.strings.reduce_join(chars.with_flat_values(norm), axis=-1)
        char_of_byte = tf.repeat(tf.range(tf.size(norm_bytes)), norm_bytes)
        content = tf.gather(unique_content, index)  # (C,)
        if not self.lower_case:  # (uncased models drop every mark before the model's charsmap)
            is_first = tf.range(tf.size(flat_starts, out_type=tf.int64)) == tf.gather(
                chars.row_starts(), char_row)
            content &= ~_composed_marks(chars.flat_values, is_first)
        content_bytes = tf.where(tf.repeat(content, norm_bytes))[:, 0]
        row_bytes = tf.cast(tf.strings.length(normalized), tf.int64)
        row_base = tf.cumsum(row_bytes, exclusive=True)

        ids, begins, ends = self._sp.tokenize_with_offsets(normalized)
        ids, begins, ends = self._order_ties(ids, begins, ends)
        piece_row = ids.value_rowids()
        base = tf.gather(row_base, piece_row)
        begin, end = begins.flat_values + base, ends.flat_values + base
        row_end = base + tf.gather(row_bytes, piece_row)
        # First content byte at or after the piece's begin (in its row), last one before its end.
        after = tf.gather(tf.concat([content_bytes, tf.constant([tf.int64.max], tf.int64)], 0),
                          tf.searchsorted(content_bytes, begin, side="left", out_type=tf.int64))
        first = tf.where(after < row_end, after, begin)
        before = tf.gather(tf.concat([tf.constant([-1], tf.int64), content_bytes], 0),
                           tf.searchsorted(content_bytes, end, side="left", out_type=tf.int64))
        last = tf.maximum(before, first)
        starts = tf.gather(flat_starts, tf.gather(char_of_byte, first))
        ends = tf.gather(flat_ends, tf.gather(char_of_byte, last))
        is_start = tf.gather(self._starts_word, ids.flat_values)
        ids = self._ids_of_pieces(ids)
        return (ids, ids.with_flat_values(tf.cast(starts, tf.int32)),
                ids.with_flat_values(tf.cast(ends, tf.int32)), ids.with_flat_values(is_start))

    def tokenize_with_offsets(self, texts):
        """Texts [B] (or a scalar) -> (ids, starts, ends), int32 ragged [B, (pieces)]: the ids
        of `tokenize` and UTF-8 byte offsets into the original texts (end exclusive), on
        character boundaries: transformers' `offset_mapping` (AlbertTokenizer) in bytes."""
        texts, scalar = _as_batch(texts)
        ids, starts, ends, _ = self._pieces_with_offsets(texts)
        return (ids[0], starts[0], ends[0]) if scalar else (ids, starts, ends)

    def tokenize_words_with_offsets(self, texts):
        """Texts [B] (or a scalar) -> (ids, starts, ends), int32 ragged [B, (words), (pieces)]:
        `tokenize_with_offsets` grouped into transformers' words (`word_ids()`: whitespace-
        separated words; a piece starting with "▁" starts a word)."""
        texts, scalar = _as_batch(texts)
        ids, starts, ends, is_start = self._pieces_with_offsets(texts)
        words = group_words(is_start, ids, starts, ends)
        return tuple(w[0] for w in words) if scalar else words

    def detokenize(self, ids):
        """Ids [B, (pieces)] -> text [B] (special tokens dropped)."""
        ids = without_ids(ids, (self.pad_id, self.cls_id, self.sep_id, self.mask_id))
        return self._sp.detokenize(self._pieces_of_ids(ids))

    def __call__(self, texts):
        return self.tokenize(texts)


def _as_batch(texts):
    """str / list[str] / string tensor [B] or scalar -> (tensor [B], was_scalar)."""
    texts = tf.convert_to_tensor(texts, tf.string)
    if texts.shape.rank == 0:
        return tf.reshape(texts, [1]), True
    return texts, False


def _composed_marks(chars, is_first):
    """chars [C] (one character each), is_first [C] (the first of its text) -> bool [C]: the
    combining marks that NFKC composes with the character before ("e" + U+0301 -> "é"). The
    model's charsmap composes them too, and transformers aligns the composed character with the
    first one only: such a mark is no "content" of a piece's span."""
    prev = tf.concat([tf.constant([""]), chars[:-1]], 0)
    candidate = tf.strings.regex_full_match(chars, _MARKS) & ~is_first
    position = tf.where(candidate)  # (M, 1)
    mark, before = tf.gather_nd(chars, position), tf.gather_nd(prev, position)
    size = lambda t: tf.strings.length(tf_text.normalize_utf8(t, "NFKC"),  # noqa: E731
                                       unit="UTF8_CHAR")
    composed = size(tf.strings.join([before, mark])) < size(before) + size(mark)
    return tf.scatter_nd(position, composed, tf.shape(chars, out_type=tf.int64))
