"""The tokenizer files of a transformers directory, written from one of our tokenizers, so that
`AutoTokenizer.from_pretrained` gives the ids ours gives (and `tokenizers.Tokenizer.from_file`
too, on `tokenizer.json`).

Each tokenizer class writes its own classic files (`tokenizer.save`: vocab.txt; vocab.json +
merges.txt; spiece.model); this module adds what transformers reads beside them:

- `tokenizer_config.json`: the family's `tokenizer_class`, the special tokens, the casing
  (WordPiece `do_lower_case`; SentencePiece `do_lower_case` and `keep_accents`, which our
  uncased models strip and our cased ones keep), `model_max_length` (the encoder's positions)
  and `model_input_names`: `token_type_ids` only where the packer gives the second text type 1
  and the encoder has the types to read it (a one-type encoder reads every token as type 0;
  transformers, sent no token_type_ids, does the same);
- `special_tokens_map.json` (transformers 4 reads it);
- `tokenizer.json`, built here without the `tokenizers` library: WordPiece (BertNormalizer,
  BertPreTokenizer), byte-level BPE (RoBERTa's, with its merges; ModernBERT's, its special
  tokens added after the vocabulary and its [CLS] A [SEP] B [SEP] template) and Unigram
  (ALBERT's: the pieces and scores, and the normalization rules, of spiece.model). A
  SentencePiece model that is not a Unigram one gets none (transformers converts spiece.model
  itself then), nor does DeBERTa-v3's spm.model (its DebertaV2Tokenizer converts it, from
  tokenizer_config.json's options).

Known difference, in transformers and not here: special tokens written literally in a text
("[MASK]") are matched as those tokens by transformers, split like other text by ours.

>>> import bert_keras as bk  # doctest: +SKIP
>>> tokenizer = bk.load_tokenizer("ckpt/")  # doctest: +SKIP
>>> files = tokenizer_files(tokenizer, "BertTokenizer", 512, True)  # doctest: +SKIP
>>> sorted(files)  # doctest: +SKIP
['special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json']
"""

import base64
import json
import struct

import tensorflow as tf

from bert_keras.text import deberta_tokenizer
from bert_keras.text.byte_bpe_tokenizer import (
    ByteBpeTokenizer,
    ModernBertTokenizer,
    read_merges,
    read_vocab_json,
)
from bert_keras.text.deberta_tokenizer import DebertaV3Tokenizer
from bert_keras.text.sentencepiece_tokenizer import SentencePieceTokenizer
from bert_keras.text.tokenizer import WordPieceTokenizer

TOKENIZER_JSON, TOKENIZER_CONFIG = "tokenizer.json", "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"


def tokenizer_files(tokenizer, tokenizer_class, max_length, type_ids):
    """{file name: text} of tokenizer_config.json, special_tokens_map.json and (where one can be
    built) tokenizer.json for `tokenizer` (one of ours), whose transformers class is
    `tokenizer_class`, for an encoder of `max_length` positions that reads token types
    (`type_ids`: whether the second text of a pair is sent as type 1)."""
    kind = _KINDS.get(type(tokenizer), _Other)
    specials = kind.special_tokens(tokenizer)
    sends_types = bool(type_ids and tokenizer.pair_type_ids)
    config = dict(tokenizer_class=tokenizer_class, **kind.options(tokenizer), **specials,
                  model_max_length=int(max_length),
                  model_input_names=["input_ids"] + ["token_type_ids"] * sends_types
                  + ["attention_mask"])
    files = {TOKENIZER_CONFIG: config, SPECIAL_TOKENS_MAP: specials}
    built = kind.tokenizer_json(tokenizer)
    if built is not None:
        files[TOKENIZER_JSON] = built
    return {name: json.dumps(value, ensure_ascii=False, indent=2) + "\n"
            for name, value in files.items()}


def _added_tokens(tokenizer, ids):
    """tokenizer.json's `added_tokens`: the special tokens of `ids` (token ids), matched in
    the raw text as wholes."""
    return [dict(id=i, content=tokenizer.vocab[i], single_word=False, lstrip=False,
                 rstrip=False, normalized=False, special=True) for i in sorted(set(ids))]


def _template(tokenizer):
    """BERT's post-processor: [CLS] A [SEP] (B [SEP]), B as type 1."""
    cls, sep = tokenizer.vocab[tokenizer.cls_id], tokenizer.vocab[tokenizer.sep_id]

    def special(token, type_id):
        return {"SpecialToken": {"id": token, "type_id": type_id}}

    def sequence(name, type_id):
        return {"Sequence": {"id": name, "type_id": type_id}}

    return {"type": "TemplateProcessing",
            "single": [special(cls, 0), sequence("A", 0), special(sep, 0)],
            "pair": [special(cls, 0), sequence("A", 0), special(sep, 0), sequence("B", 1),
                     special(sep, 1)],
            "special_tokens": {token: {"id": token, "ids": [i], "tokens": [token]}
                               for token, i in ((cls, tokenizer.cls_id),
                                                (sep, tokenizer.sep_id))}}


def _document(tokenizer, normalizer, pre_tokenizer, post_processor, decoder, model):
    ids = (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
           tokenizer.mask_id)
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": _added_tokens(tokenizer, ids), "normalizer": normalizer,
            "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
            "decoder": decoder, "model": model}


def _special_tokens(tokenizer, **extra):
    token = tokenizer.vocab.__getitem__
    return dict(**extra, cls_token=token(tokenizer.cls_id), mask_token=token(tokenizer.mask_id),
                pad_token=token(tokenizer.pad_id), sep_token=token(tokenizer.sep_id),
                unk_token=token(tokenizer.unk_id))


class _WordPiece:
    """BERT's WordPiece (BERT, DistilBERT, ELECTRA): lower_case means lower-cased and accents
    stripped (BertNormalizer's strip_accents=None follows lowercase)."""

    special_tokens = staticmethod(_special_tokens)

    @staticmethod
    def options(tokenizer):
        return dict(do_lower_case=tokenizer.lower_case, strip_accents=None,
                    tokenize_chinese_chars=True)

    @staticmethod
    def tokenizer_json(tokenizer):
        vocab = {}
        for i, token in enumerate(tokenizer.vocab):
            vocab.setdefault(token, i)  # the first id of a token listed twice, as ours
        return _document(
            tokenizer,
            normalizer={"type": "BertNormalizer", "clean_text": True,
                        "handle_chinese_chars": True, "strip_accents": None,
                        "lowercase": tokenizer.lower_case},
            pre_tokenizer={"type": "BertPreTokenizer"}, post_processor=_template(tokenizer),
            decoder={"type": "WordPiece", "prefix": "##", "cleanup": True},
            model={"type": "WordPiece", "unk_token": tokenizer.vocab[tokenizer.unk_id],
                   "continuing_subword_prefix": "##",
                   "max_input_chars_per_word": tokenizer.max_chars_per_word, "vocab": vocab})


def _bos_eos_special_tokens(tokenizer):
    """The special tokens of a family whose [CLS] and [SEP] are also its bos and eos."""
    return _special_tokens(tokenizer, bos_token=tokenizer.vocab[tokenizer.cls_id],
                           eos_token=tokenizer.vocab[tokenizer.sep_id])


class _ByteBpe:
    """RoBERTa's byte-level BPE: no normalization, GPT-2's pre-tokenization, `<s> A </s></s>
    B </s>`, one token type."""

    special_tokens = staticmethod(_bos_eos_special_tokens)

    @staticmethod
    def options(tokenizer):
        return dict(add_prefix_space=False, errors="replace", trim_offsets=True)

    @staticmethod
    def tokenizer_json(tokenizer):
        index = read_vocab_json(tokenizer.vocab_file)
        merges = read_merges(tokenizer.merges_file, index, tokenizer.vocab_file)
        byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                      "use_regex": True}
        cls, sep = tokenizer.vocab[tokenizer.cls_id], tokenizer.vocab[tokenizer.sep_id]
        return _document(
            tokenizer, normalizer=None, pre_tokenizer=byte_level,
            post_processor={"type": "RobertaProcessing", "sep": [sep, tokenizer.sep_id],
                            "cls": [cls, tokenizer.cls_id], "trim_offsets": True,
                            "add_prefix_space": False},
            decoder=dict(byte_level, add_prefix_space=True),
            model={"type": "BPE", "dropout": None, "unk_token": None,
                   "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                   "byte_fallback": False, "ignore_merges": False,
                   "vocab": {token: i for i, token in enumerate(tokenizer.vocab)},
                   "merges": [merge.split(" ") for merge in merges]})


class _ModernBpe(_ByteBpe):
    """ModernBERT's byte-level BPE: RoBERTa's pre-tokenization and decoding, its special
    tokens added after the BPE vocabulary (`added_tokens` only), `[CLS] A [SEP] B [SEP]` all
    of type 0, no bos / eos tokens."""

    special_tokens = staticmethod(_special_tokens)

    @staticmethod
    def options(tokenizer):
        return {}

    @staticmethod
    def tokenizer_json(tokenizer):
        document = _ByteBpe.tokenizer_json(tokenizer)
        specials = {token["content"] for token in document["added_tokens"]}
        document["model"] = dict(
            document["model"], continuing_subword_prefix=None, end_of_word_suffix=None,
            vocab={t: i for t, i in document["model"]["vocab"].items() if t not in specials})
        template = _template(tokenizer)
        for item in template["pair"]:
            next(iter(item.values()))["type_id"] = 0
        document["post_processor"] = template
        return document


class _DebertaSpm:
    """DeBERTa-v3's SentencePiece (`deberta_tokenizer`): transformers' DebertaV2Tokenizer
    converts spm.model itself, from tokenizer_config.json's options."""

    @staticmethod
    def special_tokens(tokenizer):
        return {k: v for k, v in deberta_tokenizer.TOKENIZER_CONFIG.items() if k.endswith("_token")}

    @staticmethod
    def options(tokenizer):
        return {k: v for k, v in deberta_tokenizer.TOKENIZER_CONFIG.items()
                if not k.endswith("_token") and k != "tokenizer_class"}

    @staticmethod
    def tokenizer_json(tokenizer):
        return None


class _SentencePiece:
    """ALBERT's SentencePiece: transformers' AlbertTokenizer pipeline (`` and '' -> ", NFKD
    and accents stripped unless keep_accents, lower-cased if do_lower_case, the model's own
    charsmap, words split on whitespace with "▁" prepended), the Unigram pieces and scores of
    spiece.model."""

    special_tokens = staticmethod(_bos_eos_special_tokens)

    @staticmethod
    def options(tokenizer):
        # Our uncased models lower-case and strip accents; our cased ones do neither.
        return dict(do_lower_case=tokenizer.lower_case, keep_accents=not tokenizer.lower_case,
                    remove_space=True)

    @staticmethod
    def tokenizer_json(tokenizer):
        with tf.io.gfile.GFile(tokenizer.vocab_file, "rb") as f:
            model = read_sentencepiece_model(f.read())
        if model["model_type"] != UNIGRAM:
            return None
        normalizers = [{"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
                       {"type": "Replace", "pattern": {"String": "''"}, "content": "\""}]
        if tokenizer.lower_case:
            normalizers += [{"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"}]
        if model["precompiled_charsmap"]:
            normalizers.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(
                model["precompiled_charsmap"]).decode("ascii")})
        metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                     "split": True}
        return _document(
            tokenizer, normalizer={"type": "Sequence", "normalizers": normalizers},
            pre_tokenizer={"type": "Sequence",
                           "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace]},
            post_processor=_template(tokenizer), decoder=metaspace,
            model={"type": "Unigram", "unk_id": tokenizer.unk_id,
                   "vocab": [[piece, score] for piece, score in model["pieces"]],
                   "byte_fallback": False})


class _Other:
    """Another tokenizer class: its own files and the special tokens; no tokenizer.json
    (transformers builds one from the classic files)."""

    special_tokens = staticmethod(_bos_eos_special_tokens)

    @staticmethod
    def options(tokenizer):
        return {}

    @staticmethod
    def tokenizer_json(tokenizer):
        return None


_KINDS = {WordPieceTokenizer: _WordPiece, ByteBpeTokenizer: _ByteBpe,
          ModernBertTokenizer: _ModernBpe, SentencePieceTokenizer: _SentencePiece,
          DebertaV3Tokenizer: _DebertaSpm}

UNIGRAM = 1  # TrainerSpec.model_type (sentencepiece_model.proto), its default


def read_sentencepiece_model(data):
    """{"pieces": [(piece, score)], "precompiled_charsmap": bytes, "model_type": int} of the
    bytes of a SentencePiece model (a ModelProto: pieces are field 1, each with its piece (1)
    and score (2); the trainer spec (2) holds model_type (3); the normalizer spec (3) the
    charsmap (2)). The tokenizer has checked the file whole already."""
    model = {"pieces": [], "precompiled_charsmap": b"", "model_type": UNIGRAM}
    for field, value in _fields(data):
        if field == 1:
            piece = dict(_fields(value))
            score = struct.unpack("<f", piece[2])[0] if 2 in piece else 0.0
            model["pieces"].append((piece[1].decode("utf-8"), score))
        elif field == 2:
            model["model_type"] = dict(_fields(value)).get(3, UNIGRAM)
        elif field == 3:
            model["precompiled_charsmap"] = dict(_fields(value)).get(2, b"")
    return model


def _fields(data):
    """(field number, value) of each protobuf field of `data`: varints as ints, the others as
    bytes."""
    position = 0
    while position < len(data):
        tag, position = _varint(data, position)
        wire_type = tag & 7
        if wire_type == 0:
            value, position = _varint(data, position)
        elif wire_type == 2:
            size, position = _varint(data, position)
            value, position = data[position:position + size], position + size
        elif wire_type in (1, 5):
            size = 8 if wire_type == 1 else 4
            value, position = data[position:position + size], position + size
        else:
            raise ValueError(f"protobuf wire type {wire_type} at byte {position}")
        yield tag >> 3, value


def _varint(data, position):
    value, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, position
