"""The sections that set a family's encoder against transformers' PyTorch model
(benchmarks/versus_torch.py: modernbert, deberta), run end to end at a tiny shape: the
bert_keras bf16 systems only (this environment has no PyTorch), each in this process
instead of a subprocess, through the section's rows and the goals computed from them. The
figures are not checked, only that every measurement gives one."""

import pytest
from absl import flags

from benchmarks import deberta, export, goals, modernbert, run, runner, sections  # noqa: F401

FLAGS = flags.FLAGS


def set_flag(monkeypatch, name, value):
    # The flag's value property: setattr on FLAGS itself would delete the flag on undo.
    monkeypatch.setattr(FLAGS[name], "value", value)


def tiny_modernbert(monkeypatch):
    config = modernbert.config_dict

    def tiny(layers):
        return dict(config(layers), hidden_size=32, intermediate_size=48, num_attention_heads=2,
                    local_attention=8)

    monkeypatch.setattr(modernbert, "config_dict", tiny)
    monkeypatch.setattr(modernbert, "FIXED", (2, 16))
    for name, value in (("modernbert_layers", 2), ("modernbert_long_length", 40),
                        ("modernbert_shapes", ["fixed", "long", "train"])):
        set_flag(monkeypatch, name, value)
    return {("modernbert", "modernbert_base_L-2 2x16"),
            ("modernbert (long document latency)", "modernbert_base_L-2 1x40"),
            ("modernbert (train step)", "modernbert_base_L-2 2x16 classifier")}


def tiny_deberta(monkeypatch):
    monkeypatch.setattr(deberta, "BASE", dict(deberta.BASE, hidden_size=32, intermediate_size=48,
                                              num_attention_heads=2, position_buckets=8))
    monkeypatch.setattr(deberta, "TRAIN", (2, 16))
    monkeypatch.setattr(deberta, "LATENCY_LENGTH", 16)
    monkeypatch.setattr(export, "LATENCY_CALLS", 3)
    set_flag(monkeypatch, "deberta_layers", 1)
    set_flag(monkeypatch, "deberta_shapes", ["2x16", "export", "train"])
    return {("deberta", "deberta_v3_base_L-1 2x16"),
            ("deberta (export latency)", "deberta_v3_base_L-1 batch 1 x 16 ids"),
            ("deberta (train step)", "deberta_v3_base_L-1 2x16 classifier")}


@pytest.mark.parametrize("section,tiny", [("modernbert", tiny_modernbert),
                                          ("deberta", tiny_deberta)])
def test_the_section_at_a_tiny_shape(section, tiny, monkeypatch, tmp_path):
    if not FLAGS.is_parsed():
        FLAGS(["test"])
    shapes = tiny(monkeypatch)
    set_flag(monkeypatch, "systems", ["bert_keras bf16", "bert_keras SavedModel bf16"])
    set_flag(monkeypatch, "rounds", 1)
    in_process = lambda spec, timeout: sections.WORKERS[spec["worker"]](spec)  # noqa: E731
    monkeypatch.setattr(runner, "run_worker_subprocess", in_process)

    rows = runner.SECTION_HOOKS[section](["unused"], 0.01, str(tmp_path))

    assert {(row["section"], row["shape"]) for row in rows} == shapes
    assert [row for row in rows if not row["value"] or row["error"]] == []
    assert all(row["system"].startswith("bert_keras") and "bf16" in row["system"]
               for row in rows)
    if section == "deberta":  # its goals: one per measurement, PyTorch's figures missing
        found = [goal for goal in goals.goals(rows) if goal.goal.startswith("DeBERTa-v3")
                 or goal.goal.startswith("exported model latency deberta_v3_base_L-1 batch 1")]
        assert [goal.status.split(" (")[0] for goal in found] == ["not measured"] * 4
        assert all("no HF" in goal.status or "HF for" in goal.status for goal in found)
