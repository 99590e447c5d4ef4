"""The tools on real TFDS datasets (no mock, no network): the commands of docs/data_formats.md's
"TFDS datasets" section run as written, with the small datasets of tests/support/tfds_fixtures
in place of glue/mrpc and my_corpus and tiny model settings added; and an unprepared dataset
refused by every tool at once, in one line, leaving nothing behind."""

import json
import os
import pathlib
import re
import shlex
import sys
import time

import pytest

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "data_formats.md"
SUPPORT = ROOT / "tests" / "support"
# Code forked by tool_runner.run_code has the server's sys.path: PYTHONPATH=SUPPORT, as the
# docs' commands are run here, does not reach it, so the code puts SUPPORT there itself.
ON_PATH = f"import sys; sys.path.insert(0, {str(SUPPORT)!r})\n"
# What the docs' commands name -> what the tests run instead: the fixture datasets (prepared
# after importing their module, as a user's own dataset is) and temporary directories.
DATASETS = {"glue/mrpc": "bk_bible_paraphrase", "my_corpus": "bk_bible_text"}
IMPORTS = {"import tensorflow_datasets as tfds": "import tfds_fixtures.builders, "
           "tensorflow_datasets as tfds", "import my_datasets,": "import tfds_fixtures.builders,"}
TINY = {
    "finetune": ["--max_seq_length=48", "--train_batch_size=16", "--eval_batch_size=16",
                 "--num_train_epochs=1", "--max_train_examples=64", "--learning_rate=1e-3",
                 "--verbose=0"],
    "create_pretraining_data": ["--max_seq_length=32", "--max_predictions_per_seq=5",
                                "--dupe_factor=1", "--documents_per_chunk=50"],
    "pretrain": ["--preset=bert_tiny", "--max_seq_length=32", "--max_predictions_per_seq=5",
                 "--documents_per_chunk=20", "--train_steps=4", "--global_batch_size=8",
                 "--warmup_steps=1", "--checkpoint_every=2", "--log_every=2"],
}


def doc_commands():
    """The `python ...` lines of the fenced block of the docs' TFDS section, in order."""
    text = DOCS.read_text()
    section = text[text.index("## TFDS datasets"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.startswith("python ")]


def as_tested(command, data_dir, runs, checkpoint=None):
    """A docs command with the substitutions above, as an argv."""
    for old, new in {**IMPORTS, **DATASETS}.items():
        command = command.replace(old, new)
    command = command.replace("'tfds_data'", repr(str(data_dir)))
    command = command.replace("--tfds_data_dir=tfds_data", f"--tfds_data_dir={data_dir}")
    if checkpoint is not None:
        command = command.replace("runs/pretrain/encoder", str(checkpoint))
    command = command.replace("=runs/", f"={runs}/")
    argv = shlex.split(command)
    return [sys.executable] + argv[1:]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The docs' two prepare commands (`python -c "..."`), run as written (forked as a tool
    is, tests/support on the path as PYTHONPATH puts it there): the data dir."""
    data_dir = tmp_path_factory.mktemp("tfds_data")
    env = dict(os.environ, PYTHONPATH=str(SUPPORT), TF_CPP_MIN_LOG_LEVEL="3")
    prepares = [c for c in doc_commands() if c.startswith("python -c")]
    assert len(prepares) == 2
    for command in prepares:
        argv = as_tested(command, data_dir, tmp_path_factory.mktemp("unused"))
        assert argv[1] == "-c" and len(argv) == 3
        proc = tool_runner.run_code(ON_PATH + argv[2], cwd=ROOT, env=env, capture_output=True,
                                    text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(os.listdir(data_dir)) == ["bk_bible_paraphrase", "bk_bible_text", "downloads"]
    return data_dir


def run_doc_command(tool, prepared, runs, checkpoint=None, extra=()):
    (command,) = [c for c in doc_commands() if c.startswith(f"python tools/{tool}.py")]
    argv = as_tested(command, prepared, runs, checkpoint)
    assert argv[1] == f"tools/{tool}.py"
    start = time.monotonic()
    proc = tool_runner.run_tool(tool, *argv[2:], *TINY[tool], *extra)
    return proc, time.monotonic() - start


def test_docs_show_only_commands_that_run_here():
    """Every command of the section is one of the runs below (prepare x2, the three tools),
    and the offline recipe needs nothing bert_keras does not install (no `tfds build`)."""
    commands = doc_commands()
    assert [shlex.split(c)[1] for c in commands] == [
        "-c", "tools/finetune.py", "-c", "tools/create_pretraining_data.py", "tools/pretrain.py"]
    assert not re.search(r"^\s*tfds build", DOCS.read_text(), re.M)  # needs apache_beam


def test_finetune_reads_a_prepared_dataset_without_its_code(prepared, tiny_checkpoint, tmp_path):
    proc, seconds = run_doc_command("finetune", prepared, tmp_path / "runs", tiny_checkpoint)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "runs" / "mrpc"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["complete"] and metrics["train_examples"] == 64
    assert metrics["eval_examples"] == 32  # its validation split, found by default
    assert {"accuracy", "f1"} <= set(metrics["eval"])
    info = json.loads((out / "best" / "task.json").read_text())
    assert info["labels"] == ["different", "paraphrase"]  # the ClassLabel's names and order
    assert info["text_fields"] == ["text_a", "text_b"]  # sentence1 + sentence2: a pair
    print(f"finetune on bk_bible_paraphrase: {seconds:.1f} s")


def test_create_pretraining_data_reads_a_prepared_text_dataset(prepared, tmp_path):
    proc, seconds = run_doc_command("create_pretraining_data", prepared, tmp_path / "runs")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["documents"] == 120 and summary["instances"] > 100
    record = tmp_path / "runs" / "pretrain_data" / "train.tfrecord"
    assert summary["output_files"] == [str(record)] and record.stat().st_size > 0
    print(f"create_pretraining_data on bk_bible_text: {seconds:.1f} s")


def test_pretrain_reads_a_prepared_text_dataset(prepared, tmp_path):
    proc, seconds = run_doc_command("pretrain", prepared, tmp_path / "runs")
    assert proc.returncode == 0, proc.stderr[-3000:]
    model_dir = tmp_path / "runs" / "pretrain_tfds"
    assert "Finished at step 4" in proc.stdout
    assert (model_dir / "encoder").is_dir()
    config = json.loads((model_dir / "run_config.json").read_text())
    assert config["tfds_name"] == "bk_bible_text" and config["train_text"] is None
    print(f"pretrain on bk_bible_text: {seconds:.1f} s")


# ------------------------------------------------------------------ refusals


def refused(tool, args, env=None):
    start = time.monotonic()
    proc = tool_runner.run_tool(tool, *args, env=env)
    seconds = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "TFDS dataset" in line]
    assert len(errors) == 1, proc.stderr  # one line says it all
    assert errors[0].startswith(f"{tool}.py: TFDS dataset "), proc.stderr
    return errors[0], seconds, proc.stderr


def check_refusal(line, name, data_dir):
    assert f"TFDS dataset {name!r}" in line and f"data dir {data_dir}" in line
    assert "--tfds_data_dir=DIR" in line and "download_and_prepare()" in line


@pytest.mark.parametrize("name", ["glue/sst2", "bk_bible_paraphrase"])
def test_finetune_refuses_an_unprepared_dataset_at_once(tiny_checkpoint, tmp_path, name):
    data_dir, out = tmp_path / "tfds", tmp_path / "run"
    data_dir.mkdir()
    line, seconds, _ = refused("finetune", [
        "--task=classification", f"--tfds_name={name}", f"--tfds_data_dir={data_dir}",
        f"--init_checkpoint={tiny_checkpoint}", f"--output_dir={out}"])
    check_refusal(line, name, data_dir)
    assert seconds < 30, seconds  # not minutes of download retries
    assert os.listdir(data_dir) == [] and not out.exists()


def test_finetune_refusal_does_not_create_the_default_data_dir(tiny_checkpoint, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    line, _, _ = refused("finetune", [
        "--task=classification", "--tfds_name=glue/mrpc", f"--init_checkpoint={tiny_checkpoint}",
        f"--output_dir={tmp_path / 'run'}"], env={"HOME": str(home), "TFDS_DATA_DIR": ""})
    check_refusal(line, "glue/mrpc", home / "tensorflow_datasets")
    assert "--tfds_download" in line
    assert os.listdir(home) == []


def test_create_pretraining_data_refuses_an_unprepared_dataset(tmp_path):
    data_dir, output = tmp_path / "no_such_dir", tmp_path / "out" / "train.tfrecord"
    line, seconds, _ = refused("create_pretraining_data", [
        "--tfds_name=bk_bible_text", f"--tfds_data_dir={data_dir}", f"--output_file={output}"])
    check_refusal(line, "bk_bible_text", data_dir)
    assert seconds < 30, seconds
    assert not data_dir.exists() and not output.parent.exists()


def test_pretrain_refuses_an_unprepared_dataset_before_any_work(tmp_path):
    data_dir, model_dir = tmp_path / "tfds", tmp_path / "run"
    data_dir.mkdir()
    line, seconds, _ = refused("pretrain", [
        "--tfds_name=bk_bible_text", f"--tfds_data_dir={data_dir}", f"--model_dir={model_dir}",
        *TINY["pretrain"]])
    check_refusal(line, "bk_bible_text", data_dir)
    assert seconds < 30, seconds
    assert os.listdir(data_dir) == [] and not model_dir.exists()


def test_tfds_download_prepares_the_dataset_when_asked(tmp_path):
    """--tfds_download lets TFDS prepare a dataset it has code for (here the fixture's builder,
    imported before the tool runs) into the data dir; the tool then reads it."""
    data_dir, output = tmp_path / "tfds", tmp_path / "out.tfrecord"
    tool = ROOT / "tools" / "create_pretraining_data.py"
    prelude = (ON_PATH + "import runpy, sys, tfds_fixtures.builders\n"
               f"sys.argv = [{str(tool)!r}] + sys.argv[1:]\n"
               f"runpy.run_path({str(tool)!r}, run_name='__main__')\n")
    args = ["--tfds_name=bk_bible_text", f"--tfds_data_dir={data_dir}", f"--output_file={output}",
            *TINY["create_pretraining_data"]]
    env = dict(os.environ, PYTHONPATH=str(SUPPORT), **tool_runner.QUIET)
    proc = tool_runner.run_code(prelude, *args, "--tfds_download", cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["documents"] == 120 and output.stat().st_size > 0
    assert (data_dir / "bk_bible_text" / "1.0.0" / "dataset_info.json").exists()
