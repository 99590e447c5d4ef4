"""Fixtures of the tokenizer tests."""

import pytest

from bert_keras.text import tokenizer_json


@pytest.fixture
def own_tokenizer_cache(tmp_path, monkeypatch):
    """Tokenizers converted from a tokenizer.json go to this test's own temp directory, not
    the machine's cache that other tests (and other runs) share."""
    monkeypatch.setattr(tokenizer_json.tempfile, "tempdir", str(tmp_path / "systemp"))
    (tmp_path / "systemp").mkdir()
