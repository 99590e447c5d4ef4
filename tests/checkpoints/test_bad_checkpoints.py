"""Bad checkpoints through the tools: a wrong vocab, a truncated safetensors file, a directory
that is no checkpoint. Each is a one-line message naming the file and the problem, exit 1, no
traceback, and nothing at the output path."""

import pathlib

import pytest

import bert_keras as bk

import tool_runner  # tests/support: tools forked without their imports

REPO = pathlib.Path(__file__).resolve().parents[2]
VOCAB = REPO / "bert_keras" / "assets" / "vocab.txt"


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("encoder")
    tokenizer = bk.BertTokenizer(str(VOCAB))
    encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=tokenizer.vocab_size)
    encoder.save_pretrained(str(directory), tokenizer)
    return directory


def _copy(encoder_dir, target):
    target.mkdir()
    for f in encoder_dir.iterdir():
        (target / f.name).write_bytes(f.read_bytes())
    return target


def _assert_clean_failure(proc, *words):
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for word in words:
        assert word in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize("lines", [197, 10887])
def test_a_vocab_of_another_size_than_the_embedding_is_refused(encoder_dir, tmp_path, lines):
    bad = _copy(encoder_dir, tmp_path / "bad")
    vocab = VOCAB.read_text(encoding="utf-8").splitlines()
    vocab = (vocab + [f"extra{i}" for i in range(lines)])[:lines]
    (bad / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    proc = tool_runner.run_tool("convert_checkpoint", f"--input_dir={bad}",
                                f"--output_dir={tmp_path / 'out'}")
    _assert_clean_failure(proc, f"{lines:,} entries", "7,887 rows", "vocab.txt")
    assert not (tmp_path / "out").exists()
    proc = tool_runner.run_tool("finetune", "--flagfile=flags/finetune_bible_paraphrase.flags",
                 f"--init_checkpoint={bad}", f"--output_dir={tmp_path / 'ft'}",
                 "--max_train_examples=16", "--max_eval_examples=16", "--num_train_epochs=1",
                 "--max_seq_length=32")
    _assert_clean_failure(proc, f"{lines:,} entries", "7,887 rows")
    assert not (tmp_path / "ft" / "best").exists()


def test_a_truncated_safetensors_file_names_the_file_and_the_tensor(encoder_dir, tmp_path):
    bad = _copy(encoder_dir, tmp_path / "bad")
    weights = bad / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:682918])
    proc = tool_runner.run_tool("convert_checkpoint", f"--input_dir={bad}",
                                f"--output_dir={tmp_path / 'out'}")
    _assert_clean_failure(proc, str(weights), "truncated", "tensor")
    assert not (tmp_path / "out").exists()


def test_a_directory_that_is_no_checkpoint_is_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    proc = tool_runner.run_tool("export", f"--encoder_dir={tmp_path}",
                                f"--export_dir_base={tmp_path / 'out'}")
    _assert_clean_failure(proc, str(tmp_path), "not a BERT checkpoint directory")
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory, encoder_dir):
    from bert_keras.tasks import task_io
    directory = tmp_path_factory.mktemp("task") / "best"
    classifier = bk.BertClassifier(bk.BertEncoder.from_pretrained(str(encoder_dir)), num_classes=2)
    task_io.save_task(str(directory), classifier, bk.BertTokenizer(str(VOCAB)),
                      task="classification", seq_length=32, labels=["0", "1"])
    return directory


@pytest.mark.parametrize("broken, words", [
    ("model.keras", ["model.keras", "corrupt"]), ("task.json", ["task.json", "cut short"])])
def test_a_truncated_task_directory_names_the_file(task_dir, tmp_path, broken, words):
    bad = _copy(task_dir, tmp_path / "best")
    path = bad / broken
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    proc = tool_runner.run_tool("export", f"--task_dir={bad}",
                                f"--export_dir_base={tmp_path / 'out'}")
    _assert_clean_failure(proc, *words)
    assert not list((tmp_path / "out").glob("*/*"))
