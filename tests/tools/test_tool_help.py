"""--help of the tools: exit status 0 (absl's is 1, a failure to scripts and CI), the tool's
docstring, and the task types of the registry where the help names them."""

import pytest

from bert_keras.tasks.registry import FINETUNING_TASKS, TASKS, get_task

import tool_runner  # tests/support: tools forked without their imports


@pytest.mark.parametrize("tool", ["finetune", "predict", "quickstart"])  # quickstart: no startup
def test_help_exits_0_with_the_tools_docstring(tool):
    proc = tool_runner.run_tool(tool, "--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "flags:" in proc.stdout
    if tool == "finetune":  # its first line: every task type it fine-tunes
        first = proc.stdout.strip().splitlines()[0]
        assert first.startswith("Fine-tunes a BERT checkpoint"), first
        assert all(name in first for name in FINETUNING_TASKS), first
    if tool == "predict":  # the input line of every task type
        for name in TASKS:
            assert f"  {name}: {get_task(name).input_line_help}" in proc.stdout, name
