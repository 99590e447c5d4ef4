"""A progress line on stderr for a tool that works through many items.

Shown only where a person watches (the stream is a terminal), only for work long enough to
want it (more than `MIN_ITEMS` items), and at most every `EVERY_SECONDS`; it is rewritten in
place (carriage return) and ends with a newline.

>>> import io
>>> p = Progress(io.StringIO())  # not a terminal: silent
>>> p.start(10_000); p.update(5_000); p.finish(); p.stream.getvalue()
''
"""

import time

MIN_ITEMS = 300
EVERY_SECONDS = 0.5


class Progress:
    """`start(total)`, `update(done)`, `finish()`; `quiet` or a non-terminal stream: silent."""

    def __init__(self, stream, quiet=False, unit="lines"):
        self.stream, self.unit = stream, unit
        self.active = not quiet and hasattr(stream, "isatty") and stream.isatty()
        self.total = self.started = self.shown = 0

    def start(self, total):
        self.total, self.started, self.shown = total, time.monotonic(), 0.0
        self.active = self.active and total > MIN_ITEMS

    def update(self, done):
        now = time.monotonic()
        if not self.active or (now - self.shown < EVERY_SECONDS and done < self.total):
            return
        self.shown = now
        rate = done / max(now - self.started, 1e-9)
        eta = (self.total - done) / rate if rate else 0.0
        self.stream.write(f"\r{done}/{self.total} {self.unit} ({100 * done // self.total}%), "
                          f"{rate:.0f} {self.unit}/s, ETA {_clock(eta)}  ")
        self.stream.flush()

    def finish(self):
        if self.active:
            self.update(self.total)
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds):
    """12 -> '0:12', 3725 -> '1:02:05'."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
