"""tools/predict.py answers an export of every task type of the registry, on the input line
its task type declares (`Task.input_line`): a contract test over `registry.TASKS`, so a new
task type without a case here fails, and does not skip.

Exports: the session's (tiny_pairs_model, tagger_export, family_encoder_export) where there
is one, else conftest's task_type_export (which tests/serving/test_export_tasks.py serves).
"""

import json

import numpy as np
import pytest

from bert_keras.tasks.registry import TASKS

import tool_runner  # tests/support: tools forked without their imports

CHOICE_LINES = ["She opened the door.\tShe left.\tIt rained.",
                "He went home.\tHe slept.\tHe ate.\tHe sang."]  # K = 2, then K = 3
# Per task type: the input lines (predict.py's text form) and the outputs each line gets.
CASES = {
    "classification": (["He went home.\tHe left.", "\t"], {"labels", "label_ids"}),
    "multi_label": (["He went home.", ""], {"labels", "label_ids"}),
    "regression": (["He went home.", "In the beginning"], {"scores"}),
    "tagging": (["Mr. Bumble's letter went to Jerusalem.", ""], {"tags", "entities"}),
    "span_qa": (["Who wrote it?\tPaul wrote the letter.", "Where?\t"], {"answer", "score"}),
    "multiple_choice": (CHOICE_LINES, {"probabilities", "choice"}),
    "pretraining": (["The [MASK] went home.", "No mask."], {"top_k_tokens", "mask_positions"}),
    "encoder": (["He went home.", ""], {"pooled_output", "sequence_output"}),
    "embedding": (["He went home.", "In the beginning"], {"embeddings"}),
    "reranking": (["Who wept?\tJesus wept.", "Who wrote it?\tPaul wrote it.\tIt rained.\tAmen"],
                  {"scores", "order"}),
}


@pytest.fixture(scope="module")
def export_of(tiny_pairs_model, tagger_export, family_encoder_export, task_type_export):
    """`export_of(task name)` -> the version dir of an export of that task type."""
    shared = {"classification": lambda: tiny_pairs_model["export"],
              "tagging": lambda: tagger_export("bert_tagger")[1],
              "encoder": lambda: family_encoder_export("roberta")}
    return lambda name: shared.get(name, lambda: task_type_export(name)[3])()


def predict(export, lines, *args):
    proc = tool_runner.run_tool("predict", f"--model_dir={export}", *args,
                                input="".join(line + "\n" for line in lines))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("name", TASKS)
def test_predict_answers_an_export_of_every_task_type(name, export_of):
    if name not in CASES:
        pytest.fail(f"task type {name!r} has no case in CASES: predict.py must answer its "
                    "exports (its input line, an export of it)")
    lines, outputs = CASES[name]
    export = export_of(name)
    rows = predict(export, lines)
    assert [r["line"] for r in rows] == list(range(1, len(lines) + 1))
    for row in rows:
        assert outputs <= set(row["outputs"]), (name, sorted(row["outputs"]))
        assert list(row["outputs"]) == sorted(row["outputs"])


def test_multiple_choice_lines_text_and_json_alike(export_of, tmp_path):
    export = export_of("multiple_choice")
    rows = predict(export, CHOICE_LINES, "--batch_size=8")  # K = 2 and 3 in one batch
    endings = [line.split("\t")[1:] for line in CHOICE_LINES]
    for row, given in zip(rows, endings):
        assert row["inputs"]["choices"] == given
        probabilities = row["outputs"]["probabilities"]
        assert len(probabilities) == len(given) and np.isclose(sum(probabilities), 1.0)
        assert row["outputs"]["choice"] == int(np.argmax(probabilities))
    jsonl = tmp_path / "choices.jsonl"
    jsonl.write_text("".join(json.dumps({"text": line.split("\t")[0], "choices": given}) + "\n"
                             for line, given in zip(CHOICE_LINES, endings)))
    as_json = predict(export, [], f"--input={jsonl}")
    assert [r["inputs"] for r in as_json] == [r["inputs"] for r in rows]
    for got, want in zip(as_json, rows):
        np.testing.assert_allclose(got["outputs"]["probabilities"],
                                   want["outputs"]["probabilities"], atol=1e-6)
    # A line with one ending: one line naming it, no output.
    proc = tool_runner.run_tool("predict", f"--model_dir={export}",
                                input="She opened the door.\tShe left.\n")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "Line 1 has 1 choices; this model takes at least 2" in proc.stderr.splitlines()[-1]
