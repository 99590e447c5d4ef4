"""tools/predict.py writes one answer per line: each line's outputs are its own (no padding
from the lines batched with it), keys in a fixed order, and a progress line on stderr only
where a person watches."""

import json
import os
import pathlib
import pty
import shutil
import sys
import threading

import pytest
import tokenizers

from bert_keras.metrics.entities import get_entities
from bert_keras.serving.export import METADATA_FILE

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
TAGGER = ROOT / "tests" / "fixtures" / "families" / "bert_tagger"
REFERENCE = tokenizers.Tokenizer.from_file(str(TAGGER / "tokenizer.json"))
LINES = ["Jesus wept.", "", "In the beginning God created the heavens and the earth, and the "
         "earth was formless and empty, and darkness was on the surface of the deep.",
         "Paul", "Mr. Bumble's letter went to Jerusalem and Rome."]


@pytest.fixture(scope="module")
def tagger(tagger_export):
    """The bert_tagger fixture (a transformers *ForTokenClassification) exported at 16 tokens
    a row, so the long line takes several rows (conftest.tagger_export): (model, export)."""
    return tagger_export("bert_tagger")


def predict(export, lines, *args):
    proc = tool_runner.run_tool("predict", f"--model_dir={export}", *args,
                                input="".join(line + "\n" for line in lines))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


def assert_same_outputs(got, want, line):
    """The same words, tags and spans; scores to float32 rounding, since a batch of lines is
    padded to its longest line and oneDNN's sums over other lengths may round differently."""
    if isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), line
    elif isinstance(want, (list, dict)):
        assert type(got) is type(want) and len(got) == len(want), line
        pairs = ((got[k], want[k]) for k in want) if isinstance(want, dict) else zip(got, want)
        if isinstance(want, dict):
            assert list(got) == list(want), line
        for g, w in pairs:
            assert_same_outputs(g, w, line)
    else:
        assert got == want, line


def test_each_line_gets_only_its_own_words(tagger):
    _, export = tagger
    # --batch_size=1: each model call holds one line only (predict.py's batches of lines).
    alone = predict(export, LINES, "--batch_size=1")
    batched = predict(export, LINES, "--batch_size=32")
    assert [r["line"] for r in alone] == [r["line"] for r in batched] == [1, 2, 3, 4, 5]
    for one, row in zip(alone, batched):
        assert list(row) == ["line", "inputs", "outputs"]
        assert list(row["outputs"]) == sorted(row["outputs"])
        assert row["inputs"] == one["inputs"], row["line"]
        assert_same_outputs(row["outputs"], one["outputs"], row["line"])
        out = row["outputs"]
        n = len(out["tokens"])
        assert all(len(out[k]) == n for k in ("tags", "tag_ids", "tag_scores", "token_starts",
                                              "token_ends"))
        assert "" not in out["tokens"] and -1 not in out["tag_ids"]
        text = row["inputs"]["text"]
        assert [text[s:e] for s, e in zip(out["token_starts"], out["token_ends"])] == out["tokens"]
        # Every word, past a row of 16 tokens too: the reference pre-tokenizer's words.
        assert out["tokens"] == [w for w, _ in REFERENCE.pre_tokenizer.pre_tokenize_str(text)]
    assert len(batched[2]["outputs"]["tokens"]) > 16
    for row in batched:  # the entities of the tags, seqeval's chunks, at character offsets
        out, text = row["outputs"], row["inputs"]["text"]
        want = [(kind, out["token_starts"][i], out["token_ends"][j])
                for kind, i, j in get_entities(out["tags"])] if out["tags"] else []
        got = [(e["type"], e["start"], e["end"]) for e in out["entities"]]
        assert got == want and all(text[e["start"]:e["end"]] == e["text"]
                                   for e in out["entities"])
        assert all(list(e) == ["type", "text", "start", "end", "score"] for e in out["entities"])


def test_words_mode_tags_each_given_word(tagger):
    model, export = tagger
    lines = ["Mr. Bumble's letter went to Jerusalem .", "Amen", "In  the\tbeginning"]
    rows = predict(export, lines, "--words")
    words = [line.split() for line in lines]
    logits = model.predict(words)
    for row, given, want in zip(rows, words, logits):
        out = row["outputs"]
        assert out["tokens"] == given and row["inputs"] == {"words": given}
        assert out["tags"] == [model.labels[i] for i in want.numpy().argmax(-1)]
        assert len(out["tag_ids"]) == len(given)


def _run_with_terminal_stderr(args):
    """Runs a tool with stderr on a pseudo-terminal; returns (exit status, what it showed)."""
    master, slave = pty.openpty()
    shown = []

    def read():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the other end closed
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    env = dict(os.environ, **dict(tool_runner.QUIET, TF_CPP_MIN_LOG_LEVEL="3"))
    status = tool_runner.run_on_terminal([sys.executable, str(ROOT / "tools" / "predict.py"),
                                          *args], os.ttyname(slave), env=env, cwd=ROOT)
    os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    return status, b"".join(shown).decode("utf-8", "replace")


def test_a_progress_line_on_a_terminal_only(tmp_path, tiny_pairs_model):
    many = tmp_path / "many.tsv"
    many.write_text("He went home.\tHe left.\n" * 400)
    export = f"--model_dir={tiny_pairs_model['export']}"
    status, shown = _run_with_terminal_stderr([export, f"--input={many}",
                                               f"--output={tmp_path / 'out.jsonl'}"])
    assert status == 0, shown
    assert "400/400 lines (100%)" in shown and "lines/s, ETA" in shown, shown
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 400
    status, shown = _run_with_terminal_stderr([export, f"--input={many}", "--quiet",
                                               f"--output={tmp_path / 'quiet.jsonl'}"])
    assert status == 0 and "lines/s" not in shown, shown
    proc = tool_runner.run_tool("predict", export, f"--input={many}",  # stderr: a pipe
                                f"--output={tmp_path / 'piped.jsonl'}")
    assert proc.returncode == 0 and "lines/s" not in proc.stderr, proc.stderr[-2000:]


PAIRS = "He left.\tHe went away.\nIt rains.\tThe sun shines.\n"  # two valid request lines


def _refusal(export, *args):
    """predict.py's run on PAIRS: (exit status, stdout, stderr's last line)."""
    proc = tool_runner.run_tool("predict", f"--model_dir={export}", *args, input=PAIRS)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.returncode, proc.stdout, proc.stderr.splitlines()[-1]


def test_a_signature_it_cannot_run_is_refused_from_the_metadata(unloadable_pairs_export):
    """The export's metadata names its signatures and their inputs: a wrong --signature or
    --words is one line before the model loads (this saved_model.pb is not a SavedModel)."""
    export = unloadable_pairs_export
    for flag, message in [
            ("--signature=nope",
             "--signature 'nope' is not one of ['encode', 'preprocess', 'serving_default']."),
            ("--words", f"--words: the export {export} has no tag_words signature"),
            ("--signature=encode", "Signature 'encode' takes ['input_word_ids', 'input_mask', "
                                   "'input_type_ids'], not text lines.")]:
        status, stdout, last_line = _refusal(export, flag)
        assert status == 1 and stdout == "" and message in last_line, last_line


def _copy_with_metadata(export, to, change):
    """A copy of `export` whose metadata is `change(metadata)` (None: no metadata file)."""
    shutil.copytree(export, to)
    path = to / "assets" / METADATA_FILE
    metadata = change(json.loads(path.read_text()))
    if metadata is None:
        path.unlink()
    else:
        path.write_text(json.dumps(metadata))
    return to


def test_a_saved_model_without_metadata_loads_first_and_answers_alike(tmp_path,
                                                                      tiny_pairs_model):
    """A SavedModel that tools/export.py did not write (no metadata): its signature's inputs
    are learnt from the loaded model, before its input is read; the same answers, the same
    refusals."""
    export = tiny_pairs_model["export"]
    bare = _copy_with_metadata(export, tmp_path / "bare", lambda metadata: None)
    want = tool_runner.run_tool("predict", f"--model_dir={export}", input=PAIRS)
    got = tool_runner.run_tool("predict", f"--model_dir={bare}", input=PAIRS)
    assert want.returncode == got.returncode == 0, got.stderr[-3000:]
    assert got.stdout == want.stdout and len(got.stdout.splitlines()) == 2
    proc = tool_runner.run_tool("predict", f"--model_dir={bare}", input="no tab here\n")
    assert proc.returncode == 1 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1].endswith(
        "stdin: Line 1 has 1 tab-separated fields; this model takes 2: text_a<TAB>text_b")


def test_metadata_of_other_inputs_than_the_saved_model_is_one_line(tmp_path, tiny_pairs_model):
    def renamed(metadata):
        inputs = metadata["signatures"]["serving_default"]["inputs"]
        inputs["text_c"] = inputs.pop("text_b")
        return metadata

    mixed = _copy_with_metadata(tiny_pairs_model["export"], tmp_path / "mixed", renamed)
    status, stdout, last_line = _refusal(mixed)
    assert status == 1 and stdout == ""
    assert (f"The export {mixed} has a signature 'serving_default' taking "
            "{'text_a': ('string', 1), 'text_b': ('string', 1)}, not the "
            "{'text_a': ('string', 1), 'text_c': ('string', 1)} its bert_keras_metadata.json "
            "describes: export the model again.") in last_line


def test_an_export_that_cannot_load_is_one_line_and_writes_nothing(tmp_path, tiny_pairs_model,
                                                                    unloadable_pairs_export):
    """A valid input on an export whose files are damaged: one line naming the file, exit
    status 1, nothing on stdout and no --output file (not even a partial one)."""
    out = tmp_path / "out" / "predictions.jsonl"
    out.parent.mkdir()
    pb = unloadable_pairs_export / "saved_model.pb"
    assert _refusal(unloadable_pairs_export, f"--output={out}") == (
        1, "", f"predict.py: {pb} is not a SavedModel (cannot parse it): export the model "
               "again.")
    assert list(out.parent.iterdir()) == []

    no_variables = tmp_path / "no_variables"
    shutil.copytree(tiny_pairs_model["export"], no_variables)
    shutil.rmtree(no_variables / "variables")
    truncated = tmp_path / "truncated"
    shutil.copytree(tiny_pairs_model["export"], truncated)
    data = next((truncated / "variables").glob("variables.data-*"))
    data.write_bytes(data.read_bytes()[:data.stat().st_size // 2])
    for export, problem in [(no_variables, "missing"), (truncated, "truncated or corrupt")]:
        assert _refusal(export) == (
            1, "", f"predict.py: {export / 'variables'}: the model's weights are {problem}: "
                   "export the model again.")
