"""SWAG-style files read as the multiple-choice task reads them (CSV/TSV columns, JSON lines
fields), their mistakes refused in one line naming the file, the line and the value, and the
bundled bible_next_verse task."""

import collections
import gzip
import json

import pytest

from bert_keras import assets
from bert_keras.configs import ConfigError
from bert_keras.data.finetuning.task_files import TaskFileError
from bert_keras.tasks.multiple_choice.options import MultipleChoiceOptions
from bert_keras.tasks.registry import get_task

TASK = get_task("multiple_choice")
SWAG_HEADER = ("video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,"
               "ending3,label")


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_swag_csv_takes_its_ending_columns_from_the_header(tmp_path):
    path = write(tmp_path / "swag.csv", SWAG_HEADER + "\n"
                 'v1,0,"He sat. He",He sat.,He,gold,"ran, fast.",slept.,ate.,sang.,2\n')
    (ex,) = TASK.read_files([path], "csv", header=True, text_a_column="sent1",
                            label_column="label")
    assert (ex.context, ex.choices, ex.label) == ("He sat.", ["ran, fast.", "slept.", "ate.",
                                                              "sang."], 2)
    assert ex.source == f"{path}:2"


def test_columns_by_index_without_a_header_and_named_endings(tmp_path):
    path = write(tmp_path / "plain.tsv", "1\tctx\ta\tb\tc\n0\tctx2\td\te\tf\n")
    examples = TASK.read_files([path], "tsv", text_a_column=1, label_column=0)
    assert [(ex.label, ex.choices) for ex in examples] == [(1, ["a", "b", "c"]),
                                                           (0, ["d", "e", "f"])]
    options = MultipleChoiceOptions(ending_columns="4,2")
    examples = TASK.read_files([path], "tsv", options=options, text_a_column=1, label_column=0)
    assert examples[0].choices == ["c", "a"]
    unlabeled = TASK.read_files([path], "tsv", labeled=False, text_a_column=1, label_column=0)
    assert unlabeled[0].label is None


def test_jsonl_with_its_fields(tmp_path):
    rows = [{"question": "Q?", "options": ["x", "y", "z"], "answer": 1},
            {"question": "R?", "options": ["u", "v", "w"], "answer": "0"}]
    path = write(tmp_path / "mc.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    examples = TASK.read_files([path], "jsonl", options=MultipleChoiceOptions(
        choices_field="options"), text_a_field="question", label_field="answer")
    assert [(ex.context, ex.choices, ex.label) for ex in examples] == [
        ("Q?", ["x", "y", "z"], 1), ("R?", ["u", "v", "w"], 0)]


@pytest.mark.parametrize("line,message", [
    ('{"context": "c", "choices": ["a", "b"], "label": 2}', "label 2 (field 'label') is not a "
                                                            "choice index in [0, 2)"),
    ('{"context": "c", "choices": ["a", "b"], "label": "first"}', "label 'first'"),
    ('{"context": "c", "choices": ["a"], "label": 0}', "1 choice(s); a question needs at least 2"),
    ('{"context": "c", "choices": "a b", "label": 0}', "not a list of strings"),
    ('{"context": "c", "label": 0}', "missing field 'choices'"),
])
def test_jsonl_mistakes_name_the_line_and_the_value(tmp_path, line, message):
    path = write(tmp_path / "bad.jsonl", '{"context": "ok", "choices": ["a", "b"], "label": 0}\n'
                 + line + "\n")
    with pytest.raises(TaskFileError, match="bad.jsonl:2: ") as raised:
        TASK.read_files([path], "jsonl", text_a_field="context")
    assert message in str(raised.value)


def test_csv_mistakes_name_the_file_and_the_value(tmp_path):
    path = write(tmp_path / "bad.csv", "context,ending0,ending1,label\nc,a,b,3\n")
    with pytest.raises(TaskFileError, match=r"bad.csv:2: label '3' \(column 3\) is not a choice "
                                            r"index in \[0, 2\)"):
        TASK.read_files([path], "csv", header=True, text_a_column="context",
                        label_column="label")
    path = write(tmp_path / "no_endings.csv", "context,a,b,label\nc,a,b,1\n")
    with pytest.raises(TaskFileError, match="no columns ending0, ending1"):
        TASK.read_files([path], "csv", header=True, text_a_column="context",
                        label_column="label")


def test_the_ending_option_is_checked():
    with pytest.raises(ConfigError, match="--ending_columns='ending0' names 1 column"):
        MultipleChoiceOptions(ending_columns="ending0")
    assert MultipleChoiceOptions(ending_columns="1, ending2").ending_column_list() == [1, "ending2"]


def test_the_bundled_next_verse_task():
    """bert_keras/assets/make_bible_next_verse.py's files: 4 choices, labels spread over the
    indices, the true next verse among the endings, no context shared between the splits."""
    splits = {split: TASK.read_files([assets.path(f"bible_next_verse.{split}.csv.gz")], "csv",
                                     header=True, text_a_column="context", label_column="label")
              for split in ("train", "dev", "test")}
    assert {k: len(v) for k, v in splits.items()} == {"train": 1200, "dev": 200, "test": 200}
    counts = collections.Counter(ex.label for ex in splits["train"])
    assert set(counts) == {0, 1, 2, 3} and max(counts.values()) < 0.3 * 1200
    with gzip.open(assets.path("web_bible_corpus.txt.gz"), "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    follows = {(a, b) for a, b in zip(lines, lines[1:]) if a and b}
    for ex in splits["dev"][:50]:
        assert (ex.context, ex.choices[ex.label]) in follows
    train = {ex.context for ex in splits["train"]}
    assert not train & {ex.context for ex in splits["dev"] + splits["test"]}


@pytest.mark.parametrize("options,message", [
    (dict(max_seq_length=4), "--max_seq_length=4 leaves no room for a context and an ending"),
    (dict(tfds_name="my_choices"), "--task=multiple_choice reads CSV/TSV or JSON lines files "
                                   r"\(--train_file\), not --tfds_name=my_choices"),
    (dict(choices_field=""), "--choices_field must name a JSONL field"),
])
def test_run_options_are_checked_before_any_work(options, message):
    from bert_keras.training.finetuning_config import FinetuneConfig

    with pytest.raises(ConfigError, match=message):
        FinetuneConfig.from_options(task="multiple_choice", output_dir="unused",
                                    init_checkpoint="tests/fixtures/families/distilbert",
                                    **options)
    config = FinetuneConfig.from_options(task="multiple_choice", output_dir="unused",
                                         init_checkpoint="tests/fixtures/families/distilbert",
                                         ending_columns="sent2,ending0")
    assert config.task_options.ending_column_list() == ["sent2", "ending0"]
