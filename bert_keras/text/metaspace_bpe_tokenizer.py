"""Gemma-style BPE (mmBERT's `tokenizer.json`), in-graph with core TF ops: the added tokens
(<mask>, <bos>, ...) are cut out of the text first, each one piece, as transformers matches
them (leftmost, the longest first); each stretch between them is one word (Gemma's
pre-tokenizer `Split(" ")` finds no space left after the normalizer `Replace(" ", "▁")`), its
characters the first symbols (a character not in the vocab: its UTF-8 bytes as the pieces
`<0xXX>`, byte fallback), then the merges, lowest rank first, as `ByteBpeTokenizer._merge`
applies them (transformers' order). U+E001 (private use) in a text cuts it too.

Speed: where no merge makes a piece with "▁" after another character (Gemma's vocabulary,
trained with split_by_whitespace), no merge crosses the place before a "▁" that follows
another character, so a word is merged in parts cut there: the same pieces, but the parts
repeat across texts (each distinct one merged once) and the merge loop runs as many steps as
the longest part needs, not the whole text.

`tokenizer_json.convert` writes such a tokenizer.json as `vocab.json`, `merges.txt` (only its
`#version` line: a merge piece may hold a line break, which that format cannot) and
`metaspace_bpe.json` (the merges as pairs and the special tokens of the post-processor's
template and tokenizer_config.json); `settings` reads and checks the tokenizer.json.

Offsets: a piece's UTF-8 byte span in the original text (a "▁" is the space it replaced; a
byte piece gets its whole character's span, as transformers gives it); words are
transformers' `word_ids()`: each stretch between added tokens one word, each added token one.
"""

import json
import os
import re

import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.files import read_json
from bert_keras.text.byte_bpe_tokenizer import (
    CUT_MARK,
    MERGES_FILE,
    NO_RANK,
    VOCAB_FILE,
    ModernBertTokenizer,
    char_spans,
    read_vocab_json,
)
from bert_keras.text.packing import keep_values, without_ids
from bert_keras.text.vocab import Tokens

SETTINGS_FILE = "metaspace_bpe.json"
SPACE = "\u2581"
_BYTE_PIECE = "<0x[0-9A-F]{2}>"


def _template_specials(processor, source):
    """(cls, sep) of a TemplateProcessing post-processor `[cls] $A [sep]` whose pair is
    `[cls] $A [sep] $B [sep]`; InputError otherwise."""
    def items(name):
        return [next(iter(item.values())).get("id") if isinstance(item, dict) else None
                for item in processor.get(name) or []]
    single, pair = items("single"), items("pair")
    if (not isinstance(processor, dict) or processor.get("type") != "TemplateProcessing"
            or len(single) != 3 or single[1] != "A"
            or pair != [single[0], "A", single[2], "B", single[2]]):
        raise InputError(f"{source}: its post_processor is not a template [CLS] $A [SEP] with "
                         "pairs [CLS] $A [SEP] $B [SEP], the packing this tokenizer reads.")
    return single[0], single[2]


def _token(config, key):
    value = config.get(key)
    return value.get("content") if isinstance(value, dict) else value


def settings(spec, model, config, source, merges):
    """The contents of metaspace_bpe.json for a Gemma-style tokenizer.json `spec` (its `model`,
    tokenizer_config.json's dict `config`, the merges as pairs); InputError naming `source`
    for what this tokenizer does not compute."""
    normalizer, pre = spec.get("normalizer"), spec.get("pre_tokenizer")
    if normalizer != {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}:
        raise InputError(f"{source}: a BPE model with byte_fallback whose normalizer is not "
                         f"Replace(' ' -> '{SPACE}') (Gemma's); only that one is read.")
    if pre is not None and not (isinstance(pre, dict) and pre.get("type") == "Split"
                                and pre.get("pattern") == {"String": " "}
                                and not pre.get("invert")):
        kind = pre.get("type") if isinstance(pre, dict) else pre
        raise InputError(f"{source}: a Gemma-style BPE whose pre_tokenizer is {kind!r}; only none "
                         "or Split(' ') (Gemma's: the whole text one word) is read.")
    for key in ("continuing_subword_prefix", "end_of_word_suffix", "dropout", "ignore_merges"):
        if model.get(key):
            raise InputError(f"{source}: model.{key} is {model[key]!r}; Gemma-style BPE has none.")
    cls, sep = _template_specials(spec.get("post_processor") or {}, source)
    specials = dict(cls=cls, sep=sep, pad=_token(config, "pad_token"),
                    unk=model.get("unk_token"), mask=_token(config, "mask_token"))
    missing = sorted(role for role, token in specials.items() if not isinstance(token, str))
    if missing:
        raise InputError(f"{source}: no {', '.join(missing)} token (the post-processor's "
                         "template, tokenizer_config.json's pad_token / mask_token and "
                         "model.unk_token name them).")
    added = []
    for entry in spec.get("added_tokens") or []:
        content = entry.get("content") if isinstance(entry, dict) else None
        flags = [k for k in ("lstrip", "rstrip", "single_word", "normalized") if entry.get(k)]
        if not isinstance(content, str) or not content or flags or any(
                c in content for c in (" ", SPACE, CUT_MARK)):
            raise InputError(f"{source}: added_tokens has {str(entry)[:80]}; only added tokens "
                             "without spaces and without lstrip, rstrip, single_word or "
                             "normalized are read.")
        added.append(content)
    return {"merges": merges, "special_tokens": specials, "added_tokens": added,
            "byte_fallback": True}


class MetaspaceBpeTokenizer(ModernBertTokenizer):
    """Gemma-style BPE with byte fallback (mmBERT's tokenizer.json, converted by
    `tokenizer_json.convert`), packed `[CLS] A [SEP] B [SEP]` with the template's tokens.

    Example:
    >>> import pathlib
    >>> from bert_keras.text import tokenizer_json
    >>> path = (pathlib.Path(__file__).parents[2] / "tests" / "fixtures"
    ...         / "modernbert_gemma_tokenizer_json")
    >>> tok = MetaspaceBpeTokenizer.from_pretrained(tokenizer_json.convert(str(path)))
    >>> tok.cls_id, tok.sep_id, tok.detokenize(tok.tokenize(["Héllo  🦄"])).numpy()
    (2, 1, array([b'H\\xc3\\xa9llo  \\xf0\\x9f\\xa6\\x84'], dtype=object))
    """

    word_start_marker = SPACE
    family = "ModernBERT (Gemma-style tokenizer.json)"

    @property
    def asset_files(self):
        return {VOCAB_FILE: self.vocab_file, MERGES_FILE: self.merges_file,
                SETTINGS_FILE: self.settings_file}

    def __init__(self, vocab_file, merges_file, settings_file):
        tf.Module.__init__(self, name="metaspace_bpe_tokenizer")
        self.vocab_file, self.merges_file = os.fspath(vocab_file), os.fspath(merges_file)
        self.settings_file = os.fspath(settings_file)
        index = read_vocab_json(self.vocab_file)
        found = read_json(self.settings_file)
        self.special_tokens = found["special_tokens"]
        missing = [t for t in self.special_tokens.values() if t not in index]
        absent_bytes = [f"<0x{b:02X}>" for b in range(256) if f"<0x{b:02X}>" not in index]
        if missing or absent_bytes:
            raise InputError(f"{self.vocab_file} lacks the special tokens {missing} or the byte "
                             f"pieces {absent_bytes[:3]} of its {SETTINGS_FILE}.")
        merges = [f"{a} {b}" for a, b in found["merges"]]
        self._cut_at_spaces = not any(re.search(f"[^{SPACE}]{SPACE}", a + b)
                                      for a, b in found["merges"])
        added = sorted(found.get("added_tokens") or [], key=len, reverse=True)  # longest first
        absent = [t for t in added if t not in index]
        if absent:
            raise InputError(f"{self.vocab_file} lacks the added tokens {absent[:3]} of its "
                             f"{SETTINGS_FILE}.")
        # RE2 tries alternatives in order: the longest of those starting at a place wins.
        self._added_pattern = "|".join(_escape(t) for t in added) or None
        self._added = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(added + [CUT_MARK], tf.string), tf.ones(len(added) + 1, tf.bool)),
            default_value=False)
        self._vocab = Tokens(sorted(index, key=index.get))
        self.vocab_size = len(self._vocab)
        for role in ("cls", "sep", "pad", "unk", "mask"):
            setattr(self, f"{role}_id", index[self.special_tokens[role]])
        self._tokens = tf.constant(list(self._vocab))
        self._ranks = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(merges, tf.string), tf.range(len(merges), dtype=tf.int32)),
            default_value=NO_RANK)
        self._ids = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(index)), tf.constant(list(index.values()), tf.int32)),
            default_value=self.unk_id)
        byte_pieces = tf.constant([f"<0x{b:02X}>" for b in range(256)])
        byte_strings = tf.constant([bytes([b]) for b in range(256)])
        self._byte_piece = tf.lookup.StaticHashTable(  # byte -> "<0xXX>", and back
            tf.lookup.KeyValueTensorInitializer(byte_strings, byte_pieces), default_value="")
        self._piece_byte = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(byte_pieces, byte_strings), default_value="")

    @classmethod
    def from_pretrained(cls, path):
        return cls(*(os.path.join(path, name) for name in (VOCAB_FILE, MERGES_FILE,
                                                            SETTINGS_FILE)))

    def save(self, directory):
        for name, source in self.asset_files.items():
            tf.io.gfile.copy(source, os.path.join(directory, name), True)

    def pre_tokenize(self, texts):
        """Texts [B] -> words [B, (W)]: the added tokens, and the normalized stretches between
        them."""
        if self._added_pattern is None:
            words = tf.RaggedTensor.from_tensor(tf.expand_dims(texts, 1))
        else:
            words = tf.strings.split(tf.strings.regex_replace(
                texts, self._added_pattern, rf"{CUT_MARK}\0{CUT_MARK}"), CUT_MARK)
        words = words.with_flat_values(tf.strings.regex_replace(words.flat_values, " ", SPACE))
        return keep_values(words, tf.strings.length(words.flat_values) > 0)

    def _known(self, chars):
        return self._ids.lookup(chars) != self.unk_id

    def _symbols(self, chars):
        """Characters [C] -> their first symbols [C, (n)]: the character, or its byte pieces
        when the vocab lacks it."""
        known = self._known(chars)
        byte_strings = tf.strings.bytes_split(chars)  # (C, (bytes))
        pieces = byte_strings.with_flat_values(self._byte_piece.lookup(byte_strings.flat_values))
        both = tf.concat([tf.RaggedTensor.from_tensor(chars[:, None]), pieces], axis=1)
        keep = tf.concat([tf.RaggedTensor.from_tensor(known[:, None]), pieces.with_flat_values(
            tf.gather(~known, pieces.value_rowids()))], axis=1)
        return keep_values(both, keep.flat_values)

    def _bpe(self, texts):
        words = self.pre_tokenize(texts)  # (B, (W))
        flat = words.flat_values
        if self._cut_at_spaces:  # no merge crosses a cut: see the module's docstring
            parts = tf.strings.split(tf.strings.regex_replace(
                flat, f"([^{SPACE}]){SPACE}", rf"\1{CUT_MARK}{SPACE}"), CUT_MARK)  # (W, (k))
        else:
            parts = tf.RaggedTensor.from_tensor(flat[:, None])
        distinct, index = tf.unique(parts.flat_values)
        added = self._added.lookup(distinct)  # (U,) an added token: one symbol, never merged
        chars = tf.strings.unicode_split(tf.where(added, "", distinct), "UTF-8")  # (U, (C))
        per_char = self._symbols(chars.flat_values)  # (C, (n))
        symbols = tf.concat([keep_values(tf.RaggedTensor.from_tensor(distinct[:, None]), added),
                             tf.RaggedTensor.from_row_splits(per_char.flat_values, tf.gather(
                                 per_char.row_splits, chars.row_splits), validate=False)],
                            axis=1)  # (U, (S))
        merged = tf.gather(self._merge(symbols.flat_values, symbols.row_splits), index)
        return words, tf.RaggedTensor.from_row_splits(
            merged, parts.row_splits, validate=False).merge_dims(1, 2)  # (W, (pieces))

    def _pieces_with_offsets(self, texts):
        codes, char_starts, char_ends = char_spans(texts)
        valid = tf.strings.unicode_encode(codes, "UTF-8")
        words, merged = self._bpe(valid)
        # The words' characters are the text's but U+E001 (the cuts): where each one is.
        flat_codes = codes.flat_values
        kept = tf.boolean_mask(tf.range(tf.size(flat_codes)), flat_codes != ord(CUT_MARK))
        added = self._added.lookup(words.flat_values)  # (W,)
        chars = tf.strings.unicode_split(words.flat_values, "UTF-8")  # (W, (C))
        # Symbols of each character (1, or its bytes' pieces; 1 in an added token), and the
        # character of each symbol.
        count = tf.where(tf.gather(added, chars.value_rowids()), tf.constant(1, tf.int64),
                         self._symbols(chars.flat_values).row_lengths())
        char_of_symbol = tf.gather(kept, tf.repeat(tf.range(tf.size(count)),
                                                   tf.cast(count, tf.int32)))
        pieces = merged.flat_values
        size = tf.where(self._added.lookup(pieces), tf.strings.length(pieces, unit="UTF8_CHAR"),
                        tf.strings.length(tf.strings.regex_replace(pieces, _BYTE_PIECE, "#"),
                                          unit="UTF8_CHAR"))  # (P,) symbols
        limit = tf.cumsum(size)
        start = tf.gather(char_starts, tf.gather(char_of_symbol, limit - size))
        end = tf.gather(char_ends, tf.gather(char_of_symbol, limit - 1))
        is_start = tf.range(tf.size(size, out_type=tf.int64)) == tf.gather(
            merged.row_starts(), merged.value_rowids())
        splits = tf.gather(merged.row_splits, words.row_splits)
        ids = self._ids.lookup(pieces)
        return tuple(tf.RaggedTensor.from_row_splits(values, splits, validate=False)
                     for values in (ids, start, end, is_start))

    def detokenize(self, ids):
        """Ids [B, (pieces)] -> text [B] (special tokens dropped; "▁" a space, byte pieces
        their bytes, invalid UTF-8 replaced)."""
        ids = without_ids(ids, (self.cls_id, self.sep_id, self.pad_id, self.mask_id))
        pieces = tf.gather(self._tokens, ids.flat_values)
        raw = self._piece_byte.lookup(pieces)
        text = tf.where(raw != "", raw, tf.strings.regex_replace(pieces, SPACE, " "))
        joined = tf.strings.reduce_join(ids.with_flat_values(text), axis=-1)
        return tf.strings.unicode_transcode(joined, "UTF-8", "UTF-8", errors="replace")


def _escape(text):
    """`text` as an RE2 pattern that matches it literally."""
    return "".join(c if c.isalnum() else "\\" + c if c.isascii() else c for c in text)


def json_text(found):
    """metaspace_bpe.json's text for the dict `settings` returned."""
    return json.dumps(found, ensure_ascii=False) + "\n"
