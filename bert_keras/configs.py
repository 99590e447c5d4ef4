"""Typed run configurations: frozen dataclasses, one per component, the one place an option
is named.

A config field is declared with `option(default, help, ...)`: its name, type (the
annotation), default, documentation and choices. `validate()` holds every check of the
options, so a bad value fails the same way from Python and from a tool. A run's config is
made of components' configs: `section(Cls, **defaults)` holds a component's own config (the
optimizer's, the data's), with the run's defaults for some of its options, and
`chosen_section(by, classes)` the options of the component another field names (the task
type's options by --task, the objective's by --objective). Each section validates itself; the
run's `validate` checks what spans sections.

The tools' absl flags are generated from the leaf fields (`define_flags`: flat names, as
before the split; `--helpfull` lists them by the module of the component that owns them) and
read back into a config (`from_flags`), so a flag, its default and its help are written once;
an empty string flag (`--train_file=`) means unset. `Config.from_options(**flat)` builds a run's
config from flat option names (the flags), `to_dict()` gives them back flat. Messages name
options as their flags (`--name`), which is how both tool and library users know them.

Example:
>>> @dataclasses.dataclass(frozen=True)
... class Optimizer(Config):
...     learning_rate: float = option(1e-4, "Peak learning rate.")
>>> @dataclasses.dataclass(frozen=True)
... class Demo(Config):
...     steps: int = option(10, "Training steps.")
...     optimizer: Optimizer = section(Optimizer, learning_rate=5e-5)
...     def validate(self):
...         check(self.steps >= 1, f"--steps must be >= 1, got {self.steps}.")
>>> Demo.from_options(steps=3, learning_rate=1e-3).optimizer.learning_rate
0.001
>>> Demo().to_dict()
{'steps': 10, 'learning_rate': 5e-05}
>>> Demo(steps=0)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --steps must be >= 1, got 0.

Each option is type-checked once, before `validate()`: a path may be any os.PathLike (kept as
its str, so the config writes as JSON), a float option takes an int; any other type is one
ConfigError naming the option.
>>> @dataclasses.dataclass(frozen=True)
... class Run(Config):
...     output_dir: str = option(None, "Where outputs go.")
...     steps: int = option(10, "Training steps.")
>>> import pathlib
>>> Run(output_dir=pathlib.Path("/tmp/run")).output_dir
'/tmp/run'
>>> Run(steps="3")
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --steps='3' must be an int, not str.
"""

import dataclasses
import functools
import numbers
import os
import sys
import types
import typing

import numpy as np
from absl import flags as absl_flags

from bert_keras.errors import InputError


class ConfigError(InputError):
    """An option value, or a combination of them, is invalid; the message names the options."""


def check(condition, message):
    """Raises ConfigError(message) unless `condition`."""
    if not condition:
        raise ConfigError(message)


def option(default, help, *, choices=None, advanced=False, former_names=()):  # absl's `help`
    """A config field. `choices`: allowed values (an enum flag); `advanced`: listed by the
    tool's --helpfull only; `former_names`: the flag's earlier names, still read (a user's
    flagfile may have them)."""
    return dataclasses.field(default=default, metadata=dict(
        help=help, choices=choices, advanced=advanced, former_names=tuple(former_names)))


def section(config_cls, *, advanced=False, **defaults):
    """A field holding a component's config `config_cls`, with this owner's `defaults` for
    some of its options; `advanced`: all its flags are listed by --helpfull only."""
    return dataclasses.field(default_factory=lambda: config_cls(**defaults),
                             metadata=dict(section=config_cls, defaults=defaults,
                                           advanced=advanced))


def chosen_section(by, classes):
    """A field holding the options of the component that field `by` names: `classes()` maps
    each value of `by` to its options class (or None: no options). Options of another
    component than the chosen one are refused by name."""
    return dataclasses.field(default=None, metadata=dict(chosen_by=by, classes=classes))


class Config:
    """Base of the frozen config dataclasses: validation on construction."""

    def __post_init__(self):
        for name, kinds in _option_kinds(type(self)).items():
            object.__setattr__(self, name, _typed(name, kinds, getattr(self, name)))
        for field in dataclasses.fields(self):
            if "chosen_by" in field.metadata and getattr(self, field.name) is None:
                cls = field.metadata["classes"]().get(getattr(self, field.metadata["chosen_by"]))
                if cls is not None:  # the chosen component's defaults
                    object.__setattr__(self, field.name, cls())
        self.validate()

    def validate(self):
        """Raises ConfigError for an invalid option or combination; subclasses add checks."""

    @classmethod
    def from_options(cls, **options):
        """The config of flat option names (the flags' names); ConfigError for a name that
        is not an option of it, or an option of another component than the chosen one."""
        return cls(**_nest(cls, options))

    def replace(self, **changes):
        """A copy with options changed, by their flat names."""
        return self.from_options(**{**self.to_dict(), **changes})

    def to_dict(self):
        """{flag name: value} of every option, sections included (flat)."""
        flat = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if _is_section(field):
                flat.update(value.to_dict() if value is not None else {})
            else:
                flat[field.name] = value
        return flat


def _is_section(field):
    return "section" in field.metadata or "chosen_by" in field.metadata


@functools.cache
def _option_kinds(cls):
    """{option name: the types its annotation allows (`str | int`: both)} of `cls`'s own
    options (not its sections')."""
    hints = typing.get_type_hints(cls)
    return {field.name: _kinds(hints[field.name]) for field in dataclasses.fields(cls)
            if not _is_section(field)}


def _kinds(annotation):
    """The types an option's annotation allows: (int,) for `int`, `int | None` and
    `Optional[int]`; (str, int) for `str | int`; (tuple,) for tuple types."""
    union = (isinstance(annotation, types.UnionType)
             or typing.get_origin(annotation) is typing.Union)
    return tuple(typing.get_origin(a) or a for a in (
        typing.get_args(annotation) if union else (annotation,)) if a is not type(None))


def _typed(name, kinds, value):
    """`value` of option `name` as the first of `kinds` that takes it (an os.PathLike as its
    str, a list as a tuple, an int as a float, numpy scalars as Python's); None (unset) as is.
    ConfigError naming the option when none takes it, so a wrong type fails here, before any
    work, and not as a TypeError deep in a run."""
    if value is None:
        return None
    for kind in kinds:
        if kind is str and isinstance(value, (str, os.PathLike)):
            value = os.fspath(value)
            if isinstance(value, str):  # a bytes path is not one
                return value
        elif kind is bool and isinstance(value, (bool, np.bool_)):
            return bool(value)
        elif kind is int and isinstance(value, numbers.Integral) and not _is_bool(value):
            return int(value)
        elif kind is float and isinstance(value, numbers.Real) and not _is_bool(value):
            return float(value)
        elif kind is tuple and isinstance(value, (tuple, list)):
            return tuple(value)
        elif kind not in (str, bool, int, float, tuple) and isinstance(value, kind):
            return value
    wanted = " or ".join(_KIND_NAMES.get(kind, f"a {kind.__name__}") for kind in kinds)
    raise ConfigError(f"--{name}={value!r} must be {wanted}, not {type(value).__name__}.")


_KIND_NAMES = {str: "a str or os.PathLike", int: "an int"}


def _is_bool(value):
    return isinstance(value, (bool, np.bool_))


def _chosen_class(cls, field, values):
    by = field.metadata["chosen_by"]
    value = values.get(by, _field(cls, by).default)
    return field.metadata["classes"]().get(value), f"--{by}={value}"


def _field(cls, name):
    return next(f for f in dataclasses.fields(cls) if f.name == name)


def leaf_names(cls, chosen=None):
    """The flat option names of `cls` and its sections; chosen sections give all their
    components' names, or with `chosen` ({field: class}) the chosen one's only."""
    names = []
    for field in dataclasses.fields(cls):
        if "section" in field.metadata:
            names += leaf_names(field.metadata["section"])
        elif "chosen_by" in field.metadata:
            classes = ([chosen[field.name]] if chosen and field.name in chosen
                       else field.metadata["classes"]().values())
            for option_cls in dict.fromkeys(c for c in classes if c is not None):
                names += [n for n in leaf_names(option_cls) if n not in names]
        else:
            names.append(field.name)
    return names


def _nest(cls, options):
    """The constructor arguments of `cls` from flat option names."""
    options = dict(options)
    args = {f.name: options.pop(f.name) for f in dataclasses.fields(cls)
            if not _is_section(f) and f.name in options}
    for field in dataclasses.fields(cls):
        if "section" in field.metadata:
            mine = {n: options.pop(n) for n in leaf_names(field.metadata["section"])
                    if n in options}
            args[field.name] = field.metadata["section"].from_options(
                **{**field.metadata["defaults"], **mine})
        elif "chosen_by" in field.metadata:
            option_cls, choice = _chosen_class(cls, field, args)
            mine = {n: options.pop(n) for n in (leaf_names(option_cls) if option_cls else ())
                    if n in options}
            args[field.name] = option_cls.from_options(**mine) if option_cls else None
    defaults = option_defaults(cls)
    for name, value in options.items():
        owner = next(((field, choice) for field, choice, option_cls in _choices(cls)
                      if option_cls and name in leaf_names(option_cls)), None)
        if owner and value == defaults.get(name):  # another component's option, left unset
            continue
        if owner:
            field, choice = owner
            raise ConfigError(f"--{name} is an option of --{field.metadata['chosen_by']}="
                              f"{choice}, not of {_chosen_class(cls, field, args)[1]}.")
        raise ConfigError(f"{name!r} is not an option of {cls.__name__} (its options: the "
                          "flags of the tool that runs it).")
    return args


def _choices(cls):
    """(the chosen section's field, a value of its `by` field, that value's options class) of
    every chosen section of `cls`."""
    for field in dataclasses.fields(cls):
        if "chosen_by" in field.metadata:
            for value, option_cls in field.metadata["classes"]().items():
                yield field, value, option_cls


# -- absl flags from config fields -------------------------------------------------------------

def _leaves(cls, defaults=None, advanced=False, seen=None):
    """(field, its type, its default, advanced, owning class) of every option of `cls`, its
    sections' and all its chosen sections' (each options class once)."""
    seen = set() if seen is None else seen
    kinds = _option_kinds(cls)
    for field in dataclasses.fields(cls):
        meta = field.metadata
        if "section" in meta:
            yield from _leaves(meta["section"], meta["defaults"], advanced or meta["advanced"],
                               seen)
        elif "chosen_by" in meta:
            for option_cls in meta["classes"]().values():
                if option_cls is not None and option_cls not in seen:
                    seen.add(option_cls)
                    for leaf in _leaves(option_cls, None, advanced, seen):
                        if leaf[0] not in seen:  # a field that options classes inherit: once
                            seen.add(leaf[0])
                            yield leaf
        else:
            default = (defaults or {}).get(field.name, field.default)
            yield field, kinds[field.name][0], default, advanced or meta["advanced"], cls


def option_defaults(config_cls):
    """{flag name: default} of every option of `config_cls`, its sections' (with the run's
    defaults for them) and all its chosen sections'."""
    return {field.name: default for field, _, default, _, _ in _leaves(config_cls)}


def option_types(config_cls):
    """{flag name: its type (int, float, bool, str, tuple)} of every option of `config_cls`."""
    return {field.name: kind for field, kind, _, _, _ in _leaves(config_cls)}


def define_flags(config_cls, flag_values=absl_flags.FLAGS, skip=()):
    """Defines one absl flag per option of `config_cls` and its sections (but `skip`): same
    name, default and help; choices make an enum flag. Each flag belongs to the module of the
    component that owns it (--helpfull groups them so); the ones not `advanced` are also the
    tool's key flags, which its --help lists."""
    main_module = sys.argv[0]  # the module whose flags absl's --help lists
    for field, kind, default, advanced, owner in _leaves(config_cls):
        if field.name in skip:
            continue
        meta = field.metadata
        module = main_module if owner is config_cls else owner.__module__
        if advanced and owner is config_cls:
            module = f"{main_module} (advanced)"
        former = meta.get("former_names", ())
        help_text = meta["help"] + "".join(f" (--{name}: its former name)" for name in former)
        args = dict(name=field.name, default=default, help=help_text,
                    flag_values=flag_values, module_name=module)
        if meta["choices"]:
            absl_flags.DEFINE_enum(enum_values=list(meta["choices"]), **args)
        elif kind is bool:
            absl_flags.DEFINE_boolean(**args)
        elif kind is int:
            absl_flags.DEFINE_integer(**args)
        elif kind is float:
            absl_flags.DEFINE_float(**args)
        elif kind is tuple:
            absl_flags.DEFINE_list(**dict(args, default=list(default)))
        elif kind is str:
            absl_flags.DEFINE_string(**args)
        else:
            raise TypeError(f"{owner.__name__}.{field.name}: no flag type for {kind}.")
        for name in former:
            absl_flags.DEFINE_alias(name, field.name, flag_values=flag_values,
                                    module_name=module)
        if not advanced and module != main_module:
            flag_values.register_key_flag_for_module(main_module, flag_values[field.name])


def from_flags(config_cls, flag_values=absl_flags.FLAGS, **values):
    """`config_cls` from the parsed flags (its options'), with `values` overriding them.

    An empty string flag means unset: `--train_file=` (e.g. to drop a flagfile's value, as in
    `--flagfile=f --train_file= --tfds_name=glue/mrpc`) gives the option its default, None
    for the paths, as if the flag had not been given. A flag given for a component that is
    not the chosen one (e.g. a span_qa option with --task=tagging) is refused by name.

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
    values = dict(values)
    chosen = {}  # {chosen section: the options class its `by` flag picks}
    for field in dataclasses.fields(config_cls):
        if "chosen_by" in field.metadata:
            by = field.metadata["chosen_by"]
            choice = values.get(by, flag_values[by].value if by in flag_values else None)
            chosen[field.name] = field.metadata["classes"]().get(choice)
    mine = set(leaf_names(config_cls, chosen))
    for field, kind, default, _, _ in _leaves(config_cls):
        name = field.name
        if name in values or name not in flag_values:
            continue
        if name not in mine:  # another component's option: refused by `from_options` if given
            if flag_values[name].present:
                values[name] = flag_values[name].value
            continue
        value = flag_values[name].value
        if kind is tuple and value is not None:
            value = tuple(value)
        elif kind is str and value == "":  # unset (" " stays: e.g. --label_delimiter)
            value = default
        values[name] = value
    return config_cls.from_options(**values)
