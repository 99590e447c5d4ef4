"""For every test (tests/ and the docstring examples of bert_keras/): temporary files in pytest's
own temporary directories, never loose in /tmp.

tensorflow_datasets (4.9) makes an empty `tempfile.mkdtemp("tfds")` directory each time it
builds a DatasetBuilder for a dataset that is not prepared locally
(`DatasetInfo.initialize_from_bucket`, which only GCS would fill) and never removes it: the
mocked TFDS tests left about 30 `/tmp/tmp*tfds` directories per run. Each test gets its own
`tempfile.gettempdir()` (and TMPDIR, for the tools it runs as subprocesses) inside pytest's
base temporary directory, which pytest prunes (it keeps the last 3 runs).
"""

import tempfile

import pytest

# Prints the test time by file at the end of each run (tests/support/time_budget.py).
pytest_plugins = ["tests.support.time_budget"]


@pytest.fixture(autouse=True)
def _temporary_files_in_pytest_tmp(tmp_path_factory, monkeypatch):
    directory = str(tmp_path_factory.mktemp("tempfile"))  # the base dir is made before the patch
    monkeypatch.setattr(tempfile, "tempdir", directory)
    monkeypatch.setenv("TMPDIR", directory)
