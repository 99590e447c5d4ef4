"""The int8 export's check on the task's own data (`--calibration_file`): the int8 copy's
answers against float32's on a few hundred real examples, recorded in the export's metadata.

The int8 export quantizes weights only (per channel, fixed at export), so no activation range
needs calibrating; what real examples still tell is whether the quantized model answers as
the float32 one on the inputs it will serve. The file holds one example per line, its fields
separated by tabs in the order of the export's text inputs (`text`; `text_a<TAB>text_b`;
`question<TAB>context`).

Example:
>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "calibration.tsv")
>>> with open(path, "w") as f:
...     _ = f.write("He left.\\tHe went away.\\nIt rains.\\tThe sun shines.\\n")
>>> read_calibration_file(path, ["text_a", "text_b"])["text_b"]
['He went away.', 'The sun shines.']
"""

import numpy as np
import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.text_files import TextFileError, read_lines

FLAG = "--calibration_file"
MAX_EXAMPLES = 1000  # "a few hundred": more only makes the export slower


def read_calibration_file(path, text_fields=None):
    """{text field: list of texts} of a calibration file (`calibration_examples` of
    `read_calibration_rows`). `text_fields` None: only checks that the file holds text."""
    rows = read_calibration_rows(path)
    return None if text_fields is None else calibration_examples(path, rows, text_fields)


def read_calibration_rows(path):
    """[(line number, [tab-separated fields])] of a calibration file's examples (at most
    MAX_EXAMPLES), read once, before the model loads; InputError in one line naming the flag,
    the file and what is wrong with it."""
    if not path or not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        raise InputError(f"{FLAG}={path}: no such file.")
    rows = []
    try:
        for number, line in read_lines(path, max_bad_share=0):
            if not line.strip():
                continue
            rows.append((number, line.split("\t")))
            if len(rows) >= MAX_EXAMPLES:
                break
    except TextFileError as e:
        raise InputError(f"{FLAG}={path}: {e}") from None
    if not rows:
        raise InputError(f"{FLAG}={path}: no examples (the file has no text).")
    return rows


def calibration_examples(path, rows, text_fields):
    """{text field: list of texts} of `rows` (`read_calibration_rows` of `path`); InputError
    for a line without one field per export input."""
    for number, fields in rows:
        if len(fields) != len(text_fields):
            raise InputError(
                f"{FLAG}={path} line {number}: {len(fields)} tab-separated fields, expected "
                f"{len(text_fields)} ({', '.join(text_fields)}: the export's inputs).")
    return {name: [fields[i] for _, fields in rows] for i, name in enumerate(text_fields)}


def compare_outputs(reference, candidate, examples, batch_size=32):
    """How `candidate`'s serve (ServingFunctions, int8) answers against `reference`'s
    (float32) on `examples` ({text field: texts}): {"examples": N, "agreement": {integer
    output: share of rows answered identically}, "max_abs_difference": {float output: the
    largest difference}}."""
    fields = list(examples)
    count = len(examples[fields[0]])
    agree, differences = {}, {}
    for start in range(0, count, batch_size):
        texts = [tf.constant(examples[name][start:start + batch_size]) for name in fields]
        want, got = reference.serve(*texts), candidate.serve(*texts)
        for key, value in want.items():
            if value.dtype == tf.string:
                continue  # the names of the integer outputs
            a, b = value.numpy(), got[key].numpy()
            if value.dtype.is_integer:
                same = (a == b).reshape(len(a), -1).all(axis=1)
                agree[key] = agree.get(key, 0) + int(same.sum())
            else:
                largest = float(np.abs(a - b).max()) if a.size else 0.0
                differences[key] = max(differences.get(key, 0.0), largest)
    return dict(examples=count, agreement={k: v / count for k, v in agree.items()},
                max_abs_difference=differences)
