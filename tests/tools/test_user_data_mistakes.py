"""The user's own data (issue "The user's own data", items 4 and 5): the classic CSV mistakes
are refused by tools/finetune.py before training, in one line naming the file and the flag;
an empty flag value unsets a flagfile's (`--train_file= --tfds_name=...`); a bad flag is one
line, not absl's page of --help."""

import pathlib

import pytest

import tool_runner  # tests/support: tools forked without their imports
from test_tool_errors import assert_one_line_error

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sentiment_csv(path, n=300, empty=()):
    """The reported file: a `text,sentiment` header, then n rows of a text and pos / neg."""
    texts = ["" if i in empty else f'"A movie review, number {i}."' for i in range(n)]
    rows = [f"{text},{'pos' if i % 3 else 'neg'}" for i, text in enumerate(texts)]
    path.write_text("\n".join(["text,sentiment"] + rows) + "\n")
    return path


def finetune(tmp_path, *flags):
    # Any directory passes --init_checkpoint's check: the data are read (and refused) first.
    return tool_runner.run_tool("finetune", "--task=classification",
                                f"--init_checkpoint={tmp_path}",
                                f"--output_dir={tmp_path / 'run'}", *flags)


@pytest.mark.parametrize("flags, empty, needles", [
    # No --header and no column flags: the header's "text" is the first row's label.
    ((), (), ["t.csv:1: label 'text' looks like a column name", "--header", "--label_column"]),
    # --header, but the default columns: every text is a class of its own.
    (("--header",), (), ["t.csv: the training labels (--label_column=0) have 300 distinct values",
                         "300 of the 300 rows", "--label_column and --text_a_column"]),
    # The right flags, but 5 texts of 300 empty (1.7%).
    (("--header", "--text_a_column=text", "--label_column=sentiment"), (3, 50, 51, 52, 200),
     ["t.csv: 5 of the 300 training rows (1.7%) have an empty text", "t.csv:5,",
      "check --text_a_column"]),
])
def test_the_classic_csv_mistakes_are_refused_before_training(tmp_path, flags, empty, needles):
    path = sentiment_csv(tmp_path / "t.csv", empty=empty)
    proc = finetune(tmp_path, f"--train_file={path}", *flags)
    assert_one_line_error(proc, *needles)
    assert not (tmp_path / "run").exists()


def test_a_bad_flag_is_one_line_without_the_help(tmp_path):
    proc = finetune(tmp_path, "--train_file=/nonexistent/x.tsv")
    assert_one_line_error(proc, "--train_file='/nonexistent/x.tsv'", "(--help lists the flags)")
    assert "flags:" not in proc.stderr and "Crash-safe" not in proc.stderr  # no docstring, no help


def test_an_empty_value_unsets_a_flagfile_value(tmp_path):
    flagfile = f"--flagfile={ROOT / 'flags' / 'finetune_wordnet_topics.flags'}"
    # The flagfile's eval and test files remain: refused, naming them and the way out.
    proc = finetune(tmp_path, flagfile, "--train_file=", "--tfds_name=glue/nope")
    assert_one_line_error(proc, "not both: got --tfds_name and --eval_file and --test_file",
                          "--eval_file=")
    # With them unset too, --tfds_name is the data source (glue/nope: refused by the TFDS check).
    proc = finetune(tmp_path, flagfile, "--train_file=", "--eval_file=", "--test_file=",
                    "--tfds_name=glue/nope")
    last = assert_one_line_error(proc, "glue/nope")
    assert "not both" not in last and "required" not in last


def test_create_pretraining_data_takes_an_empty_input_file_as_unset(tmp_path):
    flagfile = f"--flagfile={ROOT / 'flags' / 'create_pretraining_data_mini.flags'}"
    proc = tool_runner.run_tool("create_pretraining_data", flagfile, "--input_file=",
                                f"--output_file={tmp_path / 'o.tfrecord'}")
    assert_one_line_error(proc, "Give exactly one of --input_file and --tfds_name, got neither")
    assert "flags:" not in proc.stderr
