"""The one policy for text input: what every reader of user text files does with bad text.

Every reader of raw text (pretraining corpora, vocab corpora, fine-tuning task files, the
input of tools/predict.py) reads lines as bytes through `read_lines`, which applies it:

- A file that is not text fails at once, before any line is used: compressed data under a
  name that does not say so (gzip magic in a file not named `.gz`), a `.gz` file that is not
  gzip, or a start (first 8 KiB) holding NUL bytes or mostly control bytes (a binary, or
  UTF-16 text).
- A bad line is one that is not valid UTF-8 or holds a NUL byte. If more than
  `MAX_BAD_LINE_SHARE` (1%) of a file's lines are bad, the file fails (the error gives the
  counts and the first bad line number): it is in another encoding, or not text. At or below
  that share the bad lines are skipped (or their bad bytes replaced, where every line must
  give an output row) with ONE warning per file giving the count.
- A file with no text at all (empty, or blank lines only) is the caller's to judge: a corpus
  may hold one among many (`require_text` fails when all are), a predict input may not.
- Fine-tuning task files allow no bad line (`max_bad_share=0` in spirit: every row is a
  labeled example, so the first bad line is an error naming it).

Failures raise `TextFileError` (an `InputError`: the tools print its one-line message and
exit 1, no traceback). The checks are streaming: nothing holds more than a line.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
>>> with open(path, "wb") as f:
...     _ = f.write(b"Hello.\\n\\nBye.\\n")
>>> counts = TextCounts(path)
>>> [text for _, text in read_lines(path, counts=counts)], counts.text_lines
(['Hello.', '', 'Bye.'], 2)
"""

import dataclasses
import gzip
import io
import os
import zlib

from absl import logging

from bert_keras import files
from bert_keras.errors import InputError

# Above this share of bad lines a file is refused; at or below, its bad lines are skipped.
MAX_BAD_LINE_SHARE = 0.01

_SNIFF_BYTES = 8192
# Text has few control bytes (tab, newlines, form feed, escape aside); binaries have many.
_CONTROL_BYTES = bytes(b for b in range(32) if b not in b"\t\n\v\f\r\x1b") + b"\x7f"
_MAX_CONTROL_SHARE = 0.3
_MAGIC = {b"\x1f\x8b": "gzip", b"PK\x03\x04": "zip", b"\xfd7zXZ\x00": "xz",
          b"\x28\xb5\x2f\xfd": "zstd",
          **{b"BZh%d1AY&SY" % level: "bzip2" for level in range(1, 10)}}


class TextFileError(InputError):
    """A text input cannot be used: binary, too many bad lines, or no text; the message names
    the file and the problem."""


@dataclasses.dataclass
class TextCounts:
    """What `read_lines` found in one file (filled in as the lines are read)."""
    name: str
    lines: int = 0
    blank_lines: int = 0
    bad_lines: int = 0
    first_bad_line: int = 0

    @property
    def text_lines(self):
        """Lines that hold text: not blank, not bad."""
        return self.lines - self.blank_lines - self.bad_lines


def sniff(name, head):
    """TextFileError if the first bytes `head` of file `name` show it is not text.

    >>> sniff("notes.txt", b"\\x1f\\x8b\\x08\\x00")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    bert_keras.text_files.TextFileError: notes.txt is gzip-compressed data, not text:
    rename it to notes.txt.gz (or decompress it)
    """
    head = head[:_SNIFF_BYTES]
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            hint = (f"rename it to {name}.gz (or decompress it)" if kind == "gzip"
                    else "decompress it first")
            raise TextFileError(f"{name} is {kind}-compressed data, not text: {hint}")
    if b"\x00" in head:
        raise TextFileError(f"{name} looks binary, not text: NUL bytes near its start "
                            "(UTF-16 text must be converted to UTF-8)")
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    if head and controls > _MAX_CONTROL_SHARE * len(head):
        raise TextFileError(f"{name} looks binary, not text: {controls:,} of its first "
                            f"{len(head):,} bytes are control characters")


def open_binary(path):
    """`path` opened for reading bytes, gzip-decompressed if named `.gz`; sniffed (`sniff`).
    A URL (gs://...) is read through tf.io.gfile."""
    name = os.fsdecode(path)
    raw = open(name, "rb") if files.is_local(name) else io.BufferedReader(
        _GFileReader(files.open_file(name, "rb")), buffer_size=_READ_BUFFER)
    if name.endswith(".gz"):
        stream = _GzipReader(raw, name)
        try:
            head = stream.peek(_SNIFF_BYTES)
        except (OSError, EOFError, zlib.error) as e:
            stream.close()
            raise TextFileError(f"{name} is named .gz but is not gzip data ({e})") from None
    else:
        stream = raw
        head = stream.peek(_SNIFF_BYTES)
    try:
        sniff(name, head)
    except TextFileError:
        stream.close()
        raise
    return stream


_READ_BUFFER = 1 << 20  # an object store serves large reads best


class _GzipReader(gzip.GzipFile):
    """gzip.GzipFile over an opened file that it closes too."""

    def __init__(self, raw, name):
        super().__init__(filename=name, fileobj=raw, mode="rb")
        self._raw = raw

    def close(self):
        try:
            super().close()
        finally:
            self._raw.close()


class _GFileReader(io.RawIOBase):
    """A tf.io.gfile.GFile as a raw stream, so io.BufferedReader gives it peek and lines."""

    def __init__(self, gfile):
        self._gfile = gfile

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self._gfile.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self):
        self._gfile.close()
        super().close()


def decode_line(raw):
    """A line's text (newline stripped), or None for a bad line (not UTF-8, or a NUL byte)."""
    if b"\x00" in raw:
        return None
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return None


def check_bad_share(counts, max_bad_share=MAX_BAD_LINE_SHARE):
    """TextFileError if more than `max_bad_share` of the lines counted are bad."""
    if counts.bad_lines > max_bad_share * counts.lines:
        allowed = f"more than the {max_bad_share:.0%} allowed" if max_bad_share else "none allowed"
        raise TextFileError(
            f"{counts.name}: {counts.bad_lines:,} of {counts.lines:,} lines are not valid UTF-8 "
            f"text (first: line {counts.first_bad_line}), {allowed}: is it in another encoding "
            "(convert it, e.g. iconv -f latin1 -t utf-8) or not text at all?")


def warn_bad_lines(counts, action="skipped"):
    """One warning for the file's bad lines (none when there are none)."""
    if counts.bad_lines:
        logging.warning(f"{counts.name}: {action} {counts.bad_lines:,} of {counts.lines:,} "
                        "lines that are not valid UTF-8 text "
                        f"(first: line {counts.first_bad_line})")


def read_lines(path, *, stream=None, counts=None, on_bad="skip",
               max_bad_share=MAX_BAD_LINE_SHARE, warn=True):
    """Yields (line number, text without newline) of a text file under the policy above.

    `stream`: an open binary stream to read instead of opening `path` (stdin; then `path` is
    only its name in messages). `counts`: a TextCounts filled in as lines are read.
    `on_bad`: "skip" bad lines, or "replace" their bad bytes with U+FFFD (each line gives a
    row). Raises TextFileError at the start (not text) or at the end (too many bad lines);
    otherwise warns once about the bad lines (unless `warn` is False).

    Example: `for n, text in read_lines("corpus.txt.gz"): ...`
    """
    if on_bad not in ("skip", "replace"):
        raise ValueError(f"on_bad must be 'skip' or 'replace', got {on_bad!r}")
    name = os.fsdecode(path)
    counts = counts if counts is not None else TextCounts(name)
    if stream is not None:
        sniff(name, stream.peek(_SNIFF_BYTES) if hasattr(stream, "peek") else b"")
    source = stream if stream is not None else open_binary(path)
    try:
        for raw in source:
            counts.lines += 1
            text = decode_line(raw)
            if text is None:
                counts.bad_lines += 1
                counts.first_bad_line = counts.first_bad_line or counts.lines
                if on_bad == "skip":
                    continue
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            elif not text.strip():
                counts.blank_lines += 1
            yield counts.lines, text
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:  # a truncated or corrupt .gz
        raise TextFileError(f"{name}: corrupt gzip data after line {counts.lines} ({e})") from None
    finally:
        if stream is None:
            source.close()
    check_bad_share(counts, max_bad_share)
    if warn:
        warn_bad_lines(counts, "skipped" if on_bad == "skip" else "replaced the bad bytes of")


def describe_files(names, limit=3):
    """`a.txt`, `a.txt, b.txt` or `a.txt, b.txt, c.txt and 7 more files` for messages."""
    names = [os.fsdecode(n) for n in names]
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more files"


def require_text(counts_list):
    """TextFileError naming the files if none of them holds a line of text."""
    if not any(c.text_lines for c in counts_list):
        names = describe_files([c.name for c in counts_list])
        empty = all(c.lines == 0 for c in counts_list)
        what = "is empty" if empty else "has no text (only blank or skipped lines)"
        if len(counts_list) > 1:
            what = "are all empty" if empty else "have no text (only blank or skipped lines)"
        raise TextFileError(f"{names} {what}")


def scan(paths, max_bad_share=MAX_BAD_LINE_SHARE):
    """Reads every file once under the policy (warning once per file with bad lines) and
    returns their TextCounts; TextFileError if one is not text or none holds text.

    Example: `scan(["corpus/a.txt", "corpus/b.txt.gz"])` before training on them.
    """
    counts_list = []
    for path in paths:
        counts = TextCounts(os.fsdecode(path))
        for _ in read_lines(path, counts=counts, max_bad_share=max_bad_share):
            pass
        counts_list.append(counts)
    require_text(counts_list)
    return counts_list


def good_lines_mask(lines):
    """In-graph twin of `decode_line` for tf.data readers (TextLineDataset): bool [n], True
    for lines that are valid UTF-8 without a NUL byte. lines: tf.string [n]."""
    import tensorflow as tf  # only the in-graph readers need it

    valid = tf.strings.unicode_transcode(lines, "UTF-8", "UTF-8", errors="replace",
                                         replacement_char=0xFFFD) == lines
    return valid & ~tf.strings.regex_full_match(lines, "(?s).*\\x00.*")


__all__ = [
    "MAX_BAD_LINE_SHARE",
    "TextCounts",
    "TextFileError",
    "describe_files",
    "good_lines_mask",
    "open_binary",
    "read_lines",
    "require_text",
    "scan",
    "sniff",
]
