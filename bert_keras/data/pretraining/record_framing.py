"""TFRecord framing read at a file's end: does the file end where a record ends?

A TFRecord is [length: uint64 LE][masked CRC-32C of those 8 bytes: uint32][data][masked CRC-32C
of data: uint32]. A cut-off copy (a failed upload, a full disk) ends inside a record, which TF
finds only on reading that far, hours into training. Reading the last bytes finds it at start-up:
a whole file has a valid header whose record ends exactly at the end, and that header lies in its
last record's bytes. A file that does not end so may still be a file TF reads (a last record
longer than the bytes read): callers let TF confirm (`records.cut_off_file`).

Example:
    >>> import os, tempfile, tensorflow as tf
    >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...     for text in (b"one", b"two"):
    ...         writer.write(text)
    >>> ends_with_a_whole_record(path)
    True
    >>> with open(path, "r+b") as f:
    ...     _ = f.truncate(os.path.getsize(path) - 1)  # a cut-off copy
    >>> ends_with_a_whole_record(path)
    False
"""

import numpy as np

from bert_keras.files import file_size, open_file

HEADER = 12  # length + its CRC
FOOTER = 4  # the data's CRC
TAIL_BYTES = 1 << 20  # at least this much of a file's end is read: many pretraining records
MAX_RECORD = 1 << 23  # so at most 8 x 8 MiB are read, whatever the first header says


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def masked_crc32c(data):
    """TFRecord's masked CRC-32C (Castagnoli) of `data` bytes.

    >>> hex(masked_crc32c((3).to_bytes(8, "little")))
    '0xe4999b0'
    """
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def ends_with_a_whole_record(path):
    """False if no valid record header in `path`'s last bytes has its record end at the file's
    end (the last ~1 MiB, or 8 first records' worth if more, are read). True for an empty file."""
    size = file_size(path)
    if size == 0:
        return True
    with open_file(path, "rb") as f:
        # A corrupt first header is no length (TF reports it on its first read).
        first_length = _header_length(f.read(HEADER)) or 0
        tail_bytes = max(TAIL_BYTES, 8 * (min(first_length, MAX_RECORD) + HEADER + FOOTER))
        start = max(0, size - tail_bytes)
        f.seek(start)
        tail = f.read()
    for offset in range(min(8, len(tail))):  # header positions p as 8-byte words from offset
        words = np.frombuffer(tail, "<u8", count=max(0, (len(tail) - offset) // 8),
                              offset=offset)
        positions = start + offset + 8 * np.arange(len(words), dtype=np.int64)
        lengths = size - HEADER - FOOTER - positions  # the length that ends the record there
        fits = lengths >= 0
        for p in positions[fits][words[fits] == lengths[fits].astype(np.uint64)]:
            at = int(p) - start
            if _header_length(tail[at:at + HEADER]) is not None:
                return True
    return False


def _header_length(header):
    """The record length in 12 header bytes; None if they are not a valid header."""
    if len(header) < HEADER or masked_crc32c(header[:8]) != int.from_bytes(header[8:], "little"):
        return None
    return int.from_bytes(header[:8], "little")
