"""What the docs hand a user to run: the tool commands of README.md and docs/tools.md write
where git ignores them, every script imports bert_keras before TensorFlow (so its CPU-kernel
default holds and its warning about the other order stays quiet), and docs/embedding_search.py
says how far its minutes of embedding and fine-tuning have got."""

import ast
import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IGNORED = ("runs/", "saved_models/", "/tmp/")  # each in .gitignore
OUTPUT_FLAG = re.compile(r"--(?:output|output_dir|output_file|model_dir|export_dir_base)="
                         r"([^\s`|\\]+)")
TENSORFLOW = {"keras", "tensorflow", "tensorflow_text", "tensorflow_datasets"}
BERT_KERAS = {"bert_keras", "bert_keras_tools"}


@pytest.mark.parametrize("doc", ["README.md", "docs/tools.md"])
def test_the_tool_commands_write_under_ignored_folders(doc):
    paths = OUTPUT_FLAG.findall((ROOT / doc).read_text(encoding="utf-8"))
    assert paths
    assert [path for path in paths if not path.startswith(IGNORED)] == []
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert {"runs/", "saved_models/*", "/tmp/"} <= set(ignored)


def module_imports(path):
    """The top-level package of each module-level import of `path`, in order."""
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module.split(".")[0])
    return names


def test_scripts_import_bert_keras_before_tensorflow():
    late = []
    for folder in ("docs", "tools", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            names = module_imports(path)
            ours = [i for i, name in enumerate(names) if name in BERT_KERAS]
            theirs = [i for i, name in enumerate(names) if name in TENSORFLOW]
            if ours and theirs and theirs[0] < ours[0]:
                late.append(str(path.relative_to(ROOT)))
    assert late == []


def test_embedding_search_reports_its_progress_on_stderr(tiny_encoder_dir, capsys):
    import bert_keras as bk

    spec = importlib.util.spec_from_file_location("embedding_search",
                                                  ROOT / "docs" / "embedding_search.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    embedder = bk.BertEmbedder.from_pretrained(str(tiny_encoder_dir), seq_length=16)
    vectors = script.embed(embedder, [f"text {i}" for i in range(20)], "texts", batch_size=2)
    assert vectors.shape[0] == 20
    out, err = capsys.readouterr()
    assert out == ""  # stdout holds only the figures
    assert err.splitlines()[0].startswith("  embedding 20 texts: batch 10/10, ")
