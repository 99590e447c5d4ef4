"""An export resolves its source once: `registry.describe` reads a transformers directory's
config.json, and the tokenizer, encoder and heads take it from the description
(`files.KnownDirectory`) instead of reading it again (12 reads for a fine-tuned tagger and 4
for an encoder before). Counted by wrapping the one JSON reader, `files.read_json` (its
`parse_json`); the SavedModel writer is stubbed, since it reads no source file."""

import pathlib

import pytest

import bert_keras as bk
from bert_keras import files
from bert_keras.serving import export_run, saved_model
from bert_keras.tasks import registry, sources

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"


@pytest.fixture
def config_reads(monkeypatch):
    """The paths of the config.json files read, in order, and the writer's arguments."""
    reads, written = [], {}
    parse = files.parse_json

    def counting(data, path, expect=dict):
        if pathlib.Path(path).name == "config.json":
            reads.append(str(path))
        return parse(data, path, expect)

    def write(model, tokenizer, info, base_dir, model_name, task=None, **kwargs):
        written.update(model=model, info=info, task=task)
        return "written"

    monkeypatch.setattr(files, "parse_json", counting)
    monkeypatch.setattr(saved_model, "write_saved_model", write)
    return reads, written


@pytest.mark.parametrize("flag,name,task", [("task_dir", "bert_tagger", "tagging"),
                                            ("encoder_dir", "roberta", "encoder")])
def test_an_export_reads_config_json_once(config_reads, tmp_path, flag, name, task):
    reads, written = config_reads
    config = bk.ExportConfig(**{flag: str(FAMILIES / name)}, export_dir_base=str(tmp_path),
                             seq_length=16)
    assert export_run.run_export(config) == "written"
    assert reads == [str(FAMILIES / name / "config.json")]
    assert written["task"].name == written["info"]["task"] == task
    assert written["info"]["seq_length"] == 16


def test_the_description_names_what_the_directory_holds(config_reads):
    reads, _ = config_reads
    source = registry.describe(str(FAMILIES / "roberta_tagger"))
    assert (source.kind, source.task.name, source.family.MODEL_TYPE) == (
        sources.TRANSFORMERS_TASK, "tagging", "roberta")
    assert source.architecture == "RobertaForTokenClassification"
    assert source.info["labels"] == ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    model, info = sources.load(source)
    assert type(model) is bk.BertTokenClassifier
    assert info["seq_length"] == min(128, model.encoder.max_sequence_length)
    assert len(reads) == 1


def test_an_export_option_no_task_type_reads_is_refused_by_name(tmp_path):
    """The old keyword `max_answer_tokens` (now `max_answer_length`, as in training) is a
    TypeError naming the close one, before anything is written, not a silent default."""
    source = registry.describe(str(FAMILIES / "bert_qa"))
    model, info = sources.load(source)
    with pytest.raises(TypeError, match="'max_answer_tokens' .*did you mean 'max_answer_length'"):
        bk.export_saved_model(model, source.tokenizer, info, str(tmp_path), "qa",
                              max_answer_tokens=5)
    assert not list(tmp_path.rglob("*.pb"))
