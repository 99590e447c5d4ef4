"""XLM-RoBERTa's tokenizer: a SentencePiece Unigram model (`sentencepiece.bpe.model`, despite
its name) under fairseq's vocabulary, in-graph through `SentencePieceTokenizer` (tf-text).

fairseq's ids: `<s>`=0, `<pad>`=1, `</s>`=2, `<unk>`=3, then the model's pieces from its 4th on
(SentencePiece's `<unk>`, `<s>`, `</s>` are its ids 0-2) shifted by one (fairseq's offset),
SentencePiece's `<unk>` mapped to 3, and `<mask>` the last id: transformers'
`XLMRobertaTokenizer` (backed by tokenizers in transformers 5; its sentencepiece "slow" class
of transformers 4 gives the same ids on tests/fixtures/families/xlm_roberta/multilingual.json).
Pairs are packed as RoBERTa's `<s> A </s></s> B </s>`, with no token types.

The text is normalized as transformers does it: whitespace runs split the words (and are
dropped), then the model's own normalization rule (XLM-R's `nmt_nfkc`: NFKC, control
characters removed), which tf-text applies from the .model file; no lower-casing, no quote
replacement (ALBERT's). A piece starting with "▁" starts a word (`word_ids()`).

Known differences: special tokens written in a text ("<mask>") are matched as those tokens by
transformers, split like other text here; `SentencePieceTokenizer`'s known deviations hold
(code points newer than tokenizers' Unicode 9 tables, some runs of a repeated root, the
offsets of a text that starts with a character the charsmap deletes). Pieces of equal score
in a run of one repeated character are put in transformers 5's order, which transformers 4's
slow tokenizer (SentencePiece's order) may not give.

A transformers 5 directory may hold tokenizer.json alone: `tokenizer_json.convert` rebuilds
sentencepiece.bpe.model from its pieces, scores and charsmap (`tokenizers.load_tokenizer`).

Example (the test fixture's small model: NFKC folds "ＡＢＣ", "🦄" is unknown):
>>> import pathlib
>>> path = pathlib.Path(__file__).parents[2] / "tests" / "fixtures" / "families" / "xlm_roberta"
>>> tok = XlmRobertaTokenizer.from_pretrained(str(path))
>>> ids = tok.tokenize(["Größe ＡＢＣ 🦄"])[0].numpy().tolist()
>>> [tok.vocab[i] for i in ids]
['▁G', 'r', 'ö', 'ß', 'e', '▁A', 'B', 'C', '▁', '<unk>']
"""

import json
import os

import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.text.sentencepiece_tokenizer import SentencePieceTokenizer

MODEL_FILE = "sentencepiece.bpe.model"
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq's ids 0-3
MASK_TOKEN = "<mask>"  # the last id
MODEL_SPECIAL_PIECES = ["<unk>", "<s>", "</s>"]  # the model's pieces 0-2 (SentencePiece's)
FAIRSEQ_OFFSET = 1  # our id of the model's piece i >= 3: i + 1
_UNK_PIECE = 0


class XlmRobertaTokenizer(SentencePieceTokenizer):
    """XLM-RoBERTa's SentencePiece model with fairseq's ids (see the module).

    Args:
      model_file: the `sentencepiece.bpe.model` file.
    """

    separators_between = 2  # <s> A </s></s> B </s>
    pair_quotes = False

    def __init__(self, model_file):
        super().__init__(model_file, lower_case=False, pair_type_ids=False)

    def _vocab_of(self, pieces):
        if pieces[:3] != MODEL_SPECIAL_PIECES:
            raise InputError(f"{self.vocab_file}: the first pieces of XLM-RoBERTa's SentencePiece "
                             f"model are {MODEL_SPECIAL_PIECES}, not {pieces[:3]} (another "
                             "family's model?).")
        return list(SPECIAL_TOKENS) + pieces[3:] + [MASK_TOKEN]

    def _set_special_ids(self, pieces):
        self.cls_id, self.pad_id, self.sep_id, self.unk_id = range(len(SPECIAL_TOKENS))
        self.mask_id = self.vocab_size - 1

    def _ids_of_pieces(self, piece_ids):
        flat = piece_ids.flat_values
        return piece_ids.with_flat_values(
            tf.where(flat == _UNK_PIECE, self.unk_id, flat + FAIRSEQ_OFFSET))

    def _pieces_of_ids(self, ids):
        flat = ids.flat_values
        return ids.with_flat_values(
            tf.where(flat == self.unk_id, _UNK_PIECE, flat - FAIRSEQ_OFFSET))

    @classmethod
    def from_pretrained(cls, path):
        """The tokenizer of a directory with a `sentencepiece.bpe.model` (transformers' XLM-R
        directories, ours)."""
        model_file = os.path.join(path, MODEL_FILE)
        if not tf.io.gfile.exists(model_file):
            raise FileNotFoundError(f"{path} has no {MODEL_FILE}.")
        return cls(model_file)

    @property
    def asset_files(self):
        """{name in an export's assets/: file} of the files that define this tokenizer."""
        return {MODEL_FILE: self.vocab_file}

    def save(self, directory):
        """Writes sentencepiece.bpe.model and a tokenizer_config.json that transformers reads
        (its `XLMRobertaTokenizer` and special tokens) to `directory`."""
        tf.io.gfile.copy(self.vocab_file, os.path.join(directory, MODEL_FILE), True)
        config = dict(tokenizer_class="XLMRobertaTokenizer", bos_token="<s>", cls_token="<s>",
                      eos_token="</s>", sep_token="</s>", unk_token="<unk>", pad_token="<pad>",
                      mask_token=MASK_TOKEN, add_prefix_space=True,
                      model_input_names=["input_ids", "attention_mask"])
        with tf.io.gfile.GFile(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            f.write(json.dumps(config, indent=1) + "\n")
