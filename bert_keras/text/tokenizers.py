"""The tokenizer of a checkpoint directory, picked from its files.

Every tokenizer has the same small protocol: `tokenize(texts)` -> ids [B, (pieces)],
`detokenize(ids)`, the special-token ids (`cls_id`, `sep_id`, `pad_id`, `mask_id`, `unk_id`),
`vocab` and `vocab_size`, `lower_case`, `vocab_file` (its main file; exports ship all of
`asset_files`), `separators_between` (the packing of pairs), `save(directory)` and
`from_pretrained(directory)`, and `tokenize_with_offsets` / `tokenize_words_with_offsets`
(byte offsets and transformers' words; tagging and span QA need them).

A directory with none of the classic files but a Hugging Face `tokenizer.json` (transformers 5
may save only that and `tokenizer_config.json`) is read through `tokenizer_json.convert`, which
writes the classic files (vocab.txt, or vocab.json + merges.txt) into a cache directory under
the system's temp directory; the tokenizer's `vocab_file` and `asset_files` are there.

>>> import pathlib
>>> load_tokenizer(str(pathlib.Path(__file__).parents[1] / "assets")).vocab_size
7887
"""

import os

import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.text import tokenizer_json
from bert_keras.text.byte_bpe_tokenizer import MERGES_FILE, VOCAB_FILE, ByteBpeTokenizer
from bert_keras.text.sentencepiece_tokenizer import (
    MODEL_FILE, SentencePieceTokenizer, find_model_file)
from bert_keras.text.tokenizer import BertTokenizer


def load_tokenizer(path, lower_case=None):
    """BertTokenizer (vocab.txt), SentencePieceTokenizer (spiece.model or Google's *.model,
    ALBERT) or
    ByteBpeTokenizer (vocab.json + merges.txt, RoBERTa) of a checkpoint or task directory, in
    that order; a directory with none of them but a `tokenizer.json` (WordPiece or byte-level
    BPE) is converted to them first (`tokenizer_json.convert`, cached);
    `lower_case` overrides the casing the directory says (WordPiece, SentencePiece)."""
    path = os.fspath(path)
    has = lambda name: tf.io.gfile.exists(os.path.join(path, name))  # noqa: E731
    if find_model_file(path):
        tokenizer = SentencePieceTokenizer.from_pretrained(path)
        if lower_case is None or lower_case == tokenizer.lower_case:
            return tokenizer
        return SentencePieceTokenizer(tokenizer.vocab_file, lower_case=lower_case,
                                      pair_type_ids=tokenizer.pair_type_ids)
    if has("vocab.txt"):
        kwargs = {} if lower_case is None else dict(lower_case=lower_case)
        return BertTokenizer.from_pretrained(path, **kwargs)
    if has(VOCAB_FILE) and has(MERGES_FILE):
        return ByteBpeTokenizer.from_pretrained(path)
    if has(tokenizer_json.TOKENIZER_JSON):
        converted = tokenizer_json.convert(path)
        try:
            return load_tokenizer(converted, lower_case=lower_case)
        except InputError as e:
            source = os.path.join(path, tokenizer_json.TOKENIZER_JSON)
            raise InputError(f"{source} (converted to {converted}): {e}") from e
    raise FileNotFoundError(f"{path} has no tokenizer: expected vocab.txt (WordPiece), "
                            f"{MODEL_FILE} (SentencePiece), {VOCAB_FILE} + {MERGES_FILE} "
                            f"(byte-level BPE) or {tokenizer_json.TOKENIZER_JSON}.")
