"""Bad text input through the tools (processes), under the policy of bert_keras.text_files.

Each case must end with a non-zero exit, a one-line message naming the file (or stdin) and
the problem, no traceback, and nothing at the final output path. A few bad lines (1% or less)
run, with one warning giving the count.
"""

import functools
import glob
import gzip
import pathlib
import shutil
import sys

import pytest

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
BAD = b"caf\xe9 \xff\xfe"  # Latin-1 and stray bytes: not UTF-8


run_tool = functools.partial(tool_runner.run_tool, text=False)  # bytes: stderr decoded here


def assert_refused(proc, output, *needles):
    """Non-zero exit, a message with every needle (file and problem), no traceback, and no
    file (nor a temporary sibling) at the output path."""
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode != 0, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    for needle in needles:
        assert str(needle) in stderr, (needle, stderr[-2000:])
    assert not glob.glob(f"{output}*"), glob.glob(f"{output}*")


def corpus_lines(n=300):
    """The first n lines of the bundled corpus (sentences, blank lines between documents)."""
    with gzip.open(CORPUS, "rb") as f:
        return [next(f) for _ in range(n)]


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    """{case: (path, words its error message must hold)} for the bad inputs of the issue."""
    d = tmp_path_factory.mktemp("bad_text")
    lines = corpus_lines()
    files = {
        "binary": (shutil.which("ls") or sys.executable, "looks binary, not text"),
        "gzip_named_txt": (gzip.compress(b"".join(lines)), "gzip-compressed data, not text"),
        "empty": (b"", "is empty"),
        "blank_only": (b"\n  \n\t\n\n", "has no text"),
        "one_sentence": (b"In the beginning God created the heavens and the earth.\n",
                         "NSP needs at least 2 documents"),
        # every 10th line bad: 30 of 300, far above the 1% allowed
        "many_invalid_utf8": (b"".join(BAD + b"\n" if i % 10 == 3 else line
                                       for i, line in enumerate(lines)),
                              "30 of 300 lines are not valid UTF-8"),
    }
    out = {}
    for case, (content, problem) in files.items():
        path = d / f"{case}.txt"
        if isinstance(content, str):
            shutil.copy(content, path)
        else:
            path.write_bytes(content)
        out[case] = (path, problem)
    return out


@pytest.fixture(scope="module")
def few_invalid(tmp_path_factory):
    """300 corpus lines with 2 that are not UTF-8 (0.7%: under the 1% allowed)."""
    lines = corpus_lines()
    lines[5], lines[250] = BAD + b"\n", b"x\x00y\n"
    path = tmp_path_factory.mktemp("few") / "few_invalid.txt"
    path.write_bytes(b"".join(lines))
    return path


def assert_warned_once(proc, path, count):
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, stderr[-3000:]
    warnings = [line for line in stderr.splitlines() if "not valid UTF-8" in line]
    assert len(warnings) == 1 and f"{path}:" in warnings[0], warnings
    assert f"{count} of 300 lines" in warnings[0], warnings


# -- create_pretraining_data.py ---------------------------------------------------------------

CASES = ["binary", "gzip_named_txt", "empty", "blank_only", "one_sentence", "many_invalid_utf8"]


@pytest.mark.parametrize("case", CASES)
def test_create_pretraining_data_refuses(tmp_path, bad_files, case):
    path, problem = bad_files[case]
    output = tmp_path / "out" / "train.tfrecord"
    proc = run_tool("create_pretraining_data", f"--input_file={path}", f"--output_file={output}",
                    "--dupe_factor=1", "--max_seq_length=32", "--max_predictions_per_seq=5",
                    "--num_output_shards=2")
    assert_refused(proc, output, path, problem)


def test_create_pretraining_data_skips_a_few_bad_lines(tmp_path, few_invalid):
    output = tmp_path / "train.tfrecord"
    proc = run_tool("create_pretraining_data", f"--input_file={few_invalid}",
                    f"--output_file={output}", "--dupe_factor=1", "--max_seq_length=32",
                    "--max_predictions_per_seq=5")
    assert_warned_once(proc, few_invalid, 2)
    assert output.stat().st_size > 0 and b'"invalid_utf8_lines": 2' in proc.stdout


# -- pretrain.py --train_text -----------------------------------------------------------------

PRETRAIN = [f"--flagfile={ROOT / 'flags' / 'pretrain_tiny.flags'}", "--train_steps=2",
            "--warmup_steps=0", "--checkpoint_every=2", "--log_every=1"]


@pytest.mark.parametrize("case", CASES)
def test_pretrain_refuses_before_training(tmp_path, bad_files, case):
    path, problem = bad_files[case]
    model_dir = tmp_path / "run"
    proc = run_tool("pretrain", *PRETRAIN, f"--model_dir={model_dir}", f"--train_text={path}")
    assert_refused(proc, model_dir, path, problem)


# A pretrain run on a few bad lines (2 of 300) trains with one warning: the text of
# tests/tools/test_pretrain_tool.py's kill -9 run.


# -- build_vocab.py ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", [c for c in CASES if c != "one_sentence"])  # no pairs needed
def test_build_vocab_refuses(tmp_path, bad_files, case):
    path, problem = bad_files[case]
    output = tmp_path / "vocab.txt"
    proc = run_tool("build_vocab", f"--input={path}", f"--output={output}", "--vocab_size=100")
    assert_refused(proc, output, path, problem)


def test_build_vocab_skips_a_few_bad_lines(tmp_path, few_invalid):
    output = tmp_path / "vocab.txt"
    proc = run_tool("build_vocab", f"--input={few_invalid}", f"--output={output}",
                    "--vocab_size=100")
    assert_warned_once(proc, few_invalid, 2)
    vocab = output.read_text(encoding="utf-8").split()
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert not any("\ufffd" in token or "caf" in token for token in vocab)
    assert (proc.stdout + proc.stderr).count(b"Wrote ") == 1  # its result, said once


# -- predict.py and finetune.py: need a model -------------------------------------------------
# predict.py reads and checks its whole input before its model loads (the export's inputs come
# from its metadata): its refusals are of an export whose saved_model.pb is not a SavedModel
# (conftest.unloadable_pairs_export), which they would fail on, had they loaded it.

def pairs(n):
    return [f"sentence {i} here\tand its pair {i}\n".encode() for i in range(n)]


def test_predict_refuses_invalid_utf8_on_stdin(tmp_path, unloadable_pairs_export):
    lines = pairs(40)
    for i in range(0, 40, 4):
        lines[i] = BAD + b"\t" + BAD + b"\n"
    output = tmp_path / "preds.jsonl"
    proc = run_tool("predict", f"--model_dir={unloadable_pairs_export}", f"--output={output}",
                    input=b"".join(lines))
    assert_refused(proc, output, "stdin: 10 of 40 lines are not valid UTF-8", "first: line 1")


def test_predict_replaces_a_few_bad_bytes_with_one_warning(tmp_path, tiny_pairs_model):
    lines = pairs(300)
    lines[7] = b"caf\xe9\tau lait\n"
    lines[200] = b"\xff\tpair\n"
    output = tmp_path / "preds.jsonl"
    proc = run_tool("predict", f"--model_dir={tiny_pairs_model['export']}", f"--output={output}",
                    "--batch_size=64", input=b"".join(lines))
    assert_warned_once(proc, "stdin", 2)
    rows = output.read_text(encoding="utf-8").splitlines()
    assert len(rows) == 300 and '"text_a": "caf\ufffd"' in rows[7]  # one row per input line


def test_predict_leaves_no_partial_output_on_a_malformed_later_line(tmp_path,
                                                                    unloadable_pairs_export):
    lines = pairs(40)
    lines[32] = b"no tab on this line\n"
    source = tmp_path / "in.tsv"
    source.write_bytes(b"".join(lines))
    output = tmp_path / "preds.jsonl"
    proc = run_tool("predict", f"--model_dir={unloadable_pairs_export}", f"--input={source}",
                    f"--output={output}", "--batch_size=8")
    assert_refused(proc, output, f"{source}: Line 33 has 1 tab-separated fields")


@pytest.mark.parametrize("source", ["stdin", "file"])
def test_predict_to_stdout_writes_no_row_before_a_malformed_later_line(
        tmp_path, unloadable_pairs_export, source):
    """The whole input is checked before the first prediction: 32 good lines in 4 batches,
    then a bad one, print nothing on stdout."""
    lines = pairs(40)
    lines[32] = b"no tab on this line\n"
    path = tmp_path / "in.tsv"
    path.write_bytes(b"".join(lines))
    args = [f"--input={path}"] if source == "file" else []
    proc = run_tool("predict", f"--model_dir={unloadable_pairs_export}", "--batch_size=8", *args,
                    input=b"".join(lines) if source == "stdin" else None)
    name = "stdin" if source == "stdin" else path
    assert_refused(proc, tmp_path / "nothing", f"{name}: Line 33 has 1 tab-separated fields")
    assert proc.stdout == b""


@pytest.mark.parametrize("case", ["binary", "empty"])
def test_predict_refuses_a_bad_input_file(tmp_path, bad_files, unloadable_pairs_export, case):
    path, problem = bad_files[case]
    output = tmp_path / "preds.jsonl"
    proc = run_tool("predict", f"--model_dir={unloadable_pairs_export}", f"--input={path}",
                    f"--output={output}")
    assert_refused(proc, output, path, problem)


@pytest.mark.parametrize("line, problem", [
    (b'{"text_a": "He left.", "text_c": "He went away."}\n',
     "Line 1 has keys ['text_a', 'text_c']; this model takes ['text_a', 'text_b']"),
    (b"He left.\tHe went away.\n", "Line 1 has not JSON (Expecting value)"),
])
def test_predict_refuses_a_json_line_that_is_not_a_request(tmp_path, unloadable_pairs_export,
                                                           line, problem):
    path = tmp_path / "pairs.jsonl"  # JSON lines, by its name
    path.write_bytes(line)
    output = tmp_path / "preds.jsonl"
    proc = run_tool("predict", f"--model_dir={unloadable_pairs_export}", f"--input={path}",
                    f"--output={output}")
    assert_refused(proc, output, f"{path}: {problem}")


@pytest.mark.parametrize("case", ["binary", "many_invalid_utf8"])
def test_finetune_refuses_a_bad_train_file(tmp_path, bad_files, tiny_pairs_model, case):
    path, _ = bad_files[case]
    train = tmp_path / "train.tsv"  # the format comes from the name
    shutil.copy(path, train)
    dev = tmp_path / "dev.tsv"
    dev.write_bytes(b"".join(pairs(4)).replace(b"\n", b"\t1\n"))
    output = tmp_path / "out"
    problem = "looks binary" if case == "binary" else f"{train}:4: invalid UTF-8"
    proc = run_tool("finetune", "--task=classification", f"--train_file={train}",
                    f"--eval_file={dev}", f"--init_checkpoint={tiny_pairs_model['encoder']}",
                    f"--output_dir={output}", "--max_seq_length=16")
    # The run makes --output_dir before it reads the data (training/finetuning.py): what
    # matters here is that nothing was written in it.
    assert_refused(proc, output / "metrics.json", train, problem)
    assert not output.exists() or not any(output.iterdir())


# -- finetune.py: labels that are mistakes, rows that do not parse -----------------------------

LABEL_CASES = {
    # case: (file name, content, needles after the path: the row and the value)
    "empty_label_tsv": ("train.tsv", "yes\ta\tb\nno\tc\td\n\te\tf\nyes\tg\th\n",
                        [":3: empty label (column 0)"]),
    "empty_label_csv_eval": ("dev.csv", 'yes,a,b\n"  ",c,d\nno,e,f\n',
                             [":2: empty label (column 0)"]),
    "null_label_jsonl": ("train.jsonl",
                         '{"label": "yes", "text": "a", "text_b": "b"}\n'
                         '{"label": null, "text": "c", "text_b": "d"}\n',
                         [":2: label field 'label' is null"]),
    "header_row_named": ("train.tsv", "label\tsentence1\tsentence2\nyes\ta\tb\nno\tc\td\n",
                         [":1: label 'label' looks like a column name", "--header"]),
    "header_row_over_integers": ("train.tsv",
                                 "is_paraphrase\t#1 String\t#2 String\n1\ta\tb\n0\tc\td\n",
                                 [":1: label 'is_paraphrase' looks like a column name",
                                  "--header"]),
    "malformed_row": ("train.tsv", "yes\ta\tb\nno\tc\n", [":2: expected 3 columns, got 2"]),
    "unseen_eval_label": ("dev.tsv", "yes\ta\tb\nmaybe\tc\td\n",
                          ["label 'maybe' in", ":2 is not in the label map"]),
}


@pytest.mark.parametrize("case", sorted(LABEL_CASES))
def test_finetune_refuses_bad_labels_and_rows(tmp_path, tiny_pairs_model, case):
    """One line naming the file, the row and the value, exit 1, no traceback, nothing written:
    an empty label and a header row read without --header would otherwise become classes."""
    name, content, needles = LABEL_CASES[case]
    suffix = pathlib.Path(name).suffix
    good = "yes\ta\tb\nno\tc\td\n" if suffix == ".tsv" else "yes,a,b\nno,c,d\n"
    if suffix == ".jsonl":
        good = ('{"label": "yes", "text": "a", "text_b": "b"}\n'
                '{"label": "no", "text": "c", "text_b": "d"}\n')
    bad = tmp_path / name
    bad.write_text(content)
    other = tmp_path / ("dev" if name.startswith("train") else "train") / f"x{suffix}"
    other.parent.mkdir()
    other.write_text(good)
    train, dev = (bad, other) if name.startswith("train") else (other, bad)
    columns = (["--text_b_field=text_b"] if suffix == ".jsonl"
               else ["--text_a_column=1", "--text_b_column=2"])
    output = tmp_path / "out"
    proc = run_tool("finetune", "--task=classification", f"--train_file={train}",
                    f"--eval_file={dev}", *columns,
                    f"--init_checkpoint={tiny_pairs_model['encoder']}",
                    f"--output_dir={output}", "--max_seq_length=16")
    needles = [f"{bad}{n}" if n.startswith(":") else n for n in needles]
    assert_refused(proc, output / "metrics.json", *needles)
    last = proc.stderr.decode().strip().splitlines()[-1]  # the one line holds it all
    assert last.startswith("finetune.py: ") and all(n in last for n in needles), last
    assert not output.exists() or not any(output.iterdir())


# -- invalid UTF-8 inside a text: every tokenizer as transformers after decode("replace") ------

FAMILIES = ROOT / "tests" / "fixtures" / "families"
# Stray bytes, a truncated sequence at the end and inside a word, an overlong encoding,
# Latin-1: each maximal bad sequence is one U+FFFD for Python's decode(errors="replace").
INVALID_TEXTS = [b"bad \xff\xfe byte", b"trunc \xe2\x82", b"mid\xffword ok", b"x\xf0\x9f\x98y",
                 b"\xc0\xafz", b"caf\xe9 au lait"]


@pytest.mark.parametrize("family", ["bert_qa", "albert", "roberta"])
def test_invalid_utf8_tokenizes_as_transformers_after_decoding_with_replace(family):
    """docs/serving.md: bad bytes become U+FFFD (one per maximal bad sequence, as Python's
    `bytes.decode("utf-8", "replace")`), which each tokenizer then treats as transformers'
    does: WordPiece drops it, SentencePiece (ALBERT's charsmap) reads it as a space, byte-level
    BPE (RoBERTa) keeps it as the tokens of its three bytes. Offsets still point into the
    request's own bytes."""
    tokenizers = pytest.importorskip("tokenizers")
    import tensorflow as tf

    from bert_keras.text.tokenizers import load_tokenizer

    ours = load_tokenizer(str(FAMILIES / family))
    reference = tokenizers.Tokenizer.from_file(str(FAMILIES / family / "tokenizer.json"))
    want = [reference.encode(text.decode("utf-8", "replace"), add_special_tokens=False).ids
            for text in INVALID_TEXTS]
    assert ours.tokenize(tf.constant(INVALID_TEXTS)).to_list() == want
    ids, starts, ends = (x.to_list() for x in ours.tokenize_with_offsets(
        tf.constant(INVALID_TEXTS))[:3])
    assert ids == want
    text, row = INVALID_TEXTS[2], 2  # b"mid\xffword ok"
    spans = [text[s:e] for s, e in zip(starts[row], ends[row])]
    replacement = reference.encode("\ufffd", add_special_tokens=False).ids
    if family == "roberta":  # the U+FFFD pieces span the one bad byte they stand for
        assert replacement and set(replacement) <= set(ids[row])
        assert all(span == b"\xff" for i, span in zip(ids[row], spans) if i in replacement)
    else:
        assert b"\xff" not in b"".join(spans)
    assert spans[-2:] == [b"o", b"k"] or spans[-1] == b"ok"
