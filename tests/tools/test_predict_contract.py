"""tools/predict.py on a multiple-choice export: lines of K = 2 and 3 endings in one batch, the
same answers from text lines and JSON lines, a line with one ending refused. (That predict.py
answers an export of every task type of the registry as it is served is the task-type
contract's: tests/tasks/test_task_type_contract.py.)"""

import json

import numpy as np

import tool_runner  # tests/support: tools forked without their imports

CHOICE_LINES = ["She opened the door.\tShe left.\tIt rained.",
                "He went home.\tHe slept.\tHe ate.\tHe sang."]  # K = 2, then K = 3


def predict(export, lines, *args):
    proc = tool_runner.run_tool("predict", f"--model_dir={export}", *args,
                                input="".join(line + "\n" for line in lines))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_multiple_choice_lines_text_and_json_alike(task_type_export, tmp_path):
    export = task_type_export("multiple_choice")[3]
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
