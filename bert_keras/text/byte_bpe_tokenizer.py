"""RoBERTa's byte-level BPE tokenizer (GPT-2's), in-graph with core TF ops that TF Serving
has: no Python callbacks, no lookahead regex.

Pipeline: (1) GPT-2's pre-tokenization regex
`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+` with RE2,
which has no lookahead: a marker is put before the last character of every whitespace run that a
non-space follows, so `\\s+` stops there (what `\\s+(?!\\S)` does), and the text is cut
before every match, the markers dropped; (2) every UTF-8 byte of a piece mapped to GPT-2's
printable character (`bytes_to_unicode`); (3) the BPE merges, lowest rank first, all
non-overlapping occurrences left to right, every distinct piece of the batch in parallel in
one `tf.while_loop` that a piece leaves when it has nothing left to merge; (4) vocab ids.
`\\s` is Unicode whitespace (White_Space), spelled out (RE2's `\\s` is ASCII only).

`tokenize_with_offsets` also gives each piece's UTF-8 byte span in the original text, as
transformers' fast tokenizer does (`offset_mapping`, in bytes): spans aligned to whole
characters, a piece's leading and trailing spaces trimmed off (ByteLevel's trim_offsets).
The pre-tokens (with their marker dropped) tile the text in order and the BPE pieces tile the
pre-tokens, so a running sum of piece sizes places every piece in the text.
`tokenize_words_with_offsets` groups them by pre-token, transformers' `word_ids()`.

Shape legend: B texts, W pieces (words) of the batch, S symbols of the batch, C characters
of the batch, P BPE pieces of the batch.
"""

import os

import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.files import read_json
from bert_keras.text.packing import keep_values, without_ids
from bert_keras.text.vocab import Tokens
from bert_keras.text.words import group_words

VOCAB_FILE, MERGES_FILE = "vocab.json", "merges.txt"
# `regex`'s \s (Unicode White_Space), which GPT-2 and tokenizers use: not \x1c-\x1f, which
# Python's `re` \s and str.isspace() also have.
_WS = r"\t\n\x{0b}\f\r\x{85}\p{Z}"
CUT_MARK = "\uE001"  # a private-use character: never in text that matters, never a piece
_PIECES = (rf"'s|'t|'re|'ve|'m|'ll|'d| ?\p{{L}}+| ?\p{{N}}+| ?[^{_WS}\p{{L}}\p{{N}}{CUT_MARK}]+"
           rf"|[{_WS}]+")
NO_RANK = 2 ** 30
_SPACE = "\u0120"  # GPT-2's character for the byte of " "


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters (byte -> str)."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars = {b: chr(b) for b in printable}
    n = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + n)
            n += 1
    return chars


def read_vocab_json(path):
    """{token: id} of a vocab.json; InputError naming the file unless it is a JSON object of
    strings to the ids 0..n-1, each id once (the id is a row of the embedding)."""
    index = read_json(path)
    token_of = {}  # id -> token
    for token, token_id in index.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool):
            raise InputError(f"{path}: the id of {token!r} is {token_id!r}, not an integer.")
        if token_id in token_of:
            raise InputError(f"{path}: {token_of[token_id]!r} and {token!r} both have the id "
                             f"{token_id}; each id must belong to one token.")
        token_of[token_id] = token
    outside = sorted(i for i in token_of if not 0 <= i < len(index))
    if outside:
        absent = next(i for i in range(len(index)) if i not in token_of)
        raise InputError(f"{path}: its {len(index):,} tokens must have the ids "
                         f"0..{len(index) - 1}, but {token_of[outside[0]]!r} has the id "
                         f"{outside[0]} and no token has the id {absent}.")
    return index


def read_merges(path, index, vocab_path):
    """The merges of merges.txt in rank order ("a b": merge a and b), each checked: two pieces
    separated by one space, not seen before, the pieces and their merge in `index` (the
    vocab of `vocab_path`). `#version` lines (tokenizers' header) and blank lines are skipped.
    InputError naming the file and the line otherwise, or when there is no merge at all."""
    lines = _text_lines(path)
    merges, line_of = [], {}
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#version"):
            continue
        left, _, right = line.partition(" ")
        if not left or not right or " " in right:
            cut = " (the file is cut short?)" if number == len(lines) else ""
            raise InputError(f"{path}: line {number} is {line!r}, not a merge (two pieces "
                             f"separated by one space){cut}.")
        if line in line_of:
            raise InputError(f"{path}: the merge {line!r} is on line {line_of[line]} and again "
                             f"on line {number}.")
        for piece in (left, right, left + right):
            if piece not in index:
                raise InputError(f"{path}: line {number} merges {left!r} and {right!r}, but "
                                 f"{piece!r} is not in {vocab_path}.")
        line_of[line] = number
        merges.append(line)
    if not merges:
        raise InputError(f"{path} holds no merges (it is empty or has only a #version line).")
    return merges


def _text_lines(path):
    """The lines of UTF-8 text file `path`, newlines (\\n or \\r\\n) removed."""
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not UTF-8 text ({e.reason} at byte {e.start}).") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def char_spans(texts):
    """Texts [B] -> (codes [B, (C)], starts [C], ends [C]): the characters of the texts, bad
    bytes replaced (what unicode_transcode does), with their original UTF-8 byte spans (int32);
    re-encoded, the codes are the text `tokenize` reads."""
    codes, char_starts = tf.strings.unicode_decode_with_offsets(
        texts, "UTF-8", errors="replace")  # (B, (C))
    char_starts = tf.cast(char_starts.flat_values, tf.int32)
    char_rows = codes.value_rowids()
    last = tf.range(tf.size(char_rows, out_type=tf.int64)) == tf.gather(
        codes.row_limits() - 1, char_rows)
    char_ends = tf.where(last, tf.gather(tf.strings.length(texts), char_rows),
                         tf.concat([char_starts[1:], char_starts[:1]], 0))  # next start
    return codes, char_starts, char_ends


class ByteBpeTokenizer(tf.Module):
    """Byte-level BPE from `vocab.json` + `merges.txt` (RoBERTa, GPT-2), special tokens
    <s> </s> <pad> <unk> <mask>.

    Example:
    >>> import pathlib
    >>> path = pathlib.Path(__file__).parents[2] / "tests" / "fixtures" / "families" / "roberta"
    >>> tok = ByteBpeTokenizer.from_pretrained(str(path))  # doctest: +SKIP
    >>> tok.tokenize(["Hello there"]).to_list()  # doctest: +SKIP
    """

    @property
    def asset_files(self):
        """{name in an export's assets/: file} of the files that define this tokenizer."""
        return {VOCAB_FILE: self.vocab_file, MERGES_FILE: self.merges_file}

    separators_between = 2  # <s> A </s></s> B </s>
    # RoBERTa's post-processor trims each piece's spans of its spaces (ByteLevel's
    # trim_offsets); ModernBERT's (a template) leaves them, leading space included.
    trim_offsets = True
    # The special tokens by role, and the family that names them (for messages).
    special_tokens = dict(cls="<s>", sep="</s>", pad="<pad>", unk="<unk>", mask="<mask>")
    family = "RoBERTa"
    pair_type_ids = False  # one token type (transformers sends no token_type_ids)
    word_start_marker = "\u0120"  # "Ġthe": pieces that start a word (whole-word masking)
    lower_case = False

    def __init__(self, vocab_file, merges_file):
        super().__init__(name="byte_bpe_tokenizer")
        self.vocab_file, self.merges_file = os.fspath(vocab_file), os.fspath(merges_file)
        index = read_vocab_json(self.vocab_file)
        merges = read_merges(self.merges_file, index, self.vocab_file)
        self._vocab = Tokens(sorted(index, key=index.get))
        self.vocab_size = len(self._vocab)
        specials = self.special_tokens
        missing = [t for t in specials.values() if t not in index]
        if missing:
            raise InputError(f"{self.vocab_file} lacks {self.family}'s special tokens "
                             f"{missing}.")
        self.cls_id, self.sep_id = index[specials["cls"]], index[specials["sep"]]
        self.pad_id, self.unk_id = index[specials["pad"]], index[specials["unk"]]
        self.mask_id = index[specials["mask"]]
        byte_strings = tf.constant([bytes([b]) for b in range(256)])
        table = bytes_to_unicode()
        char_strings = tf.constant([table[b].encode("utf-8") for b in range(256)])
        self._byte_chars = tf.lookup.StaticHashTable(  # byte -> GPT-2 character, and back
            tf.lookup.KeyValueTensorInitializer(byte_strings, char_strings), default_value="")
        self._char_bytes = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(char_strings, byte_strings), default_value="")
        self._tokens = tf.constant(list(self._vocab))
        self._ranks = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(merges), tf.range(len(merges), dtype=tf.int32)), default_value=NO_RANK)
        self._ids = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(index)), tf.constant(list(index.values()), tf.int32)),
            default_value=self.unk_id)

    @property
    def vocab(self):
        return list(self._vocab)

    @classmethod
    def from_pretrained(cls, path):
        return cls(os.path.join(path, VOCAB_FILE), os.path.join(path, MERGES_FILE))

    def save(self, directory):
        for source in (self.vocab_file, self.merges_file):
            tf.io.gfile.copy(source, os.path.join(directory, os.path.basename(source)), True)

    def pre_tokenize(self, texts):
        """Texts [B] -> GPT-2's pieces [B, (W)] (strings)."""
        # \s+(?!\S): a run of whitespace that a non-space follows gives up its last character.
        marked = tf.strings.regex_replace(texts, rf"([{_WS}]+)([{_WS}][^{_WS}])",
                                          rf"\1{CUT_MARK}\2")
        # A CUT_MARK before every piece (no piece holds one), then the text cut at the marks:
        # a whole-match rewrite runs RE2's DFA, ~10x faster than tf_text.regex_split.
        parts = tf.strings.split(tf.strings.regex_replace(marked, _PIECES, rf"{CUT_MARK}\0"),
                                 CUT_MARK)
        return keep_values(parts, tf.strings.length(parts.flat_values) > 0)  # (B, (W))

    def tokenize(self, texts):
        """Texts (str, list or string tensor [B]) -> ids int32 [B, (pieces)], no special tokens."""
        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank == 0:
            return self.tokenize(tf.reshape(texts, [1]))[0]
        texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
        words, merged = self._bpe(texts)
        ids = merged.with_flat_values(self._ids.lookup(merged.flat_values))
        return tf.RaggedTensor.from_row_splits(ids, words.row_splits,
                                               validate=False).merge_dims(1, 2)

    def tokenize_with_offsets(self, texts):
        """Texts (str, list or string tensor [B]) -> (ids, starts, ends), int32 ragged
        [B, (pieces)]: ids as `tokenize`'s; starts/ends UTF-8 byte offsets into the original
        texts (end exclusive), e.g. for span QA and tagging.

        The offsets are transformers' (ByteLevel, trim_offsets=True, add_prefix_space=False):
        a piece's span is aligned to whole characters (a piece with only some bytes of a
        character gets that character's span, so several pieces can share one), then the
        piece's leading and trailing spaces ("Ġ") are trimmed off, so a piece that is only
        spaces gets an empty span at the byte after them (not with `trim_offsets` False:
        ModernBERT's spans keep a piece's spaces). Bytes that are not valid UTF-8 are
        replaced before tokenizing (as `tokenize` does); a replacement character's span is
        the bytes it replaced.
        """
        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank == 0:
            return tuple(t[0] for t in self.tokenize_with_offsets(tf.reshape(texts, [1])))
        ids, starts, ends, _ = self._pieces_with_offsets(texts)
        return ids, starts, ends

    def tokenize_words_with_offsets(self, texts):
        """Texts (str, list or string tensor [B]) -> (ids, starts, ends), int32 ragged
        [B, (words), (pieces)]: the words are GPT-2's pre-tokens (`pre_tokenize`'s pieces, as
        transformers' `word_ids()` numbers them), the pieces and byte offsets those of
        `tokenize_with_offsets`."""
        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank == 0:
            words = self.tokenize_words_with_offsets(tf.reshape(texts, [1]))
            return tuple(w[0] for w in words)
        ids, starts, ends, is_start = self._pieces_with_offsets(texts)
        return group_words(is_start, ids, starts, ends)

    def _bpe(self, texts):
        """Valid UTF-8 texts [B] -> (pre-tokens [B, (W)], BPE pieces [W, (pieces)]), the pieces
        strings of GPT-2 characters (one a byte)."""
        words = self.pre_tokenize(texts)  # (B, (W))
        # Text repeats its words (Zipf): each distinct pre-token of the batch is merged once.
        distinct, index = tf.unique(words.flat_values)
        chars = tf.strings.bytes_split(distinct)  # (U, (bytes))
        symbols = chars.with_flat_values(self._byte_chars.lookup(chars.flat_values))
        merged = self._merge(symbols.flat_values, symbols.row_splits)  # (U, (pieces))
        return words, tf.gather(merged, index)  # (W, (pieces))

    def _pieces_with_offsets(self, texts):
        """Texts [B] -> (ids, starts, ends, is_start) ragged [B, (pieces)]: int32 ids and
        original byte offsets (`tokenize_with_offsets`), and whether a piece starts a word."""
        codes, char_starts, char_ends = char_spans(texts)
        flat_codes = codes.flat_values
        char_size = (1 + tf.cast(flat_codes >= 0x80, tf.int32)
                     + tf.cast(flat_codes >= 0x800, tf.int32)
                     + tf.cast(flat_codes >= 0x10000, tf.int32))  # (C,) UTF-8 bytes
        # Bytes of each character in the pre-tokens: `pre_tokenize` drops CUT_MARK, even where
        # the text had it.
        char_size = tf.where(flat_codes == ord(CUT_MARK), 0, char_size)
        char_of_byte = tf.repeat(tf.range(tf.size(char_size)), char_size)  # pre-tokens' bytes
        words, merged = self._bpe(tf.strings.unicode_encode(codes, "UTF-8"))
        # The pre-tokens tile each text in order, and their pieces tile the pre-tokens, so the
        # pieces of the batch tile all the texts one after another: a piece's byte span in
        # that concatenation is a running sum of piece sizes (a GPT-2 character is one byte).
        pieces = merged.flat_values
        size = tf.strings.length(pieces, unit="UTF8_CHAR")  # (P,) bytes
        limit = tf.cumsum(size)  # (P,) where each piece ends in all the pre-tokens' bytes
        start = tf.gather(char_starts, tf.gather(char_of_byte, limit - size))  # whole characters
        end = tf.gather(char_ends, tf.gather(char_of_byte, limit - 1))
        if self.trim_offsets:  # the spaces at either end of a piece leave its span
            leading = size - tf.strings.length(
                tf.strings.regex_replace(pieces, f"^{_SPACE}+", ""), unit="UTF8_CHAR")
            trailing = size - tf.strings.length(
                tf.strings.regex_replace(pieces, f"{_SPACE}+$", ""), unit="UTF8_CHAR")
            start = tf.minimum(start + leading, end)
            end = tf.maximum(end - trailing, start)
        is_start = tf.range(tf.size(size, out_type=tf.int64)) == tf.gather(
            merged.row_starts(), merged.value_rowids())
        splits = tf.gather(merged.row_splits, words.row_splits)  # (B + 1,) pieces of each text
        ids = self._ids.lookup(pieces)
        return tuple(tf.RaggedTensor.from_row_splits(values, splits, validate=False)
                     for values in (ids, start, end, is_start))

    def _merge(self, symbols, splits):
        """BPE on every word at once: symbols [S] strings with row_splits [W + 1], flat, each
        symbol tagged with its word. A word leaves the loop when it has nothing left to merge,
        so each step works only on the words that still merge; the finished words' symbols
        are put back in word order at the end."""
        num_words = tf.size(splits, out_type=tf.int32) - 1

        def step(symbols, words, done_symbols, done_words):
            # Pair i is symbols i and i + 1, a pair where both are of one word.
            ranks = tf.where(words[1:] == words[:-1], self._ranks.lookup(
                tf.strings.join([symbols[:-1], symbols[1:]], separator=" ")), NO_RANK)
            best = tf.math.unsorted_segment_min(ranks, words[:-1], num_words)  # (W,)
            word_best = tf.gather(best, words)  # (S,) NO_RANK: no merge left in its word
            candidate = (ranks == word_best[:-1]) & (ranks < NO_RANK)
            # Non-overlapping, left to right: in a run of consecutive candidates (the pair
            # (x, x) in x x x ...), every second one. A run never crosses words: a pair
            # across two words is no candidate.
            starts = candidate & ~tf.concat([[False], candidate[:-1]], 0)
            position = tf.range(tf.size(candidate, out_type=tf.int32))
            start_at = tf.gather(tf.concat([[0], tf.boolean_mask(position, starts)], 0),
                                 tf.cumsum(tf.cast(starts, tf.int32)))  # its run's start
            chosen = candidate & ((position - start_at) % 2 == 0)  # pair i merges i and i + 1
            following = tf.concat([symbols, [""]], 0)[1:]
            new = tf.where(tf.concat([chosen, [False]], 0),
                           tf.strings.join([symbols, following]), symbols)
            finished = word_best >= NO_RANK  # (S,)
            keep = ~tf.concat([[False], chosen], 0) & ~finished  # not a right half, not done
            return (tf.boolean_mask(new, keep), tf.boolean_mask(words, keep),
                    tf.concat([done_symbols, tf.boolean_mask(symbols, finished)], 0),
                    tf.concat([done_words, tf.boolean_mask(words, finished)], 0))

        words = tf.cast(tf.ragged.row_splits_to_segment_ids(splits), tf.int32)
        vector = tf.TensorShape([None])
        _, _, done_symbols, done_words = tf.while_loop(
            lambda symbols, *_: tf.size(symbols) > 0, step,
            [symbols, words, tf.constant([], tf.string), tf.constant([], tf.int32)],
            shape_invariants=[vector] * 4)
        # A word's symbols left together and in order: a stable sort by word restores them.
        order = tf.argsort(done_words, stable=True)
        lengths = tf.math.bincount(done_words, minlength=num_words, maxlength=num_words)
        return tf.RaggedTensor.from_row_lengths(tf.gather(done_symbols, order),
                                                tf.cast(lengths, tf.int64), validate=False)

    def detokenize(self, ids):
        """Ids [B, (pieces)] -> text [B] (special tokens dropped)."""
        ids = without_ids(ids, (self.cls_id, self.sep_id, self.pad_id, self.mask_id))
        pieces = tf.strings.reduce_join(ids.with_flat_values(
            tf.gather(self._tokens, ids.flat_values)), axis=-1)
        chars = tf.strings.unicode_split(pieces, "UTF-8")
        return tf.strings.reduce_join(
            chars.with_flat_values(self._char_bytes.lookup(chars.flat_values)), axis=-1)

    def __call__(self, texts):
        return self.tokenize(texts)


class ModernBertTokenizer(ByteBpeTokenizer):
    """ModernBERT's byte-level BPE (its `tokenizer.json`, converted to vocab.json +
    merges.txt): GPT-2's pre-tokenization and merges, special tokens [CLS] [SEP] [PAD] [UNK]
    [MASK] (after the BPE vocabulary), pairs packed `[CLS] A [SEP] B [SEP]`, one token type.

    Example:
    >>> import pathlib
    >>> path = pathlib.Path(__file__).parents[2] / "tests" / "fixtures" / "families"
    >>> tok = ModernBertTokenizer.from_pretrained(  # doctest: +SKIP
    ...     tokenizer_json.convert(str(path / "modernbert")))
    """

    separators_between = 1
    special_tokens = dict(cls="[CLS]", sep="[SEP]", pad="[PAD]", unk="[UNK]", mask="[MASK]")
    trim_offsets = False  # its tokenizer.json's post-processor is a template, no ByteLevel
    family = "ModernBERT"
