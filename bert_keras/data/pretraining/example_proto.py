"""In-graph serialization of `tf.train.Example`s made of fixed-length int64 and float lists.

The static pretraining tool writes tens of thousands of examples per second; building each
Example with nested `tf.io.encode_proto` calls (list -> Feature -> map entry -> Features ->
Example, for every feature) was its costliest step. Here only the packed lists go through
`encode_proto`; the nesting is written directly in protobuf's wire format: a length-delimited
field is its tag byte, the varint of its length and its bytes, and a `Features` message is the
concatenation of its map entries. Map entries come in sorted key order, so the bytes equal the
protobuf library's `SerializeToString(deterministic=True)` (tested against it).

Legend: B = batch, L = values per feature.
"""

import sys

import tensorflow as tf

from bert_keras.protobuf_wire import varint

_LENGTH_DELIMITED = {  # field tag bytes (field number << 3 | wire type 2)
    "Example.features": b"\x0a", "Features.feature": b"\x0a", "FeatureEntry.key": b"\x0a",
    "FeatureEntry.value": b"\x12", "Feature.float_list": b"\x12", "Feature.int64_list": b"\x1a",
    "List.value": b"\x0a",  # Int64List / FloatList values, packed
}
_MAX_INT64_VARINT_BYTES = 10


def _encode_list(value, is_float):
    """[B, L] -> [B] serialized Int64List / FloatList (packed)."""
    value = tf.cast(value, tf.float32 if is_float else tf.int64)
    return tf.io.encode_proto(tf.fill([tf.shape(value)[0], 1], tf.shape(value)[1]), [value],
                              ["value"],
                              "tensorflow.FloatList" if is_float else "tensorflow.Int64List")


def _byte_rows(value):
    """uint8 [B, W] -> [B] strings of W bytes: one `serialize_tensor` (its content is the
    bytes in order, at the end) cut by `substr`; ~4x faster than `encode_proto`."""
    n, width = tf.shape(value)[0], tf.shape(value)[1]
    whole = tf.io.serialize_tensor(tf.reshape(value, [-1]))
    start = tf.strings.length(whole) - n * width
    return tf.strings.substr(whole, start + tf.range(n) * width, tf.fill([n], width))


def _packed_list(value, is_float, is_byte):
    """[B, L] -> (parts, length): the serialized packed Int64List / FloatList as pieces to join
    (bytes or [B] strings) and its length in bytes (an int where it is fixed, else [B])."""
    length = value.shape[1]
    if is_float and sys.byteorder == "little":  # fixed32 little-endian, as in memory
        raw = tf.reshape(tf.bitcast(tf.cast(value, tf.float32), tf.uint8), [-1, 4 * length])
    elif is_byte:  # ints in [0, 128) are one-byte varints: the values themselves
        tf.debugging.Assert(tf.reduce_all((value >= 0) & (value < 128)),
                            ["byte features must be in [0, 128)"])
        raw = tf.cast(value, tf.uint8)
    else:
        packed = _encode_list(value, is_float)
        return [packed], tf.strings.length(packed)
    header = _LENGTH_DELIMITED["List.value"] + varint(raw.shape[1])
    return [header, _byte_rows(raw)], len(header) + raw.shape[1]


# Its Python loops run over features and a varint table of thousands of Python ints, never over
# tensors: converted by autograph (a caller's tf.function), tracing took seconds (6.6 s at
# L = 300), against 0.1 s as Python.
@tf.autograph.experimental.do_not_convert
def serialize_examples(features, float_names=(), byte_names=()):
    """Dict of name -> [B, L] tensors (static L) -> tf.string [B] serialized tf.train.Example.

    Features named in `float_names` become float lists, the others int64 lists. Int features
    in `byte_names` must have all values in [0, 128) (checked): they are encoded as raw bytes.

    Example:
    >>> raw = serialize_examples({"ids": tf.constant([[7, 300]]), "w": tf.constant([[1.0]])},
    ...                          float_names=["w"])
    >>> tf.train.Example.FromString(raw.numpy()[0]).features.feature["ids"].int64_list.value
    [7, 300]
    """
    lists, bound = [], 16  # bound: most bytes a Features message can take (table size)
    for name in sorted(features):
        value, is_float = features[name], name in float_names
        if value.shape.rank != 2 or value.shape[1] is None:
            raise ValueError(f"feature {name!r} must have a static shape [B, L], got "
                             f"{value.shape}")
        lists.append((name, is_float, *_packed_list(value, is_float, name in byte_names)))
        bound += 32 + len(name) + value.shape[1] * (4 if is_float else _MAX_INT64_VARINT_BYTES)
    table = [varint(n) for n in range(bound + 1)]
    varints, sizes = tf.constant(table), tf.constant([len(v) for v in table], tf.int32)

    def length_field(length):  # -> (varint of length, its size): constants where length is
        if isinstance(length, int):
            return varint(length), len(varint(length))
        return tf.gather(varints, length), tf.gather(sizes, length)

    parts, total = [], 0  # the Features message's pieces and length
    for name, is_float, list_parts, list_len in lists:
        key = name.encode()
        list_varint, list_size = length_field(list_len)
        feature_len = 1 + list_size + list_len  # tag, length, list
        feature_varint, feature_size = length_field(feature_len)
        entry_len = 1 + len(varint(len(key))) + len(key) + 1 + feature_size + feature_len
        entry_varint, entry_size = length_field(entry_len)
        list_tag = "Feature.float_list" if is_float else "Feature.int64_list"
        parts += [_LENGTH_DELIMITED["Features.feature"], entry_varint,
                  _LENGTH_DELIMITED["FeatureEntry.key"], varint(len(key)), key,
                  _LENGTH_DELIMITED["FeatureEntry.value"], feature_varint,
                  _LENGTH_DELIMITED[list_tag], list_varint] + list_parts
        total += 1 + entry_size + entry_len
    parts = [_LENGTH_DELIMITED["Example.features"], length_field(total)[0]] + parts
    merged = []  # adjacent constant bytes as one join input
    for part in parts:
        if isinstance(part, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += part
        else:
            merged.append(part)
    return tf.strings.join(merged)
