"""The README's user-code example runs as written (from_pretrained on the real MiniLM
checkpoint -> fit on strings -> evaluate -> .keras -> export -> a served answer)."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def readme_example():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## In your own Keras code"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_the_readme_example_runs_and_learns(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # its saved_models/ and the .keras file land here
    code = readme_example().replace('"/tmp/topics.keras"', f'"{tmp_path}/topics.keras"')
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)  # the README's own code
    printed = capsys.readouterr().out
    # What the README's evaluate printed: {'accuracy': ..., 'loss': ...}
    accuracy = float(re.search(r"'accuracy': (?:np\.float\d+\()?([0-9.]+)", printed).group(1))
    assert accuracy >= 0.6, printed[-2000:]
    assert (tmp_path / "saved_models" / "topics" / "1" / "saved_model.pb").exists()
    assert "noun." in printed
