"""`run(main, doc)`: absl.app.run(main) as the tools need it, with no TensorFlow import (so
tools/quickstart.py, which only chains the others, uses it too).

- --help, --helpshort, --helpfull and --helpxml exit with status 0 after printing the help:
  absl exits 1, which a shell script, `make` or CI reads as a failure.
- The help is the tool module's docstring (`doc`): absl prints `__main__`'s, which for a
  console script (bert-keras-finetune) is the entry-point stub, with no docstring.

Example (tools/quickstart.py):
    def run():
        absl_main.run(main, __doc__)
"""

import sys

from absl import app, flags

_HELP_FLAGS = ("help", "helpshort", "helpfull", "helpxml")


class _ExitsZero:
    """Mixin of absl's help flags: the exit after printing the help is status 0, not 1."""

    def parse(self, argument):
        try:
            super().parse(argument)
        except SystemExit as e:  # raised only once the help is printed
            sys.exit(0 if e.code == 1 else e.code)


def _define_help_flags():
    """absl's help flags (app.define_help_flags), each replaced by one that exits 0."""
    app.define_help_flags()
    for name in _HELP_FLAGS:
        flag = flags.FLAGS[name]
        if isinstance(flag, _ExitsZero):
            continue
        for key in {flag.name, flag.short_name} - {None}:
            delattr(flags.FLAGS, key)
        exits_zero = type(type(flag).__name__, (_ExitsZero, type(flag)), {})
        flags.DEFINE_flag(exits_zero(), module_name=app.__name__)


def run(main, doc):
    """app.run(main), with `doc` as the help and the help flags exiting 0."""
    if doc:
        sys.modules["__main__"].__doc__ = doc
    _define_help_flags()
    app.run(main)
