"""A Hugging Face `tokenizer.json` turned into the classic files our tokenizers read.

Checkpoints saved by transformers 5 may hold only `tokenizer.json` (+ `tokenizer_config.json`):
no `vocab.txt` (WordPiece) and no `vocab.json` + `merges.txt` (byte-level BPE).
`convert(directory)` writes those files (`tokenizer_json_files.classic_files`: which ones, for
which model) into a cache directory and returns it.

The tokenizers keep the paths of their files (exports copy their `asset_files`), so the
files are not temporary: they live in `<tempdir>/bert_keras_tokenizers/<sha256>/`, keyed by
the bytes of `tokenizer.json` and `tokenizer_config.json`. A directory is built in a temporary
sibling and renamed into place, so a reader never sees a partial one, and a second load of the
same files reuses it. A file that cannot be converted raises `errors.InputError` naming it and
the problem.
"""

import hashlib
import json
import os
import shutil
import tempfile

import tensorflow as tf

from bert_keras.files import writing
from bert_keras.text.tokenizer_json_files import TOKENIZER_CONFIG, TOKENIZER_JSON, classic_files

CACHE_NAME = "bert_keras_tokenizers"
_MANIFEST = "converted.json"  # written last into every cache directory: the files it holds
_VERSION = b"bert_keras tokenizer.json conversion 3\n"  # change when the written files change


def has_tokenizer_json(directory):
    return tf.io.gfile.exists(os.path.join(directory, TOKENIZER_JSON))


def cache_root():
    """The directory of all converted tokenizers: `<tempdir>/bert_keras_tokenizers`."""
    return os.path.join(tempfile.gettempdir(), CACHE_NAME)


def convert(directory):
    """The cache directory holding the classic files of `directory`'s `tokenizer.json`
    (vocab.txt + tokenizer_config.json, vocab.json + merges.txt, XLM-R's
    sentencepiece.bpe.model or DeBERTa's spm.model), built if absent.

    >>> import pathlib
    >>> fixture = pathlib.Path(__file__).parents[2] / "tests" / "fixtures" / "families"
    >>> sorted(os.listdir(convert(str(fixture / "distilbert"))))
    ['converted.json', 'tokenizer_config.json', 'vocab.txt']
    """
    directory = os.fspath(directory)
    source = os.path.join(directory, TOKENIZER_JSON)
    data = _read_bytes(source)
    config_file = os.path.join(directory, TOKENIZER_CONFIG)
    config_data = _read_bytes(config_file) if tf.io.gfile.exists(config_file) else None
    digest = hashlib.sha256(_VERSION)
    for part in (data, config_data or b""):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    target = os.path.join(cache_root(), digest.hexdigest())
    if _complete(target):
        return target
    files = classic_files(data, source, config_data, config_file, directory)
    return _publish(target, files, source)


def _read_bytes(path):
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read()


def _complete(target):
    """Whether the cache directory `target` holds every file its manifest names."""
    try:
        with open(os.path.join(target, _MANIFEST), encoding="utf-8") as f:
            names = json.load(f)["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return all(os.path.isfile(os.path.join(target, name)) for name in names)


def _publish(target, files, source):
    """Writes `files` ({name: text}) into a temporary sibling of `target` and renames it to
    `target`; reuses `target` if another process made it first. Returns `target`."""
    root = os.path.dirname(target)
    name = os.path.basename(target)
    with writing(target):
        os.makedirs(root, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=root)
        try:
            for file_name, text in files.items():
                binary = isinstance(text, bytes)
                with open(os.path.join(tmp, file_name), "wb" if binary else "w",
                          encoding=None if binary else "utf-8") as f:
                    f.write(text)
            with open(os.path.join(tmp, _MANIFEST), "w", encoding="utf-8") as f:
                json.dump({"source": source, "files": sorted(files)}, f)
            if os.path.lexists(target) and not _complete(target):
                _set_aside(target)  # files removed by a temp cleaner: replaced as a whole
            try:
                os.replace(tmp, target)
            except OSError:
                if not _complete(target):  # not another process's complete directory
                    raise
        finally:
            if os.path.lexists(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def _set_aside(target):
    old = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.old-",
                           dir=os.path.dirname(target))
    try:
        os.rename(target, os.path.join(old, "stale"))
    except FileNotFoundError:
        pass  # another process set it aside first
    finally:
        shutil.rmtree(old, ignore_errors=True)


__all__ = ["convert", "cache_root", "has_tokenizer_json"]
