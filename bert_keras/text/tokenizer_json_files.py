"""The classic tokenizer files for the bytes of a Hugging Face `tokenizer.json`
(`classic_files`), by the model it holds:

- WordPiece (BERT, DistilBERT, ELECTRA): `vocab.txt` (the tokens in id order) and
  `tokenizer_config.json` with `do_lower_case` (`tokenizer_config.json`'s own `do_lower_case`
  if it has one, else the normalizer's `lowercase`).
- BPE with the ByteLevel pre-tokenizer (RoBERTa, GPT-2): `vocab.json` and `merges.txt`
  (`#version: 0.2`, then one "a b" a line; `tokenizer.json` stores a merge as "a b" or, from
  tokenizers 0.20 on, as a pair [a, b]).
- BPE with byte fallback, Gemma-style (mmBERT): `vocab.json`, `merges.txt` (header only) and
  `metaspace_bpe.json` (`metaspace_bpe_tokenizer.settings`).
- Unigram in fairseq's layout (XLM-RoBERTa: `<s> <pad> </s> <unk>` first, `<mask>` last;
  transformers 5 saves no `sentencepiece.bpe.model`): `sentencepiece.bpe.model`, a
  SentencePiece model rebuilt from the pieces and scores and the normalizer's precompiled
  charsmap (what transformers 5's `XLMRobertaTokenizer` itself takes from tokenizer.json).
- Unigram in DeBERTa-v2/v3's layout (`[PAD] [CLS] [SEP] [UNK]` first, `[MASK]` after the
  pieces; transformers 5 saves no `spm.model`): `spm.model`, rebuilt the same way
  (`_deberta_files`: what transformers 5's `DebertaV2Tokenizer` takes from the file).
- Other Unigram models (ALBERT) are not converted: their `spiece.model` must be in the
  directory.

The SentencePiece models are written by `sentencepiece_proto.unigram_model`. A file that
cannot be converted raises `errors.InputError` naming it and the problem. (Where the files
are kept: `tokenizer_json.convert`.)
"""

import base64
import json

from bert_keras.errors import InputError
from bert_keras.files import parse_json
from bert_keras.text import deberta_tokenizer, metaspace_bpe_tokenizer
from bert_keras.text.sentencepiece_proto import CONTROL, NORMAL, UNKNOWN, unigram_model

TOKENIZER_JSON, TOKENIZER_CONFIG = "tokenizer.json", "tokenizer_config.json"
SPIECE_MODEL = "spiece.model"
XLM_ROBERTA_MODEL = "sentencepiece.bpe.model"
# XLM-R's fairseq ids 0-3 and last id; the SentencePiece pieces 0-2 they stand for.
_FAIRSEQ_SPECIALS, _FAIRSEQ_MASK = ["<s>", "<pad>", "</s>", "<unk>"], "<mask>"
_SPM_SPECIALS = (("<unk>", UNKNOWN), ("<s>", CONTROL), ("</s>", CONTROL))


def classic_files(data, source="tokenizer.json", config_data=None,
                  config_file="tokenizer_config.json", directory="."):
    """{file name: text (bytes for a binary file)} of the classic files for the bytes `data` of
    `tokenizer.json`
    (`source` names it in errors) and of `tokenizer_config.json` (`config_data`, or None).

    >>> files = classic_files(json.dumps({"model": {
    ...     "type": "WordPiece", "continuing_subword_prefix": "##",
    ...     "vocab": {"[PAD]": 0, "hi": 2, "[UNK]": 1}},
    ...     "normalizer": {"type": "BertNormalizer", "lowercase": False}}).encode())
    >>> files["vocab.txt"], files["tokenizer_config.json"]
    ('[PAD]\\n[UNK]\\nhi\\n', '{"do_lower_case": false}\\n')
    """
    spec = _parse(data, source)
    model = _field(spec, "model", dict, source)
    kind = _field(model, "type", str, source, "model.type")
    if kind == "WordPiece":
        return _wordpiece_files(spec, model, source, _config(config_data, config_file))
    if kind == "BPE" and model.get("byte_fallback"):
        return _metaspace_bpe_files(spec, model, source, _config(config_data, config_file))
    if kind == "BPE":
        return _byte_bpe_files(spec, model, source)
    if kind == "Unigram" and _fairseq_layout(model):
        return _xlm_roberta_files(spec, model, source, _config(config_data, config_file))
    if kind == "Unigram" and _deberta_layout(model):
        return _deberta_files(spec, model, source, _config(config_data, config_file),
                              config_file)
    if kind == "Unigram":
        raise InputError(
            f"{directory} has no {SPIECE_MODEL}: its {TOKENIZER_JSON} holds a Unigram "
            f"(SentencePiece) model, which is not converted; put the checkpoint's {SPIECE_MODEL} "
            "beside it.")
    raise InputError(f"{source}: model.type is {kind!r}; only WordPiece, byte-level BPE and "
                     f"Unigram (with its {SPIECE_MODEL}) tokenizers can be read.")



def _parse(data, source, expect=None):
    """The JSON value in the bytes `data` of file `source` (InputError naming it if not JSON,
    or not an `expect`)."""
    return parse_json(data, source, expect)


def _field(obj, key, kind, source, name=None):
    name = name or key
    if not isinstance(obj, dict) or key not in obj:
        raise InputError(f"{source}: has no {name}.")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise InputError(f"{source}: {name} is not {_KIND_NAMES.get(kind, kind.__name__)} "
                         f"(it is {type(value).__name__}).")
    return value


_KIND_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer",
               bool: "true or false"}


def _config(config_data, config_file):
    """`tokenizer_config.json` as a dict ({} when there is none)."""
    if config_data is None:
        return {}
    return _parse(config_data, config_file, expect=dict)


def _tokens_by_id(spec, model, source):
    """The vocab (model.vocab and the added tokens it lacks) as a list in id order; every id
    0..n-1 must be there exactly once."""
    vocab = _field(model, "vocab", dict, source, "model.vocab")
    by_id = {}
    for token, token_id in vocab.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise InputError(f"{source}: model.vocab gives {token!r} the id {token_id!r}, not an "
                             "id (an integer >= 0).")
        if token_id in by_id:
            raise InputError(f"{source}: model.vocab gives the id {token_id} to both "
                             f"{by_id[token_id]!r} and {token!r}.")
        by_id[token_id] = token
    added = spec.get("added_tokens") or []
    if not isinstance(added, list):
        raise InputError(f"{source}: added_tokens is not a list.")
    for entry in added:
        if not (isinstance(entry, dict) and isinstance(entry.get("content"), str)
                and isinstance(entry.get("id"), int) and entry["id"] >= 0):
            raise InputError(f"{source}: added_tokens has an entry without a content string and "
                             f"an id: {str(entry)[:80]}.")
        token, token_id = entry["content"], entry["id"]
        if token in vocab:
            continue
        if token_id in by_id and by_id[token_id] != token:
            raise InputError(f"{source}: the added token {token!r} has the id {token_id} of "
                             f"{by_id[token_id]!r}.")
        by_id[token_id] = token
    if not by_id:
        raise InputError(f"{source}: model.vocab is empty.")
    missing = [i for i in range(len(by_id)) if i not in by_id]
    if missing:
        raise InputError(f"{source}: the vocab has {len(by_id)} tokens but not the ids "
                         f"{missing[:5]}{' ...' if len(missing) > 5 else ''} (ids must be "
                         f"0..{len(by_id) - 1}, each once).")
    return [by_id[i] for i in range(len(by_id))]


def _lowercases(normalizer):
    """Whether a tokenizer.json normalizer lower-cases (None: no normalizer, no)."""
    if not isinstance(normalizer, dict):
        return False
    kind = normalizer.get("type")
    if kind == "BertNormalizer":
        return bool(normalizer.get("lowercase", True))
    if kind == "Lowercase":
        return True
    if kind == "Sequence":
        return any(_lowercases(n) for n in normalizer.get("normalizers") or [])
    return False


def _wordpiece_files(spec, model, source, config):
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise InputError(f"{source}: model.continuing_subword_prefix is {prefix!r}; BERT's "
                         "WordPiece tokenizer reads only '##'.")
    tokens = _tokens_by_id(spec, model, source)
    bad = [t for t in tokens if not t or "\n" in t or "\r" in t]
    if bad:
        raise InputError(f"{source}: the vocab has tokens that cannot be lines of vocab.txt "
                         f"(empty or with a line break): {bad[:5]!r}.")
    if "do_lower_case" in config:
        lower_case = bool(config["do_lower_case"])
    else:
        lower_case = _lowercases(spec.get("normalizer"))
    return {"vocab.txt": "".join(t + "\n" for t in tokens),
            TOKENIZER_CONFIG: json.dumps({"do_lower_case": lower_case}) + "\n"}


def _byte_bpe_files(spec, model, source):
    pre = spec.get("pre_tokenizer")
    if not (isinstance(pre, dict) and pre.get("type") == "ByteLevel"):
        kind = pre.get("type") if isinstance(pre, dict) else pre
        raise InputError(f"{source}: a BPE model whose pre_tokenizer is {kind!r}, not ByteLevel; "
                         "only byte-level BPE (RoBERTa, GPT-2) can be read.")
    if pre.get("use_regex", True) is False or pre.get("add_prefix_space", False):
        raise InputError(f"{source}: its ByteLevel pre_tokenizer has use_regex="
                         f"{pre.get('use_regex', True)}, add_prefix_space="
                         f"{pre.get('add_prefix_space', False)}; the byte-level BPE tokenizer "
                         "splits as RoBERTa does (use_regex=true, add_prefix_space=false).")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise InputError(f"{source}: model.{key} is {model[key]!r}; byte-level BPE has none.")
    tokens = _tokens_by_id(spec, model, source)
    lines = [f"{a} {b}\n" for a, b in _merge_pairs(model, source, line_breaks=False)]
    vocab = {token: i for i, token in enumerate(tokens)}
    return {"vocab.json": json.dumps(vocab, ensure_ascii=False) + "\n",
            "merges.txt": "#version: 0.2\n" + "".join(lines)}


def _merge_pairs(model, source, line_breaks):
    """model.merges as [a, b] pairs (stored as "a b" or, from tokenizers 0.20 on, [a, b]);
    pieces with line breaks refused unless `line_breaks`."""
    pairs = []
    for merge in _field(model, "merges", list, source, "model.merges"):
        if isinstance(merge, list) and len(merge) == 2 and all(isinstance(m, str) for m in merge):
            pair = merge
        elif isinstance(merge, str):
            pair = merge.split(" ")
        else:
            pair = None
        if pair is None or len(pair) != 2 or not all(pair) or not line_breaks and any(
                c in "".join(pair) for c in "\n\r"):
            raise InputError(f"{source}: model.merges has {merge!r}, not a merge (\"a b\" or "
                             "[a, b], two pieces without spaces).")
        pairs.append(list(pair))
    return pairs


def _metaspace_bpe_files(spec, model, source, config):
    """Gemma-style BPE with byte fallback (mmBERT): vocab.json, merges.txt (its header only:
    Gemma's pieces may hold line breaks) and metaspace_bpe.json (the merges, the special
    tokens); what the in-graph tokenizer does not compute is refused by `settings`."""
    tokens = _tokens_by_id(spec, model, source)
    found = metaspace_bpe_tokenizer.settings(
        spec, model, config, source, _merge_pairs(model, source, line_breaks=True))
    vocab = {token: i for i, token in enumerate(tokens)}
    return {"vocab.json": json.dumps(vocab, ensure_ascii=False) + "\n",
            "merges.txt": "#version: 0.2\n",
            metaspace_bpe_tokenizer.SETTINGS_FILE: metaspace_bpe_tokenizer.json_text(found)}


def _fairseq_layout(model):
    """Whether a Unigram model.vocab is in fairseq's (XLM-R's) layout."""
    vocab = model.get("vocab")
    if not isinstance(vocab, list) or len(vocab) < 6:
        return False
    tokens = [entry[0] if isinstance(entry, list) and entry else None for entry in vocab]
    return (tokens[:4] == _FAIRSEQ_SPECIALS and tokens[-1] == _FAIRSEQ_MASK
            and model.get("unk_id") == 3)


def _xlm_roberta_files(spec, model, source, config):
    """sentencepiece.bpe.model from an XLM-R tokenizer.json: SentencePiece's <unk> <s> </s>
    and the pieces between fairseq's specials and <mask>, with their scores; the normalizer's
    precompiled charsmap (none: no normalization); a dummy prefix, extra whitespace removed,
    whitespace escaped (transformers 5's XLMRobertaTokenizer builds that pipeline whatever
    tokenizer.json says; a tokenizer_config.json without the prefix space is refused)."""
    if model.get("byte_fallback"):
        raise InputError(f"{source}: a Unigram model with byte_fallback; XLM-RoBERTa's has none.")
    if config.get("add_prefix_space", True) is False:
        raise InputError(f"{source}: tokenizer_config.json says add_prefix_space=false; "
                         "XLM-RoBERTa's tokenizer reads only the prefix space ('▁' before the "
                         "first word).")
    pieces = _scored_pieces(model["vocab"], 4, len(model["vocab"]) - 1, source)
    charsmap = _precompiled_charsmap(spec.get("normalizer"), source)
    return {XLM_ROBERTA_MODEL: unigram_model(
        [(piece, 0.0, kind) for piece, kind in _SPM_SPECIALS] + pieces, charsmap)}


def _scored_pieces(vocab, begin, end, source):
    """[(piece, score, NORMAL)] of the Unigram model.vocab entries begin..end-1, each checked
    to be a [piece, score] pair."""
    pieces = []
    for number in range(begin, end):
        entry = vocab[number]
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                and entry[0] and isinstance(entry[1], (int, float))
                and not isinstance(entry[1], bool)):
            raise InputError(f"{source}: model.vocab[{number}] is {str(entry)[:80]}, not a "
                             "[piece, score] pair.")
        pieces.append((entry[0], float(entry[1]), NORMAL))
    return pieces


def _deberta_layout(model):
    """Whether a Unigram model.vocab starts with DeBERTa's [PAD] [CLS] [SEP] [UNK]."""
    vocab = model.get("vocab")
    if not isinstance(vocab, list) or len(vocab) <= len(deberta_tokenizer.SPECIAL_PIECES):
        return False
    tokens = [entry[0] if isinstance(entry, list) and entry else None
              for entry in vocab[:len(deberta_tokenizer.SPECIAL_PIECES)]]
    return tokens == deberta_tokenizer.SPECIAL_PIECES


def _deberta_files(spec, model, source, config, config_file):
    """spm.model from a DeBERTa-v2/v3 tokenizer.json, as transformers 5's `DebertaV2Tokenizer`
    reads one: its pieces and scores ([PAD] [CLS] [SEP] control pieces, [UNK] the unknown
    one; a trailing [MASK] left to `DebertaV3Tokenizer`, which puts it after the pieces) and
    the Precompiled normalizer's charsmap. transformers builds the rest of the pipeline itself
    whatever the file says (charsmap, trailing spaces stripped, space runs collapsed, "▁"
    before each word; no byte fallback), which is the SentencePiece model's own; it takes
    lower-casing and punctuation splitting from tokenizer_config.json, which are refused as
    for spm.model. Refused too: no charsmap (transformers then normalizes with NFC instead) and
    added tokens other than the special ones (transformers matches them in the text)."""
    deberta_tokenizer.check_config(config, config_file)
    charsmap = _precompiled_charsmap(spec.get("normalizer"), source)
    if not charsmap:
        raise InputError(f"{source}: its normalizer ({_normalizer_kinds(spec.get('normalizer'))})"
                         " has no Precompiled charsmap; transformers then normalizes DeBERTa's "
                         "text with NFC, which a SentencePiece model cannot carry (only a "
                         "charsmap).")
    vocab, mask = model["vocab"], deberta_tokenizer.MASK_TOKEN
    size = len(vocab) - (isinstance(vocab[-1], list) and vocab[-1][:1] == [mask])
    specials = len(deberta_tokenizer.SPECIAL_PIECES)
    for entry in spec.get("added_tokens") or []:
        content, token_id = (entry.get("content"), entry.get("id")) if isinstance(
            entry, dict) else (None, None)
        special = token_id in range(specials) and deberta_tokenizer.SPECIAL_PIECES[
            token_id] == content
        if not (special or (content, token_id) == (mask, size)):
            raise InputError(f"{source}: added_tokens has {content!r} (id {token_id}); only "
                             f"DeBERTa's {deberta_tokenizer.SPECIAL_PIECES} (ids 0-{specials - 1})"
                             f" and {mask} (id {size}, after the pieces) are read.")
    pieces = [(piece, 0.0, CONTROL) for piece in deberta_tokenizer.SPECIAL_PIECES[:-1]]
    pieces += [(deberta_tokenizer.SPECIAL_PIECES[-1], 0.0, UNKNOWN)]
    pieces += _scored_pieces(vocab, specials, size, source)
    ids = deberta_tokenizer.SPECIAL_PIECES.index
    return {deberta_tokenizer.MODEL_FILE: unigram_model(
        pieces, charsmap, unk_id=ids("[UNK]"), bos_id=ids("[CLS]"), eos_id=ids("[SEP]"),
        pad_id=ids("[PAD]"))}


def _normalizer_kinds(normalizer):
    """A tokenizer.json normalizer in words: "none", "NFC", "Sequence of Replace, NFC"."""
    if not isinstance(normalizer, dict):
        return "none"
    if normalizer.get("type") == "Sequence":
        kinds = [n.get("type") if isinstance(n, dict) else repr(n)
                 for n in normalizer.get("normalizers") or []]
        return f"Sequence of {', '.join(map(str, kinds)) or 'nothing'}"
    return str(normalizer.get("type"))


def _precompiled_charsmap(normalizer, source):
    """The bytes of the first Precompiled normalizer's charsmap (alone or in a Sequence), as
    transformers takes it; b"" for none."""
    if not isinstance(normalizer, dict):
        return b""
    found = (normalizer.get("normalizers") or [] if normalizer.get("type") == "Sequence"
             else [normalizer])
    for entry in found:
        if isinstance(entry, dict) and entry.get("type") == "Precompiled":
            try:
                return base64.b64decode(entry.get("precompiled_charsmap") or "", validate=True)
            except (ValueError, TypeError):
                raise InputError(f"{source}: the Precompiled normalizer's precompiled_charsmap "
                                 "is not base64.") from None
    return b""


__all__ = ["classic_files", "TOKENIZER_JSON", "TOKENIZER_CONFIG"]
