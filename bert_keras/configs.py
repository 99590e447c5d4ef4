"""Typed run configurations: one frozen dataclass per run, the one place an option is named.

A config field is declared with `option(default, help, ...)`: its name, type (the
annotation), default, documentation and choices. `validate()` holds every check of the
options, so a bad value fails the same way from Python and from a tool. The tools' absl
flags are generated from the fields (`define_flags`) and read back into a config
(`from_flags`), so a flag, its default and its help are written once; an empty string flag
(`--train_file=`) means unset. Messages name options as their flags (`--name`), which is how
both tool and library users know them.

Example:
>>> import dataclasses
>>> @dataclasses.dataclass(frozen=True)
... class Demo(Config):
...     steps: int = option(10, "Training steps.")
...     def validate(self):
...         check(self.steps >= 1, f"--steps must be >= 1, got {self.steps}.")
>>> Demo(steps=3).steps
3
>>> Demo(steps=0)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --steps must be >= 1, got 0.
"""

import dataclasses
import sys
import types
import typing

from absl import flags as absl_flags

from bert_keras.errors import InputError


class ConfigError(InputError):
    """An option value, or a combination of them, is invalid; the message names the options."""


def check(condition, message):
    """Raises ConfigError(message) unless `condition`."""
    if not condition:
        raise ConfigError(message)


def option(default, help, *, choices=None, advanced=False):  # `help`: absl's name
    """A config field. `choices`: allowed values (an enum flag); `advanced`: listed by the
    tool's --helpfull only."""
    return dataclasses.field(default=default, metadata=dict(help=help, choices=choices,
                                                            advanced=advanced))


class Config:
    """Base of the frozen config dataclasses: validation on construction."""

    def __post_init__(self):
        self.validate()

    def validate(self):
        """Raises ConfigError for an invalid option or combination; subclasses add checks."""

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        return dataclasses.asdict(self)


# -- absl flags from config fields -------------------------------------------------------------

def _base_type(annotation):
    """int for `int`, `int | None` and `Optional[int]`; tuple for tuple types."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = args[0]
    return typing.get_origin(annotation) or annotation


def define_flags(config_cls, flag_values=absl_flags.FLAGS, skip=()):
    """Defines one absl flag per field of `config_cls` (but `skip`): same name, default and
    help; choices make an enum flag; `advanced` fields are listed by --helpfull only."""
    hints = typing.get_type_hints(config_cls)
    main_module = sys.argv[0]  # the module whose flags absl's --help lists
    for field in dataclasses.fields(config_cls):
        if field.name in skip:
            continue
        meta, kind = field.metadata, _base_type(hints[field.name])
        args = dict(name=field.name, default=field.default, help=meta["help"],
                    flag_values=flag_values,
                    module_name=f"{main_module} (advanced)" if meta["advanced"] else main_module)
        if meta["choices"]:
            absl_flags.DEFINE_enum(enum_values=list(meta["choices"]), **args)
        elif kind is bool:
            absl_flags.DEFINE_boolean(**args)
        elif kind is int:
            absl_flags.DEFINE_integer(**args)
        elif kind is float:
            absl_flags.DEFINE_float(**args)
        elif kind is tuple:
            absl_flags.DEFINE_list(**dict(args, default=list(field.default)))
        elif kind is str:
            absl_flags.DEFINE_string(**args)
        else:
            raise TypeError(f"{config_cls.__name__}.{field.name}: no flag type for {kind}.")


def from_flags(config_cls, flag_values=absl_flags.FLAGS, **values):
    """`config_cls` from the parsed flags (its fields'), with `values` overriding them.

    An empty string flag means unset: `--train_file=` (e.g. to drop a flagfile's value, as in
    `--flagfile=f --train_file= --tfds_name=glue/mrpc`) gives the field its default, None
    for the paths, as if the flag had not been given.

    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class Files(Config):
    ...     train_file: str = option(None, "Training data.")
    ...     split: str = option("train", "Split.")
    >>> flag_values = absl_flags.FlagValues()
    >>> define_flags(Files, flag_values)
    >>> _ = flag_values(["tool", "--train_file=a.tsv", "--train_file=", "--split="])
    >>> from_flags(Files, flag_values)
    Files(train_file=None, split='train')
    """
    hints = typing.get_type_hints(config_cls)
    for field in dataclasses.fields(config_cls):
        if field.name not in values and field.name in flag_values:
            value = flag_values[field.name].value
            kind = _base_type(hints[field.name])
            if kind is tuple and value is not None:
                value = tuple(value)
            elif kind is str and value == "":  # unset (" " stays: e.g. --label_delimiter)
                value = field.default
            values[field.name] = value
    return config_cls(**values)


