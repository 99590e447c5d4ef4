"""Tools that crashed or misled on bad paths and bad vocabularies (issue 27).

Each refusal is one line on stderr naming the flag or file and the value, exit status 1, no
traceback, and nothing left at the output path: tools/export.py with --export_dir_base naming
a file or a --task_dir that does not exist; tools/predict.py with a task directory to export
first, a directory, a closed stdin / stdout, a full stdout; a failed
fine-tuning or pretraining run leaves no output directory it created; a vocabulary that turns
the pretraining text into [UNK] is refused (more than 50% of a sample's tokens), or warned
about (more than 5%).
"""

import collections
import gzip
import logging
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import pytest

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
ENV = {**os.environ, **tool_runner.QUIET}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def run_tool(tool, *args, redirect=""):
    """Runs tools/TOOL.py with `args`; `redirect` is a shell redirection applied to it, e.g.
    "<&-" (stdin closed) or ">&-" (stdout closed): a real process, started by bash, since a
    closed stream is what the interpreter's own start-up meets. ">/dev/full" (stdout open on
    a device that is always full) forks the tool as the other runs do."""
    if not redirect:
        return tool_runner.run_tool(tool, *args)
    command = [sys.executable, str(ROOT / "tools" / f"{tool}.py"), *map(str, args)]
    if redirect == ">/dev/full":
        with tempfile.TemporaryDirectory() as directory:
            stderr = pathlib.Path(directory, "stderr")
            started = tool_runner.start(command, cwd=ROOT, env=ENV, stdout="/dev/full",
                                        stderr=stderr)
            returncode = started.wait()
            return subprocess.CompletedProcess(command, returncode, "", stderr.read_text())
    return subprocess.run(["bash", "-c", f'exec "$@" {redirect}', "bash", *command],
                          capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=600)


def assert_one_line_error(proc, *needles):
    """Exit status 1, no traceback, and a last stderr line holding every needle."""
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    for needle in needles:
        assert str(needle) in last, (needle, last)
    return last


def first_lines(n=1000):
    """The first n non-empty lines of the bundled corpus."""
    lines = []
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                lines.append(line.strip())
            if len(lines) == n:
                return lines
    return lines


def write_vocab(path, words):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(SPECIALS + list(words)) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def ten_token_vocab(tmp_path):
    """The specials and 5 frequent tokens: most of the corpus is [UNK] (74%)."""
    return write_vocab(tmp_path / "v10" / "vocab.txt", ["the", "and", "of", ",", "."])


@pytest.fixture
def tenth_unknown_vocab(tmp_path):
    """The 400 most frequent words and marks of the corpus' first 1,000 lines: about 11% of
    their tokens are [UNK]."""
    counts = collections.Counter(token for line in first_lines()
                                 for token in re.findall(r"\w+|[^\w\s]", line.lower()))
    return write_vocab(tmp_path / "v400" / "vocab.txt", [w for w, _ in counts.most_common(400)])


# -- export.py ---------------------------------------------------------------------------------

@pytest.mark.parametrize("below", ["", "sub/dir"])
def test_export_refuses_an_export_dir_base_that_is_a_file(tmp_path, tiny_pairs_model, below):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory\n")
    base = a_file / below if below else a_file
    proc = run_tool("export", f"--task_dir={tiny_pairs_model['task']}",
                    f"--export_dir_base={base}")
    assert_one_line_error(proc, f"--export_dir_base={base}", f"{a_file} is a file")
    assert a_file.read_text() == "not a directory\n"


def test_export_refuses_a_seq_length_with_no_room_for_the_context(tmp_path):
    qa = ROOT / "tests" / "fixtures" / "families" / "albert_qa"  # a transformers QA checkpoint
    proc = run_tool("export", f"--task_dir={qa}", "--seq_length=5",
                    f"--export_dir_base={tmp_path}")
    assert_one_line_error(proc, "--seq_length=5 leaves no room for the context")
    assert not list(tmp_path.iterdir())


def test_export_says_that_a_missing_task_dir_does_not_exist(tmp_path):
    missing = tmp_path / "runs" / "paraphrase" / "best"
    proc = run_tool("export", f"--task_dir={missing}", f"--export_dir_base={tmp_path / 'saved'}")
    assert_one_line_error(proc, f"--task_dir={missing} does not exist")
    assert not (tmp_path / "saved").exists()


def test_export_reads_max_answer_tokens_in_a_flagfile_as_max_answer_length(tmp_path):
    """The option is named as in training (--max_answer_length); a flagfile of an earlier
    version, with --max_answer_tokens, sets it still."""
    flagfile = tmp_path / "export.flags"
    flagfile.write_text(f"--task_dir={tmp_path}\n--max_answer_tokens=0\n")
    proc = run_tool("export", f"--flagfile={flagfile}")
    assert proc.returncode == 1
    assert "--max_answer_length must be positive, got 0." in proc.stderr


# -- predict.py --------------------------------------------------------------------------------

def test_predict_on_a_task_directory_says_to_export_it(tiny_pairs_model):
    task_dir = tiny_pairs_model["task"]
    proc = run_tool("predict", f"--model_dir={task_dir}")
    assert_one_line_error(proc, f"--model_dir={task_dir} is a trained task directory",
                          f"python tools/export.py --task_dir={task_dir}")


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("He left.\tHe went away.\nIt rains.\tThe sun shines.\n")
    return path


def test_predict_refuses_a_directory_as_input_or_output(tmp_path, tiny_pairs_model, pairs_file):
    model = f"--model_dir={tiny_pairs_model['export']}"
    proc = run_tool("predict", model, f"--input={tmp_path}")
    assert_one_line_error(proc, f"--input={tmp_path}", "is a directory")
    proc = run_tool("predict", model, f"--input={pairs_file}", f"--output={tmp_path}")
    assert_one_line_error(proc, f"--output={tmp_path}", "is a directory")
    proc = run_tool("predict", model, f"--input={pairs_file}",
                    f"--output={tmp_path / 'missing' / 'out.jsonl'}")
    assert_one_line_error(proc, "--output=", "does not exist")
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("redirect, needle", [("<&-", "stdin is closed"),
                                              (">&-", "stdout is closed"),
                                              (">/dev/full", "stdout: cannot write it: No space")])
def test_predict_with_a_closed_or_full_standard_stream(tiny_pairs_model, pairs_file, redirect,
                                                       needle):
    if "full" in redirect and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    args = [f"--model_dir={tiny_pairs_model['export']}"]
    if "<" not in redirect:
        args.append(f"--input={pairs_file}")
    proc = run_tool("predict", *args, redirect=redirect)
    assert_one_line_error(proc, needle)


# -- finetune.py and pretrain.py: no output directory left by a failed run -------------------

def test_a_failed_fine_tuning_run_leaves_no_output_dir(tmp_path, tiny_pairs_model):
    conll = tmp_path / "bad.conll"
    conll.write_text("In O\nthe O\nbeginning\textra O\n")  # line 3 has 2 columns
    output = tmp_path / "runs" / "tagger"  # runs/ is made by the run too
    args = ["--task=tagging", f"--train_file={conll}",
            f"--init_checkpoint={tiny_pairs_model['encoder']}", "--max_seq_length=16"]
    proc = run_tool("finetune", *args, f"--output_dir={output}")
    assert_one_line_error(proc, str(conll))
    assert not (tmp_path / "runs").exists()
    existing = tmp_path / "mine"  # a directory the user made is left alone
    existing.mkdir()
    proc = run_tool("finetune", *args, f"--output_dir={existing}")
    assert_one_line_error(proc, str(conll))
    assert existing.is_dir()


def test_pretraining_refuses_a_vocab_that_does_not_fit_the_text(tmp_path, ten_token_vocab):
    """ELECTRA on a 10-token vocab (the issue): refused before training, no --model_dir."""
    model_dir = tmp_path / "electra"
    proc = run_tool("pretrain", f"--flagfile={ROOT / 'flags' / 'pretrain_tiny.flags'}",
                    "--objective=electra", "--pair_mode=none", f"--vocab_file={ten_token_vocab}",
                    f"--model_dir={model_dir}")
    assert_one_line_error(proc, str(CORPUS.relative_to(ROOT)), "74.4% of the tokens",
                          "first 1,000 lines are [UNK]", "refused above 50%",
                          "warned above 5%", str(ten_token_vocab))
    assert not model_dir.exists()


# -- the share of [UNK] in the pretraining text ------------------------------------------------

def test_create_pretraining_data_refuses_a_vocab_that_does_not_fit(tmp_path, ten_token_vocab):
    output = tmp_path / "out" / "train.tfrecord"
    proc = run_tool("create_pretraining_data", f"--input_file={CORPUS}",
                    f"--vocab_file={ten_token_vocab}", f"--output_file={output}",
                    "--dupe_factor=1", "--max_seq_length=32")
    assert_one_line_error(proc, f"{CORPUS}: 74.4% of the tokens of its first 1,000 lines are "
                                "[UNK] (refused above 50%; warned above 5%)")
    assert not list(tmp_path.glob("out/*"))


def test_the_dynamic_pipeline_refuses_a_vocab_that_does_not_fit(ten_token_vocab):
    from bert_keras.data.pretraining import pipeline
    from bert_keras.errors import InputError
    from bert_keras.text.tokenizer import BertTokenizer

    with pytest.raises(InputError, match=r"74\.4% of the tokens .* are \[UNK\]"):
        pipeline.dynamic_pretraining_dataset(str(CORPUS), BertTokenizer(ten_token_vocab), 8,
                                             pair_mode="none", check_text=False)


def test_a_tenth_unknown_is_warned_about_once_and_runs(tenth_unknown_vocab, caplog):
    from bert_keras.data.pretraining import documents, unknown_tokens
    from bert_keras.text.tokenizer import BertTokenizer

    tokenizer = BertTokenizer(tenth_unknown_vocab)
    with caplog.at_level(logging.WARNING):
        for _ in range(2):  # a second phase or input pipeline: no second warning
            share = unknown_tokens.check_unknown_share(
                str(CORPUS), documents.read_documents([CORPUS], warn=False), tokenizer)
    assert 0.05 < share < 0.5
    warnings = [r.getMessage() for r in caplog.records if "[UNK]" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert f"{CORPUS}: {share:.1%} of the tokens of its first 1,000 lines are [UNK]" in warnings[0]
    assert "\n" not in warnings[0]


def test_the_bundled_vocab_fits_the_bundled_corpus(caplog):
    from bert_keras.data.pretraining import documents, unknown_tokens
    from bert_keras.data.pretraining.stages import default_vocab_file
    from bert_keras.text.tokenizer import BertTokenizer

    with caplog.at_level(logging.WARNING):
        share = unknown_tokens.check_unknown_share(
            "bundled", documents.read_documents([CORPUS], warn=False),
            BertTokenizer(default_vocab_file()))
    assert share < 0.05 and not [r for r in caplog.records if "[UNK]" in r.getMessage()]


# -- the output directory helper itself ---------------------------------------------------------

def fail_in(path, records=(), files=(), dirs=()):
    """Runs a block under removed_if_failed(path, records) that makes `path`, the directories
    `dirs` and the files `files` in it (relative paths), then fails."""
    from bert_keras.training import output_dirs

    path = pathlib.Path(path)
    with pytest.raises(RuntimeError):
        with output_dirs.removed_if_failed(path, records=records):
            path.mkdir(parents=True, exist_ok=True)
            for name in dirs:
                (path / name).mkdir(parents=True)
            for name in files:
                (path / name).parent.mkdir(parents=True, exist_ok=True)
                (path / name).write_text("x")
            raise RuntimeError("bad input")


def test_removed_if_failed_removes_only_what_holds_nothing_of_value(tmp_path):
    fail_in(tmp_path / "a" / "b", records=("flags.json",), files=["flags.json"], dirs=["empty"])
    assert not (tmp_path / "a").exists()  # b and its parent a, both made by the run
    fail_in(tmp_path / "c", records=("flags.json",), files=["flags.json", "checkpoints/ckpt-1"])
    assert (tmp_path / "c" / "checkpoints" / "ckpt-1").exists()  # a checkpoint: kept
    (tmp_path / "d").mkdir()
    fail_in(tmp_path / "d", records=("flags.json",), files=["flags.json"])
    assert (tmp_path / "d" / "flags.json").exists()  # made by the user: left alone


def test_a_squad_answer_not_in_its_context_is_one_line():
    import bert_keras as bk
    from bert_keras.tasks.span_qa.featurizer import span_features

    example = bk.SpanExample("q1", "Who wept?", "Jesus wept.", answers=[("zzz", 0)],
                             source="train.json:3")
    tokenizer = bk.load_tokenizer("bert_keras/assets")
    with pytest.raises(bk.InputError, match="train.json:3: answer 'zzz' is not at character 0"):
        span_features([example], tokenizer, seq_length=32)
