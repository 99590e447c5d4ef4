"""A full disk through the tools (processes forked by tool_runner): each tool runs under a
file-size limit (`RLIMIT_FSIZE`, set in the tool's process before the tool starts; Python
ignores SIGXFSZ, so a write past it fails with EFBIG "File too large", as a write to a full
disk fails with ENOSPC) smaller than its output.

Each must end with exit status 1, one line naming the output and the problem (no traceback),
and nothing at the final output path: no file, no temporary sibling.
"""

import glob
import gzip
import os
import pathlib

import pytest

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
PROBLEM = "cannot write it: File too large"


def run_tool(tool, *args, max_file_bytes, stdin=None, prelude=None):
    """Runs tools/TOOL.py with every file it writes limited to `max_file_bytes`; `prelude`:
    Python run in the tool's process first (it may lower the limit later itself)."""
    script = str(ROOT / "tools" / f"{tool}.py")
    code = (f"import resource, runpy, sys\n"
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({max_file_bytes}, {max_file_bytes}))\n"
            f"{prelude or ''}\n"
            f"sys.argv = [{script!r}] + sys.argv[1:]\n"
            f"sys.path[0] = {str(ROOT / 'tools')!r}\n"
            f"runpy.run_path({script!r}, run_name='__main__')\n")
    return tool_runner.run_code(code, *args, input=stdin, capture_output=True, cwd=ROOT,
                                env=ENV, timeout=600)


def assert_refused(proc, output, *needles):
    """Exit 1; the last stderr line is the tool's one-line message holding every needle (the
    path and the problem); no traceback; nothing at `output` nor beside it."""
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    for needle in map(str, needles):
        assert needle in last, (needle, stderr[-2000:])
    assert not glob.glob(f"{output}*"), glob.glob(f"{output}*")
    parent = pathlib.Path(output).parent
    name = pathlib.Path(output).name
    assert (not [p for p in os.listdir(parent) if p.startswith(f".{name}.")]
            if parent.exists() else True)


def corpus_file(directory, lines):
    path = directory / "corpus.txt"
    with gzip.open(CORPUS, "rb") as f:
        path.write_bytes(b"".join(next(f) for _ in range(lines)))
    return path


# -- text tools ---------------------------------------------------------------------------------

def test_create_pretraining_data_on_a_full_disk(tmp_path):
    output = tmp_path / "out" / "train.tfrecord"
    proc = run_tool("create_pretraining_data", f"--input_file={corpus_file(tmp_path, 2000)}",
                    f"--output_file={output}", "--dupe_factor=1", "--max_seq_length=32",
                    "--max_predictions_per_seq=5", "--num_output_shards=2",
                    max_file_bytes=20_000)
    assert_refused(proc, output, f"{output}-*-of-00002", PROBLEM)


def test_build_vocab_on_a_full_disk(tmp_path):
    output = tmp_path / "vocab.txt"
    proc = run_tool("build_vocab", f"--input={corpus_file(tmp_path, 3000)}",
                    f"--output={output}", "--vocab_size=2000", max_file_bytes=4_000)
    assert_refused(proc, output, output, PROBLEM)


# -- predict, finetune, export: need a model ----------------------------------------------------

def pairs(n):
    return b"".join(f"sentence {i} here\tand its pair {i}\n".encode() for i in range(n))


def test_predict_output_on_a_full_disk(tmp_path, tiny_pairs_model):
    output = tmp_path / "preds.jsonl"
    proc = run_tool("predict", f"--model_dir={tiny_pairs_model['export']}", f"--output={output}",
                    stdin=pairs(200), max_file_bytes=10_000)  # about 30 kB of predictions
    assert_refused(proc, output, output, PROBLEM)


FINETUNE = ["--task=classification", "--text_a_column=1", "--text_b_column=2",
            "--max_seq_length=16", "--num_train_epochs=1", "--train_batch_size=8"]


@pytest.fixture
def task_files(tmp_path):
    rows = "".join(f"{'yes' if i % 2 else 'no'}\tsentence {i}\tits pair {i}\n" for i in range(32))
    (tmp_path / "train.tsv").write_text(rows)
    (tmp_path / "dev.tsv").write_text(rows[:200])
    return [f"--train_file={tmp_path / 'train.tsv'}", f"--eval_file={tmp_path / 'dev.tsv'}"]


def test_finetune_checkpoint_on_a_full_disk(tmp_path, tiny_pairs_model, task_files):
    """The epoch's checkpoint (model and optimizer, about 1.5 MB) is written before best/: it
    fails first, and nothing of the epoch is kept."""
    output = tmp_path / "run"
    proc = run_tool("finetune", *FINETUNE, *task_files,
                    f"--init_checkpoint={tiny_pairs_model['encoder']}",
                    f"--output_dir={output}", max_file_bytes=200_000)
    assert_refused(proc, output / "best", output / "checkpoints" / "ckpt-4", PROBLEM)
    assert not list((output / "checkpoints").glob("ckpt-4.*"))


def test_finetune_best_on_a_full_disk(tmp_path, tiny_pairs_model, task_files):
    """best/ (model.keras about 1.6 MB) on a disk that fills up after the epoch's checkpoint:
    the limit is set when the tool starts saving best/."""
    output = tmp_path / "run"
    prelude = ("import resource\n"
               "from bert_keras.tasks import task_io\n"
               "save_task = task_io.save_task\n"
               "def save_on_a_full_disk(*args, **kwargs):\n"
               "    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))\n"
               "    return save_task(*args, **kwargs)\n"
               "task_io.save_task = save_on_a_full_disk\n")
    proc = run_tool("finetune", *FINETUNE, *task_files,
                    f"--init_checkpoint={tiny_pairs_model['encoder']}",
                    f"--output_dir={output}", prelude=prelude, max_file_bytes=2**40)
    assert_refused(proc, output / "best", output / "best", PROBLEM)
    assert (output / "checkpoints" / "ckpt-4.index").exists()  # the rerun resumes from it


def test_export_on_a_full_disk(tmp_path, tiny_pairs_model):
    base = tmp_path / "saved_models"
    proc = run_tool("export", f"--task_dir={tiny_pairs_model['task']}", "--model_name=pairs",
                    f"--export_dir_base={base}", max_file_bytes=100_000)
    assert_refused(proc, base / "pairs" / "1", base / "pairs" / "1", PROBLEM)
    assert not [p for p in os.listdir(base / "pairs") if p.startswith(".tmp-")]


def test_pretrain_checkpoint_on_a_full_disk(tmp_path):
    model_dir = tmp_path / "run"
    proc = run_tool("pretrain", f"--flagfile={ROOT / 'flags' / 'pretrain_tiny.flags'}",
                    f"--model_dir={model_dir}", "--train_steps=2", "--checkpoint_every=2",
                    "--warmup_steps=0", max_file_bytes=1_000_000)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1 and "Traceback" not in stderr, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert str(model_dir / "checkpoints" / "ckpt-2") in last and "File too large" in last, last
    assert not (model_dir / "encoder").exists()
    assert not list((model_dir / "checkpoints").glob("ckpt-2.*"))
