"""Reads and writes `.safetensors` files with numpy alone (no torch, no safetensors package).

The format: an 8-byte little-endian header length, a JSON header mapping each tensor name to
its dtype, shape and byte range, then the raw little-endian data.
"""

import json
import os
import struct

import numpy as np

from bert_keras.errors import InputError

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
           "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def _bfloat16_to_float32(raw):
    # bfloat16 is the top half of a float32: shift the 16 bits into place.
    return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)


def _read_header(f, path, file_size):
    head = f.read(8)
    if len(head) < 8:
        raise InputError(f"{path} is not a safetensors file: only {len(head)} bytes.")
    (header_size,) = struct.unpack("<Q", head)
    if header_size > file_size - 8:
        raise InputError(f"{path} is not a safetensors file: header size {header_size} "
                         f"exceeds the file size {file_size}.")
    try:
        header = json.loads(f.read(header_size))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path} is not a safetensors file: its header is not JSON ({e}).") from None
    if not isinstance(header, dict):
        raise InputError(f"{path} is not a safetensors file: its header is not a JSON object.")
    header.pop("__metadata__", None)
    return header, 8 + header_size


def _check_entry(path, name, info, body_size):
    """A header entry's byte range fits the file and matches its dtype and shape."""
    try:
        start, end = (int(v) for v in info["data_offsets"])
        dtype, shape = info["dtype"], [int(d) for d in info["shape"]]
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{path}: the header entry of tensor {name} is malformed: {info!r}.") from None
    if dtype != "BF16" and dtype not in _DTYPES:
        raise InputError(f"{path}: tensor {name} has unsupported dtype {dtype}.")
    if end > body_size:
        raise InputError(f"{path} is truncated: tensor {name} ends at byte {end} of the data "
                         f"but the file holds {body_size} bytes of data (an interrupted "
                         "download or copy?).")
    width = 2 if dtype == "BF16" else np.dtype(_DTYPES[dtype]).itemsize
    if not 0 <= start <= end or end - start != width * int(np.prod(shape)):
        raise InputError(f"{path} is corrupt: tensor {name} ({dtype}, shape {shape}) has "
                         f"{end - start} bytes at [{start}, {end}).")
    return start, end, dtype, shape


def tensor_names(path):
    """The tensor names of a safetensors file (its header only is read)."""
    with open(path, "rb") as f:
        return sorted(_read_header(f, path, os.path.getsize(path))[0])


def read_safetensors(path):
    """{name: numpy array} of every tensor in the file (bfloat16 widened to float32).

    >>> tensors = read_safetensors("model.safetensors")  # doctest: +SKIP
    """
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "rb") as f:
        header, body_start = _read_header(f, path, len(data))
    body = memoryview(data)[body_start:]
    tensors = {}
    for name, info in header.items():
        start, end, dtype, shape = _check_entry(path, name, info, len(body))
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

    >>> write_safetensors("/tmp/x.safetensors", {"a": np.zeros((2, 3), "float32")})  # doctest: +SKIP
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
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded)
        for raw in chunks:
            f.write(raw)
    os.replace(tmp, path)
