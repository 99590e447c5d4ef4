"""Reads and writes `.safetensors` files with numpy alone (no torch, no safetensors package).

The format: an 8-byte little-endian header length, a JSON header mapping each tensor name to
its dtype, shape and byte range, then the raw little-endian data.
"""

import io
import json
import math
import struct

import numpy as np

from bert_keras.errors import InputError
from bert_keras.files import atomic_path, file_size, open_file

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
           "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def _bfloat16_to_float32(raw):
    # bfloat16 is the top half of a float32: shift the 16 bits into place.
    return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)


# safetensors' own limit: a header larger than this is damage, not a model.
MAX_HEADER_SIZE = 100_000_000
# Integer tensors a checkpoint may hold: transformers' constant buffers. Any other tensor is a
# weight, read into a float variable: integers there are damage (or a quantized model), never
# a value to cast.
INTEGER_BUFFERS = ("position_ids", "token_type_ids")
_FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")


def _read_header(f, path, file_size):
    head = f.read(8)
    if len(head) < 8:
        raise InputError(f"{path} is not a safetensors file: only {len(head)} bytes.")
    (header_size,) = struct.unpack("<Q", head)
    if header_size > file_size - 8:
        raise InputError(f"{path} is not a safetensors file: header size {header_size} "
                         f"exceeds the file size {file_size}.")
    if header_size > MAX_HEADER_SIZE:
        raise InputError(f"{path} is not a safetensors file: header size {header_size:,} is over "
                         f"the format's limit of {MAX_HEADER_SIZE:,} bytes.")
    try:
        header = json.loads(f.read(header_size))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(
            f"{path} is not a safetensors file: its header is not JSON ({e}).") from None
    if not isinstance(header, dict):
        raise InputError(f"{path} is not a safetensors file: its header is not a JSON object.")
    header.pop("__metadata__", None)
    return header, 8 + header_size


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_entry(path, name, info, body_size):
    """A header entry's byte range fits the file and matches its dtype and shape; an integer
    dtype only for `INTEGER_BUFFERS`."""
    offsets = info.get("data_offsets") if isinstance(info, dict) else None
    shape = info.get("shape") if isinstance(info, dict) else None
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(map(_is_count, offsets))
            or not isinstance(shape, list) or not all(map(_is_count, shape))):
        raise InputError(f"{path}: the header entry of tensor {name} is malformed: {info!r}.")
    (start, end), dtype = offsets, info.get("dtype")
    if dtype != "BF16" and dtype not in _DTYPES:
        raise InputError(f"{path}: tensor {name} has unsupported dtype {dtype}.")
    if dtype not in _FLOAT_DTYPES and name.rsplit(".", 1)[-1] not in INTEGER_BUFFERS:
        raise InputError(f"{path}: tensor {name} is stored as {dtype}, but it is a weight: a "
                         "weight must be a float tensor (F32, F16, BF16 or F64); the file is "
                         "damaged, or quantized, which bert_keras does not read.")
    if end > body_size:
        raise InputError(f"{path} is truncated: tensor {name} ends at byte {end} of the data "
                         f"but the file holds {body_size} bytes of data (an interrupted "
                         "download or copy?).")
    width = 2 if dtype == "BF16" else np.dtype(_DTYPES[dtype]).itemsize
    if not start <= end or end - start != width * math.prod(shape):
        raise InputError(f"{path} is corrupt: tensor {name} ({dtype}, shape {shape}) has "
                         f"{end - start} bytes at [{start}, {end}).")
    return start, end, dtype, shape


def _check_layout(path, ranges, body_size):
    """The tensors' byte ranges ({name: (start, end)}) tile the data exactly, as the format
    requires: no two overlap, no byte is left between them or after the last."""
    position, previous = 0, None
    for name, (start, end) in sorted(ranges.items(), key=lambda item: item[1]):
        if start < position:
            raise InputError(f"{path} is corrupt: tensors {previous} and {name} overlap (bytes "
                             f"[{start}, {min(end, position)}) of the data are in both).")
        if start > position:
            raise InputError(f"{path} is corrupt: bytes [{position}, {start}) of the data, "
                             f"before tensor {name}, belong to no tensor.")
        position, previous = end, name
    if position != body_size:
        raise InputError(f"{path} is corrupt: it holds {body_size - position:,} bytes of data "
                         "after its last tensor (a damaged file, or two files joined?).")


def tensor_names(path):
    """The tensor names of a safetensors file (its header only is read)."""
    with open_file(path, "rb") as f:
        return sorted(_read_header(f, path, file_size(path))[0])


def read_safetensors(path):
    """{name: numpy array} of every tensor in the file (bfloat16 widened to float32); an
    InputError naming the file (and the tensor) for a damaged one: a header that is not the
    format's, a tensor cut off, of the wrong byte size, overlapping another, or a weight of an
    integer dtype.

    >>> tensors = read_safetensors("model.safetensors")  # doctest: +SKIP
    """
    with open_file(path, "rb") as f:
        data = f.read()
    header, body_start = _read_header(io.BytesIO(data), path, len(data))
    body = memoryview(data)[body_start:]
    entries = {name: _check_entry(path, name, info, len(body)) for name, info in header.items()}
    _check_layout(path, {name: entry[:2] for name, entry in entries.items()}, len(body))
    tensors = {}
    for name, (start, end, dtype, shape) in entries.items():
        raw = body[start:end]
        if dtype == "BF16":
            array = _bfloat16_to_float32(raw)
        else:
            array = np.frombuffer(raw, np.dtype(_DTYPES[dtype]).newbyteorder("<"))
        tensors[name] = array.reshape(shape)
    return tensors


_DTYPE_NAMES = {np.dtype(v).name: k for k, v in _DTYPES.items()}


def write_safetensors(path, tensors):
    """Writes {name: numpy array} (float32, int, ...; little-endian) as a safetensors file.

    >>> write_safetensors("/tmp/x.safetensors",
    ...                   {"a": np.zeros((2, 3), "float32")})  # doctest: +SKIP
    """
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        if array.dtype.name not in _DTYPE_NAMES:
            raise InputError(f"{path}: tensor {name} has unsupported dtype {array.dtype}.")
        raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _DTYPE_NAMES[array.dtype.name], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)  # The format aligns the data to 8 bytes.
    with atomic_path(path) as tmp, open_file(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded)
        for raw in chunks:
            f.write(raw)
