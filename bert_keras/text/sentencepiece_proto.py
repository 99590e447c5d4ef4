"""A SentencePiece Unigram model file (a serialized `ModelProto`) written from its parts: what
`tokenizer_json.py` rebuilds from a `tokenizer.json` that holds no `.model` file (XLM-R's,
DeBERTa's), so that tf-text's SentencepieceTokenizer runs it in the graph.

The fields written (sentencepiece_model.proto): the pieces (1: piece, score as float32, type),
the trainer spec (2: model_type UNIGRAM, vocab_size, and the ids and pieces of <unk>, <s>,
</s>, <pad>: SentencePiece's `unk_id()`, `bos_id()`, ...), and the normalizer spec (3: the
precompiled charsmap, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, as
spm_train writes them: "▁" before the text, whitespace runs collapsed and the ends stripped,
spaces as "▁").
A charsmap of b"" normalizes nothing beyond the whitespace rules.

>>> from bert_keras.text.sentencepiece_model import load_model
>>> model = unigram_model([("<unk>", 0.0, UNKNOWN), ("▁a", -1.0, NORMAL), ("b", -2.0, NORMAL)],
...                       charsmap=b"", bos_id=-1, eos_id=-1)
>>> sp, size = load_model(model, "example.model")
>>> size, sp.tokenize(["  a  ab "]).to_list()
(3, [[1, 1, 2]])
"""

import struct

from bert_keras.protobuf_wire import length_delimited, varint

# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED = 1, 2, 3, 4
_UNIGRAM = 1  # TrainerSpec.ModelType
# TrainerSpec field numbers.
_MODEL_TYPE, _VOCAB_SIZE = 3, 4
_SPECIAL_ID = 40  # unk_id, bos_id, eos_id, pad_id: 40-43; their pieces' strings: 45-48
_SPECIAL_PIECE = 45


def unigram_model(pieces, charsmap, unk_id=0, bos_id=1, eos_id=2, pad_id=-1):
    """The bytes of a SentencePiece Unigram model with `pieces` [(piece, score, type)] in id
    order, the normalizer's precompiled `charsmap` (bytes) and the special ids of its trainer
    spec (ids into `pieces`, -1 for none; SentencePiece's defaults)."""
    out = [length_delimited(1, length_delimited(1, piece.encode("utf-8"))
                            + _float_field(2, score) + _int_field(3, kind))
           for piece, score, kind in pieces]
    trainer = [_int_field(_MODEL_TYPE, _UNIGRAM), _int_field(_VOCAB_SIZE, len(pieces))]
    for offset, special in enumerate((unk_id, bos_id, eos_id, pad_id)):
        trainer.append(_int_field(_SPECIAL_ID + offset, special))
        if special >= 0:  # its piece too (SentencePiece's bos_id() looks the piece up)
            trainer.append(length_delimited(_SPECIAL_PIECE + offset,
                                            pieces[special][0].encode("utf-8")))
    out.append(length_delimited(2, b"".join(trainer)))
    normalizer = [length_delimited(2, charsmap)] + [_int_field(n, 1) for n in (3, 4, 5)]
    out.append(length_delimited(3, b"".join(normalizer)))
    return b"".join(out)


def _int_field(number, value):
    """An int32 / enum / bool field (wire type 0); a negative int32 is 10 bytes, as protobuf
    writes it."""
    return varint(number << 3) + varint(value & (2**64 - 1) if value < 0 else value)


def _float_field(number, value):
    """A float field (wire type 5: 4 bytes, little-endian)."""
    return varint(number << 3 | 5) + struct.pack("<f", value)
