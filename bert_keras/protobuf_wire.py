"""Protobuf's wire format, written by hand where a message is simple enough: the pretraining
TFRecords' `tf.train.Example`s (data/pretraining/example_proto.py) and the export's warmup
`PredictionLog`s (serving/warmup.py), so neither needs the protobuf classes of what it writes.

>>> varint(300)
b'\\xac\\x02'
>>> length_delimited(1, b"ab")  # field 1, wire type 2: tag, length, payload
b'\\n\\x02ab'
"""


def varint(n):
    """Protobuf's base-128 varint of a non-negative int."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if not n:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def length_delimited(number, payload):
    """Field `number` holding the bytes `payload` (wire type 2: a message, string or packed
    list)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload
