"""The tokenizer of a checkpoint directory: its family's, or the one its files show.

Every tokenizer has the same small protocol: `tokenize(texts)` -> ids [B, (pieces)],
`detokenize(ids)`, the special-token ids (`cls_id`, `sep_id`, `pad_id`, `mask_id`, `unk_id`),
`vocab` and `vocab_size`, `lower_case`, `vocab_file` (its main file; exports ship all of
`asset_files`), `separators_between` (the packing of pairs), `save(directory)` and
`from_pretrained(directory)`, and `tokenize_with_offsets` / `tokenize_words_with_offsets`
(byte offsets and transformers' words; tagging and span QA need them).

A transformers directory (one with a `config.json`) gets the tokenizer of its `model_type`'s
family (`bert_keras.families`: the family names its tokenizer class and files), never another
one because of the files that happen to lie beside it: a RoBERTa config.json beside a
vocab.txt is an error, not a WordPiece model. Other directories (our encoder and task
directories, Google's TF1 checkpoints) are recognized by their files.

A directory with none of the classic files but a Hugging Face `tokenizer.json` (transformers 5
may save only that and `tokenizer_config.json`) is read through `tokenizer_json.convert`, which
writes the classic files (vocab.txt, vocab.json + merges.txt, or a SentencePiece model) into a
cache directory under the system's temp directory; the tokenizer's `vocab_file` and
`asset_files` are there.

>>> import pathlib
>>> load_tokenizer(str(pathlib.Path(__file__).parents[1] / "assets")).vocab_size
7887
"""

import os

import tensorflow as tf

from bert_keras import families
from bert_keras.errors import InputError
from bert_keras.files import directory_json, read_json
from bert_keras.text import deberta_tokenizer, tokenizer_json, xlm_roberta_tokenizer
from bert_keras.text.byte_bpe_tokenizer import (
    MERGES_FILE,
    VOCAB_FILE,
    ByteBpeTokenizer,
    ModernBertTokenizer,
)
from bert_keras.text.deberta_tokenizer import DebertaV3Tokenizer
from bert_keras.text.metaspace_bpe_tokenizer import SETTINGS_FILE, MetaspaceBpeTokenizer
from bert_keras.text.sentencepiece_tokenizer import (
    MODEL_FILE,
    SentencePieceTokenizer,
    find_model_file,
)
from bert_keras.text.tokenizer import WordPieceTokenizer
from bert_keras.text.xlm_roberta_tokenizer import XlmRobertaTokenizer

CONFIG_FILE = "config.json"  # transformers' model config: its model_type names the family


def load_tokenizer(path, lower_case=None):
    """The tokenizer of a checkpoint or task directory; `lower_case` overrides the casing the
    directory says (WordPiece, SentencePiece).

    With a transformers `config.json`: its family's tokenizer (an InputError naming the
    directory, the model_type and the files found vs expected when only another family's
    tokenizer files are there). Without: XlmRobertaTokenizer (sentencepiece.bpe.model),
    DebertaV3Tokenizer (spm.model), SentencePieceTokenizer (spiece.model or Google's *.model,
    ALBERT), WordPieceTokenizer (vocab.txt) or ByteBpeTokenizer (vocab.json + merges.txt,
    RoBERTa; ModernBertTokenizer when the vocab has ModernBERT's [CLS] and no <s>;
    MetaspaceBpeTokenizer beside a metaspace_bpe.json, mmBERT's Gemma-style BPE), in that
    order. Either way a directory with none of them but a `tokenizer.json` (WordPiece,
    byte-level BPE, XLM-R's or DeBERTa's Unigram) is converted to them first
    (`tokenizer_json.convert`, cached)."""
    path = os.fspath(path)
    if tf.io.gfile.exists(os.path.join(path, CONFIG_FILE)):
        return _family_tokenizer(path, _family(path), lower_case)
    if _has(path, xlm_roberta_tokenizer.MODEL_FILE):
        return _load(XlmRobertaTokenizer, path, lower_case)
    if _has(path, deberta_tokenizer.MODEL_FILE):
        return _load(DebertaV3Tokenizer, path, lower_case)
    if find_model_file(path):
        return _load(SentencePieceTokenizer, path, lower_case)
    if _has(path, "vocab.txt"):
        return _load(WordPieceTokenizer, path, lower_case)
    if _has(path, VOCAB_FILE) and _has(path, MERGES_FILE):
        return _load(_byte_bpe_class(path), path, lower_case)
    if _has(path, tokenizer_json.TOKENIZER_JSON):
        return _converted(path, lambda converted: load_tokenizer(converted, lower_case))
    raise FileNotFoundError(f"{path} has no tokenizer: expected vocab.txt (WordPiece), "
                            f"{MODEL_FILE} or {xlm_roberta_tokenizer.MODEL_FILE} "
                            f"(SentencePiece), {VOCAB_FILE} + {MERGES_FILE} "
                            f"(byte-level BPE) or {tokenizer_json.TOKENIZER_JSON}.")


def _byte_bpe_class(path):
    """The byte-level BPE class of a directory without config.json (a task or encoder
    directory of ours): ModernBERT's when its vocab.json names [CLS] and no <s>."""
    if _has(path, SETTINGS_FILE):
        return MetaspaceBpeTokenizer
    vocab = read_json(os.path.join(path, VOCAB_FILE))
    modern = ModernBertTokenizer.special_tokens["cls"]
    if modern in vocab and ByteBpeTokenizer.special_tokens["cls"] not in vocab:
        return ModernBertTokenizer
    return ByteBpeTokenizer


def _has(path, name):
    return tf.io.gfile.exists(os.path.join(path, name))


def _family(path):
    """The family module that `path`/config.json names; InputError naming the file."""
    config = directory_json(path, CONFIG_FILE)  # once, for a files.KnownDirectory
    return families.family_of_config(config, os.path.join(path, CONFIG_FILE))


def _family_tokenizer(path, family, lower_case, source=None):
    """`family`'s tokenizer from `path` (or, for a converted tokenizer.json, from its cache
    directory `path` of directory `source`)."""
    source = source or path
    if all(_has(path, name) for name in family.TOKENIZER_FILES):
        return _load(family.TOKENIZER, path, lower_case)
    found = [name for name in families.tokenizer_files() if _has(path, name)]
    if not found and source == path and _has(path, tokenizer_json.TOKENIZER_JSON):
        return _converted(path, lambda converted: _family_tokenizer(
            converted, family, lower_case, source=path))
    if not found:
        raise FileNotFoundError(
            f"{source} has no tokenizer: its {CONFIG_FILE} says model_type "
            f"{family.MODEL_TYPE!r}, whose tokenizer reads {' + '.join(family.TOKENIZER_FILES)} "
            f"(or a {tokenizer_json.TOKENIZER_JSON} of them).")
    raise InputError(
        f"{source}: {CONFIG_FILE} says model_type {family.MODEL_TYPE!r}, whose tokenizer reads "
        f"{' + '.join(family.TOKENIZER_FILES)}, but the tokenizer files found are "
        f"{' + '.join(found)} (another family's): the tokenizer does not belong to this model.")


def _converted(path, load):
    """`load(directory)` of the classic files converted from `path`'s tokenizer.json, with an
    InputError naming both."""
    converted = tokenizer_json.convert(path)
    try:
        return load(converted)
    except InputError as e:
        source = os.path.join(path, tokenizer_json.TOKENIZER_JSON)
        raise InputError(f"{source} (converted to {converted}): {e}") from e


def _load(tokenizer_class, path, lower_case):
    """`tokenizer_class.from_pretrained(path)`, its casing overridden by `lower_case` where the
    class has one (byte-level BPE is cased)."""
    if tokenizer_class is WordPieceTokenizer:
        kwargs = {} if lower_case is None else dict(lower_case=lower_case)
        return WordPieceTokenizer.from_pretrained(path, **kwargs)
    if tokenizer_class is ModernBertTokenizer and _has(path, SETTINGS_FILE):
        tokenizer_class = MetaspaceBpeTokenizer  # ModernBERT's Gemma-style kind (mmBERT)
    tokenizer = tokenizer_class.from_pretrained(path)
    if (tokenizer_class is SentencePieceTokenizer and lower_case is not None
            and lower_case != tokenizer.lower_case):
        return SentencePieceTokenizer(tokenizer.vocab_file, lower_case=lower_case,
                                      pair_type_ids=tokenizer.pair_type_ids)
    return tokenizer


def tokenizer_difference(theirs, ours):
    """How tokenizer `ours` would give other ids or packings than `theirs` (the kind, the
    packing of pairs, the vocabulary's size or first differing entry, the casing), as words
    for an error message; None when they tokenize alike."""
    if type(theirs) is not type(ours):
        return (f"a {type(theirs).__name__} ({theirs.vocab_file}) against a "
                f"{type(ours).__name__} ({ours.vocab_file})")
    packing = lambda t: (t.separators_between, bool(t.pair_type_ids))  # noqa: E731
    if packing(theirs) != packing(ours):
        return (f"pairs packed with (separators, type ids) {packing(theirs)} against "
                f"{packing(ours)}")
    if theirs.vocab_size != ours.vocab_size:
        return f"vocabularies of {theirs.vocab_size:,} and {ours.vocab_size:,} entries"
    differ = [i for i, (a, b) in enumerate(zip(theirs.vocab, ours.vocab)) if a != b]
    if differ:
        i = differ[0]
        return (f"vocabularies that differ in {len(differ):,} entries, first id {i}: "
                f"{theirs.vocab[i]!r} against {ours.vocab[i]!r}")
    if bool(theirs.lower_case) != bool(ours.lower_case):
        return f"lower_case={theirs.lower_case} against lower_case={ours.lower_case}"
    return None
