"""The task-type contract of export options, parametrized over the registry: each type's
`export_options_class` (in its package) is flags of tools/export.py with its help, and an
option of another type is refused in one line once the source is described, before any model
is built. A new type's options get these checks from its registry line."""

import dataclasses
import pathlib
import sys

import pytest
from absl import flags

import bert_keras as bk
from bert_keras import configs
from bert_keras.serving import export_options, export_run
from bert_keras.serving.export_config import ExportConfig
from bert_keras.tasks import sources
from bert_keras.tasks.registry import TASKS, get_task

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"
WITH_OPTIONS = [name for name in TASKS if get_task(name).export_options_class is not None]


def another_value(field):
    """A value of option `field` other than its default."""
    choices = field.metadata["choices"]
    if choices:
        return next(c for c in choices if c != field.default)
    if isinstance(field.default, bool):
        return not field.default
    return (field.default or 0) + 3


@pytest.fixture(scope="module")
def export_flags():
    flag_values = flags.FlagValues()
    configs.define_flags(ExportConfig, flag_values)
    return flag_values


@pytest.mark.parametrize("name", WITH_OPTIONS)
def test_export_options_are_flags_of_the_export_tool(name, export_flags):
    listed = {flag.name for flag in export_flags.get_flags_for_module(sys.argv[0])}
    for field in dataclasses.fields(get_task(name).export_options_class):
        flag = export_flags[field.name]
        assert field.name in listed  # tools/export.py --help lists it
        assert flag.default == field.default, field.name
        help_text = field.metadata["help"]
        assert help_text in flag.help  # after the names of the types that read it
        assert name in flag.help[:flag.help.index(help_text)], flag.help


@pytest.mark.parametrize("name", TASKS)
def test_an_option_of_another_task_type_is_refused_in_one_line(name):
    cls = get_task(name).export_options_class
    mine = {f.name for f in dataclasses.fields(cls)} if cls else set()
    others = {n: owner for n, owner in export_options.OWNERS.items() if n not in mine}
    assert others  # every type has others' options to refuse
    for option, (field, owners) in others.items():
        with pytest.raises(bk.InputError) as refused:
            export_options.options_of(get_task(name), {option: another_value(field)}, "runs/x")
        message = str(refused.value)
        assert message.startswith(f"--{option} is an option of "), message
        assert message.endswith(f" exports, not of runs/x's {name} model."), message
        assert all(owner in message for owner in owners) and "\n" not in message


def test_the_export_refuses_it_once_the_source_is_described(tmp_path, monkeypatch):
    """A span QA checkpoint with reranking's --max_pairs: refused before its model is read."""
    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(sources, "load", no_model)
    qa = FAMILIES / "bert_qa"
    with pytest.raises(bk.InputError, match=rf"^--max_pairs is an option of reranking exports, "
                                            rf"not of {qa}'s span_qa model\.$"):
        export_run.run_export(ExportConfig(task_dir=str(qa), max_pairs=64,
                                           export_dir_base=str(tmp_path)))
    assert not list(tmp_path.iterdir())


def test_two_definitions_of_one_option_fail_at_import(monkeypatch):
    """An option two types share is one field of a base class both inherit (as max_windows);
    the same name written twice would be two flags' worth of knowledge for one flag."""
    @dataclasses.dataclass(frozen=True)
    class Again(configs.Config):
        max_windows: int = configs.option(8, "Rows of a text.")

    monkeypatch.setattr(export_options, "TASK_EXPORT_OPTIONS",
                        dict(export_options.TASK_EXPORT_OPTIONS, again=Again))
    with pytest.raises(TypeError, match=r"'max_windows' of Again \(again\) is defined again by "
                                        r"tagging, span_qa's"):
        export_options._owners()
