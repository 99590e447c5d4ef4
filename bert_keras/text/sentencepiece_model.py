"""Loading a SentencePiece model file (`.model`, a serialized ModelProto) for
`SentencePieceTokenizer`: its bytes checked as a whole first, so a damaged or truncated file
is an InputError naming it, never TensorFlow's op error and never a model with fewer pieces.

>>> load_model(b"", "spiece.model")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
bert_keras.errors.InputError: spiece.model is empty, not a SentencePiece model
(an interrupted download or copy?)
"""

import re

import tensorflow as tf
import tensorflow_text as tf_text

from bert_keras.errors import InputError


def load_model(model, path):
    """(tf-text SentencepieceTokenizer, vocab size) of the bytes `model` of file `path`;
    InputError naming the file for a damaged one (never TensorFlow's op error)."""
    _check_model_bytes(model, path)
    try:
        sp = tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        return sp, int(sp.vocab_size())
    except (tf.errors.InvalidArgumentError, tf.errors.InternalError) as e:
        raise InputError(f"{path} is damaged or not a SentencePiece model: SentencePiece cannot "
                         f"load it ({_op_reason(e)}).") from None


def _op_reason(error):
    """SentencePiece's own words in a TensorFlow op error, without TF's decorations."""
    if "ParseFromArray" in error.message:
        return "its protobuf does not parse"
    reason = re.sub(r"\{\{function_node [^}]*\}\}|\[Op:[^\]]*\].*|external/\S+ ", "",
                    error.message, flags=re.S)
    return " ".join(reason.split()).rstrip(".") or type(error).__name__


def _check_model_bytes(model, path):
    """InputError naming `path` unless `model` is a whole serialized ModelProto: top-level
    fields that run exactly to its end, with the pieces (field 1) and the normalizer spec
    (field 3). spm_train writes the normalizer spec after all pieces, so a file cut short at a
    field boundary (which protobuf would still parse, with fewer pieces or no normalization)
    lacks it."""
    if not model:
        raise InputError(f"{path} is empty, not a SentencePiece model (an interrupted download "
                         "or copy?)")
    fields, position = set(), 0
    while position < len(model):
        field, position = next_field(model, position, path)
        fields.add(field)
    missing = [name for number, name in ((1, "pieces"), (3, "normalizer spec"))
               if number not in fields]
    if missing:
        raise InputError(f"{path} is cut short or not a SentencePiece model: it has no "
                         f"{' and no '.join(missing)}.")


def next_field(data, position, path):
    """(field number, position after it) of the protobuf field at `position` of `data`."""
    start = position
    tag, position = _varint(data, position, path)
    field, wire_type = tag >> 3, tag & 7
    if wire_type == 0:
        _, position = _varint(data, position, path)
    elif wire_type == 2:
        size, position = _varint(data, position, path)
        position += size
    elif wire_type in (1, 5):
        position += 8 if wire_type == 1 else 4
    else:
        raise InputError(f"{path} is not a SentencePiece model (damaged or another kind of file): "
                         f"bad protobuf data at byte {start}.")
    if field == 0 or position > len(data):
        raise InputError(f"{path} is cut short or damaged: the protobuf field at byte {start} "
                         f"runs past its end ({len(data):,} bytes; an interrupted download or "
                         "copy?).")
    return field, position


def _varint(data, position, path):
    """(value, position after it) of the protobuf varint at `position` of `data`."""
    value, shift = 0, 0
    for offset, byte in enumerate(data[position:position + 10]):
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, position + offset + 1
    raise InputError(f"{path} is cut short or damaged: bad protobuf data at byte {position}.")
