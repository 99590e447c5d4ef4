"""BENCHMARKS.md as benchmarks/run.py writes it: the goals (benchmarks/goals.json), the Results
table parser and the per-CPU-kind layout; and the repository's BENCHMARKS.md in that layout.
Pure Python on synthetic rows: nothing is measured, no TensorFlow."""

import copy
import doctest
import pathlib
import re

from benchmarks import file, goals, machine, report, runner, table

ROOT = pathlib.Path(__file__).resolve().parents[2]


def row(section, shape, system, value, metric="sequences/s", **extra):
    return dict(section=section, shape=shape, system=system, metric=metric, value=value, **extra)


def goal_of(found, start):
    """The one goal whose text starts with `start`."""
    matching = [goal for goal in found if goal.goal.startswith(start)]
    assert len(matching) == 1, (start, found)
    return matching[0]


def encoder_rows(ours, hf):
    shape = "bert_tiny 32x128"
    return [row("encoder", shape, system, value) for system, value in (
        ("bert_keras bf16", ours), ("bert_keras f32", 50.0), ("HF torch f32", 40.0),
        ("HF torch bf16 weights", hf), ("keras-hub bf16", 60.0))]


def test_encoder_goal_compares_each_family_at_its_best():
    found = goals.goals(encoder_rows(98.3, 90.6))
    goal = goal_of(found, "encoder inference bert_tiny 32x128")
    assert goal.status == "met"
    assert goal.measured.startswith(
        "1.08x (98.3 vs 90.6 seq/s: bert_keras bf16 vs HF torch bf16 weights")
    found = goals.goals(encoder_rows(80.0, 90.6))
    assert goal_of(found, "encoder inference").status == "missed"


def test_goals_without_rows_say_what_is_missing():
    rows = encoder_rows(98.3, 90.6)
    found = goals.goals([r for r in rows if not r["system"].startswith("HF")])
    assert goal_of(found, "encoder inference").status == "not measured (no HF row with a figure)"
    assert goal_of(found, "encoder on real sentences bert_tiny").status.startswith("not measured")
    assert (goal_of(found, "bert_base inference").status
            == "not measured (no bert_base encoder rows)")
    assert goal_of(found, "exported model latency bert_tiny f32").status.startswith("not measured")


def test_failed_rows_do_not_count():
    rows = encoder_rows(98.3, 90.6)
    rows.append(row("encoder", "bert_tiny 32x128", "bert_keras bf16 weights", None, error="OOM"))
    assert goal_of(goals.goals(rows), "encoder inference").status == "met"


def test_real_sentences_goal_takes_bucketed_bert_keras_rows_only():
    shape = "bert_tiny 512 sentences, mean 33 tokens, batch 32"
    rows = [row("encoder (real sentences)", shape, "bert_keras bf16 weights bucketed", 200.0),
            row("encoder (real sentences)", shape, "bert_keras bf16 weights pad-128", 300.0),
            row("encoder (real sentences)", shape, "HF torch bf16 autocast bucketed", 250.0)]
    goal = goal_of(goals.goals(rows), "encoder on real sentences")
    assert (goal.status, goal.measured[:5]) == ("missed", "0.80x")


def test_training_goals_vs_keras_hub_and_hf():
    shape, metric = "bert_tiny 32x128 classifier", "sequences/s (train step)"
    rows = [row("finetune", shape, system, value, metric) for system, value in (
        ("bert_keras bf16", 31.5), ("keras-hub default BertTextClassifier (f32)", 19.1),
        ("keras-hub BertTextClassifier bf16", 25.2))]
    vs_keras_hub = f"fine-tuning train step {shape}: best bert_keras ≥ 1.25x"
    vs_hf = f"fine-tuning train step {shape}: best bert_keras ≥ 1.00x"
    found = goals.goals(rows)
    goal = goal_of(found, vs_keras_hub)
    assert (goal.status, goal.measured[:5]) == ("met", "1.25x")  # vs the best keras-hub (bf16)
    assert goal_of(found, vs_hf).status == "not measured (no HF row with a figure)"
    rows.append(row("finetune", shape, "HF torch bf16 autocast train", 35.0, metric))
    goal = goal_of(goals.goals(rows), vs_hf)
    assert (goal.status, goal.measured[:5]) == ("missed", "0.90x")
    # No pretrain rows at all: a preset no run trains (--train_presets), no goal to miss.
    assert not [goal for goal in found if goal.goal.startswith("pretraining train step")]


def export_rows(ours_p50, hf_p50):
    shape = "bert_tiny batch 1 x 128 ids"
    return [row("export", shape, "bert_keras SavedModel bf16", ours_p50, "latency p50 ms"),
            row("export", shape, "bert_keras SavedModel f32", ours_p50 + 5, "latency p50 ms"),
            row("export", shape, "HF torch f32 eager", hf_p50, "latency p50 ms"),
            row("export", shape, "HF torch bf16 weights eager", 6.9, "latency p50 ms"),
            row("export", shape, "bert_keras SavedModel f32", 14.1, "latency p99 ms"),
            row("export", shape, "HF torch f32 eager", 18.7, "latency p99 ms"),
            row("export", "bert_tiny batch 1 raw sentence (in-graph tokenizer)",
                "bert_keras SavedModel bf16", 1.0, "latency p50 ms")]


def test_export_latency_goals_compare_each_dtype_with_its_own_kind():
    f32, bf16 = (f"exported model latency bert_tiny batch 1 x 128 ids {dtype}"
                 for dtype in ("f32", "bf16"))
    goal = goal_of(goals.goals(export_rows(10.7, 16.2)), f32)
    assert goal.status == "met"
    assert goal.measured == ("1.03x (p50 15.7 vs 16.2 ms; p99 14.1 vs 18.7 ms: "
                             "bert_keras SavedModel f32 vs HF torch f32 eager)")
    assert goal_of(goals.goals(export_rows(22.5, 16.2)), f32).status == "missed"
    goal = goal_of(goals.goals(export_rows(10.7, 16.2)), bf16)  # 10.7 vs PyTorch bf16's 6.9
    assert (goal.status, goal.measured[:5]) == ("missed", "0.64x")
    slow_p99 = [dict(r, value=30.0) if r["metric"] == "latency p99 ms" and r["system"].startswith(
        "bert_keras") else r for r in export_rows(10.7, 16.2)]
    assert goal_of(goals.goals(slow_p99), f32).status == "missed"  # p50 alone is not enough
    shape = "bert_tiny batch 1 x 128 ids"  # the fastest p50, but with a slow p99
    tuned = [row("export", shape, "bert_keras SavedModel f32 tuned", 12.0, "latency p50 ms"),
             row("export", shape, "bert_keras SavedModel f32 tuned", 25.0, "latency p99 ms")]
    goal = goal_of(goals.goals(export_rows(10.7, 16.2) + tuned), f32)  # the plain row meets both
    assert goal.status == "met" and goal.measured.endswith(
        "p99 14.1 vs 18.7 ms: bert_keras SavedModel f32 vs HF torch f32 eager)")
    goal = goal_of(goals.goals(slow_p99 + tuned), f32)  # neither does
    assert goal.status == "missed" and "bert_keras SavedModel f32 tuned vs" in goal.measured


def test_train_steps_against_their_share_of_the_peak():
    peak = row("peak", "2048x2048", "TF matmul 2048x2048 bfloat16", 1000.0, "GFLOP/s")
    metric = "sequences/s (train step)"
    rows = [peak,
            row("pretrain", "bert_base 32x128 MLM+NSP", "bert_keras bf16", 6.0, metric, mfu=0.79),
            row("pretrain", "bert_small 32x128 MLM+NSP", "bert_keras bf16", 20.0, metric, mfu=0.71)]
    found = goals.goals(rows)
    assert goal_of(found, "pretraining train step bert_base 32x128 MLM+NSP: best bert_keras "
                          "≥ 80%").status == "missed"
    assert goal_of(found, "pretraining train step bert_small 32x128 MLM+NSP: best bert_keras "
                          "≥ 70%").status == "met"


def test_base_peak_share_goal():
    peak = row("peak", "2048x2048", "TF matmul 2048x2048 bfloat16", 1000.0, "GFLOP/s")
    base = [row("encoder", "bert_base 32x128", "bert_keras bf16 weights", 36.6, mfu=0.85),
            row("encoder", "bert_base 32x128", "bert_keras f32", 14.5, mfu=0.95),
            row("encoder", "bert_base 32x128", "HF torch f32", 12.7, mfu=0.2)]
    goal = goal_of(goals.goals([peak] + base), "bert_base inference")
    assert (goal.status, goal.measured[:4]) == ("met", "85% ")  # the fastest row's, not the highest
    base[0]["mfu"] = 0.5
    assert goal_of(goals.goals([peak] + base), "bert_base inference").status == "missed"
    goal = goal_of(goals.goals(base), "bert_base inference")
    assert goal.status == "not measured (no matmul peak in this run)"


def test_the_peak_is_the_faster_matmul_without_xla():
    """On AVX2 float32 matmuls beat bfloat16 ones: % of peak is then against float32."""
    peaks = [row("peak", "2048x2048", f"TF matmul 2048x2048 {name}", value, "GFLOP/s")
             for name, value in (("float32", 156.4), ("bfloat16", 107.9),
                                 ("bfloat16 XLA", 170.0))]
    step = row("finetune", "bert_tiny 32x128 classifier", "bert_keras f32", 10.0,
               "sequences/s (train step)", flops=7.82e9)
    report.finish_rows(peaks + [step], "value")
    assert round(step["mfu"], 2) == 0.50  # 78.2 of 156.4 GFLOP/s
    (back,) = table.parse_results(table.render_results([step]).replace(
        "% peak", table.OLD_PEAK_HEADER))
    assert back["mfu"] == 0.5  # sections written before keep their column


def test_float32_goal_against_the_previous_run_of_the_kind():
    xla = row("encoder", "bert_tiny 32x128", "bert_keras f32 XLA", 40.0)
    now = encoder_rows(98.3, 90.6) + [xla] + export_rows(10.7, 16.2)  # latencies not compared
    assert (goal_of(goals.goals(now), "float32").status
            == "not measured (no earlier run of this kind)")
    before = [dict(r, value=r["value"] * 1.02) for r in now]  # 2% faster before: within 5%
    goal = goal_of(goals.goals(now, before), "float32")
    assert (goal.status, goal.measured[:11]) == ("met", "worst 0.98x")
    assert goal.measured.endswith("; 2 rows compared")
    before = [dict(r, value=50.0) if r["system"] == xla["system"] else r for r in before]
    goal = goal_of(goals.goals(now, before), "float32")
    assert goal.status == "missed"
    assert goal.measured.startswith("worst 0.80x (40.0 vs 50.0 seq/s: encoder bert_tiny 32x128 "
                                    "bert_keras f32 XLA)")
    other = [dict(r, shape="bert_other 32x128") for r in before]
    goal = goal_of(goals.goals(now, other), "float32")
    assert goal.status == "not measured (no bert_keras f32 row in both runs)"


def test_cpu_kind_from_flags():
    assert machine.cpu_kind({"avx2", "avx512_bf16", "amx_bf16"}) == "AMX"
    assert machine.cpu_kind({"avx2", "avx512_bf16"}) == "AVX512-BF16"
    assert machine.cpu_kind({"avx2", "avx512f", "avx512_vnni"}) == "AVX512"
    assert machine.cpu_kind({"avx2", "fma"}) == "AVX2"
    assert machine.cpu_kind(set()) == "other"


def test_an_avx2_cap_caps_every_library_and_is_said_in_the_section(monkeypatch):
    for name in machine.ISA_CAP_VARIABLES:  # recorded, so the test's end restores them
        monkeypatch.setenv(name, "")
    assert "capped" not in machine.machine_line("AVX2")
    machine.cap_isa("AVX2")
    assert {name: machine.os.environ[name] for name in machine.ISA_CAP_VARIABLES} == dict(
        ONEDNN_MAX_CPU_ISA="AVX2", MKL_ENABLE_INSTRUCTIONS="AVX2", ATEN_CPU_CAPABILITY="avx2",
        XLA_FLAGS="--xla_cpu_max_isa=AVX2")
    assert "CPU kind AVX2 (capped: ONEDNN_MAX_CPU_ISA=AVX2, " in machine.machine_line("AVX2")
    assert machine.cpu_kind() in ("AVX2", "other")  # whatever this CPU is beyond AVX2


def test_an_avx512_cap_hides_the_bfloat16_instructions_and_keeps_tensorflows_bfloat16(
        monkeypatch):
    for name in machine.ISA_CAP_VARIABLES:
        monkeypatch.setenv(name, "")
    machine.cap_isa("AVX512")
    assert machine.os.environ["ONEDNN_MAX_CPU_ISA"] == "AVX512_CORE"
    assert machine.cpu_kind() in ("AVX512", "AVX2", "other")  # never AVX512-BF16 or AMX
    # oneDNN emulates bfloat16 under this cap, as on a real AVX512 CPU; XLA ignores caps.
    assert not runner.capped_out("bert_keras bf16", "AVX512")
    assert runner.capped_out("bert_keras f32 XLA", "AVX512")
    assert runner.capped_out("bert_keras bf16", "AVX2")
    assert not runner.capped_out("HF torch bf16", "AVX2") and not runner.capped_out("x XLA", "")
    assert set(machine.CAP_LEAVES_OUT) == set(machine.ISA_CAPS)


def finished_rows():
    rows = [row("peak", "2048x2048", "TF matmul 2048x2048 bfloat16", 411.04, "GFLOP/s", cpu=203.05)]
    rows += [dict(r, flops=3.356e9, cpu=r["value"] / 2, mean=r["value"] * 0.9)
             for r in encoder_rows(98.278, 90.63)]
    rows.append(row("encoder", "bert_tiny 32x128", "keras-hub default (predict)", None,
                    error="worker died | exit 1\nTraceback"))
    return report.finish_rows(rows, "value")


def test_results_table_round_trips():
    rows = finished_rows()
    parsed = table.parse_results("text before\n\n" + table.render_results(rows)
                                 + "\n\ntext after\n")
    assert len(parsed) == len(rows)
    for original, back in zip(rows, parsed):
        for key in ("section", "shape", "system", "metric"):
            assert back[key] == original[key]
        for key, digits in (("value", 1), ("mean", 1), ("cpu", 1), ("tflops", 2), ("HF best", 2)):
            expected = original.get(key)
            assert back[key] == (None if expected is None else round(expected, digits)), key
        if original.get("mfu") is not None:
            assert back["mfu"] == round(original["mfu"] * 100) / 100
    assert parsed[1]["value"] == 98.3 and parsed[1]["mfu"] == 0.8
    assert parsed[-1]["value"] is None
    assert parsed[-1]["error"] == "worker died | exit 1 Traceback"
    assert table.parse_results("no table here\n") == []


NOTES = ("## Notes\n\nHand-written; mentions\n## CPU kind: AMX\nwithout being a section.\n\n"
         "### A subsection\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")


def section(kind, rows, previous=None, date="2026-11-23"):
    run = dict(kind=kind, command="python -m benchmarks.run --sections=encoder", rounds=1,
               basis="value", machine=f"a CPU, 2 CPU cores, CPU kind {kind}", date=date,
               versions="tensorflow 2.21.0")
    return report.render_section(rows, previous, run)


def test_a_run_replaces_only_its_own_kinds_section():
    amx = section("AMX", finished_rows(), date="2026-11-22")
    old_avx = section("AVX512-BF16", finished_rows())
    text = file.INTRO + amx + old_avx + NOTES
    intro, sections, notes = file.split(text)
    assert (intro, [kind for kind, _ in sections], notes) == (
        file.INTRO, ["AMX", "AVX512-BF16"], NOTES)

    previous = table.parse_results(file.section_of(text, "AVX512-BF16"))
    rows = [dict(r, value=r["value"] and r["value"] * 0.9) for r in finished_rows()]
    new_avx = section("AVX512-BF16", rows, previous, date="2026-11-24")
    new = file.replace_section(text, "AVX512-BF16", new_avx)

    assert new == file.INTRO + amx + new_avx + NOTES
    assert new.endswith(NOTES) and file.section_of(new, "AMX") == amx
    assert "Date: 2026-11-24" in new and "Date: 2026-11-23" not in new
    float32 = [line for line in new_avx.splitlines() if line.startswith("| float32 not slower")]
    assert float32 and float32[0].endswith("| missed |")  # 0.90x the section it replaced

    added = file.replace_section(new, "AVX2", section("AVX2", finished_rows()),
                                 order=machine.KIND_ORDER)
    assert [kind for kind, _ in file.split(added)[1]] == ["AMX", "AVX512-BF16", "AVX2"]
    assert added.startswith(file.INTRO + amx + new_avx) and added.endswith(NOTES)
    # A kind new to the file goes where KIND_ORDER puts it, not last.
    avx512 = section("AVX512", finished_rows())
    between = file.replace_section(added, "AVX512", avx512, order=machine.KIND_ORDER)
    assert [kind for kind, _ in file.split(between)[1]] == ["AMX", "AVX512-BF16", "AVX512", "AVX2"]
    assert between.startswith(file.INTRO + amx + new_avx + avx512)


def test_hand_written_sections_after_the_kinds_are_kept():
    span_qa = "## Span QA over windows\n\n| windows | p50 |\n|---|---|\n| 1 | 133.4 |\n\n"
    amx, avx2 = section("AMX", finished_rows()), section("AVX2", finished_rows())
    text = file.INTRO + amx + avx2 + span_qa + NOTES
    intro, sections, rest = file.split(text)
    assert [kind for kind, _ in sections] == ["AMX", "AVX2"] and rest == span_qa + NOTES
    new_avx2 = section("AVX2", finished_rows(), date="2026-11-29")
    assert file.replace_section(text, "AVX2", new_avx2) == (
        file.INTRO + amx + new_avx2 + span_qa + NOTES)
    avx512 = section("AVX512", finished_rows())
    added = file.replace_section(text, "AVX512", avx512, order=machine.KIND_ORDER)
    assert added == file.INTRO + amx + avx512 + avx2 + span_qa + NOTES


def test_results_name_each_section_and_shape_once():
    rows = finished_rows()
    lines = table.render_results(rows).splitlines()[2:]
    assert lines[0].startswith("| peak | 2048x2048 | TF matmul")
    assert lines[1].startswith("| encoder | bert_tiny 32x128 | bert_keras bf16 |")
    assert all(line.startswith("|  |  | ") for line in lines[2:])
    assert [(r["section"], r["shape"]) for r in table.parse_results("\n".join(
        table.render_results(rows).splitlines()))] == [(r["section"], r["shape"]) for r in rows]


def test_goals_come_from_the_goals_file():
    spec = goals.load()
    assert spec == goals.load(goals.GOALS_FILE) and "issue" not in goals.GOALS_FILE.read_text()
    rows = encoder_rows(98.3, 90.6)  # 1.08x the best HF row
    assert goal_of(goals.goals(rows, spec=spec), "encoder inference").status == "met"
    stricter = copy.deepcopy(spec)
    stricter["inference"][0]["least_ratio"] = 1.1
    goal = goal_of(goals.goals(rows, spec=stricter), "encoder inference")
    assert goal.goal.endswith("≥ 1.10x best HF") and goal.status == "missed"
    stricter["float32_not_slower"]["least_ratio"] = 0.99
    before = [dict(r, value=r["value"] * 1.02) for r in rows]
    assert goal_of(goals.goals(rows, before, spec=stricter), "float32").status == "missed"


def test_the_repository_benchmarks_file_is_in_the_layout_a_run_rewrites():
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    intro, sections, rest = file.split(text)
    kinds = [kind for kind, _ in sections]
    assert kinds == sorted(kinds, key=machine.KIND_ORDER.index) and "AVX2" in kinds
    for kind, body in sections:
        assert "### Goals\n" in body and "`python -m benchmarks.run " in body, kind
        page = (ROOT / file.page_path(kind)).read_text(encoding="utf-8")
        assert file.summary(kind, file.section_of(page, kind)) == body, kind
        rows = table.parse_results(file.section_of(page, kind))
        assert rows and all(row["section"] and row["shape"] for row in rows), kind
    assert "    python -m benchmarks.run --sections=" in intro
    assert rest.startswith("## Span QA over windows (served, batch 1)\n")
    assert len(text.encode()) < 40_000  # goals and links: every row is on the kinds' pages


def test_the_product_never_imports_the_benchmarks():
    importing = re.compile(r"^\s*(from|import)\s+(benchmarks|bert_keras_tools\.bench)\b", re.M)
    for directory in ("bert_keras", "tools"):
        for path in (ROOT / directory).rglob("*.py"):
            assert not importing.search(path.read_text(encoding="utf-8")), path
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert "bert_keras_tools.bench" not in setup and "bert-keras-benchmark" not in setup


def test_a_new_file_gets_the_intro_and_empty_notes():
    text = file.replace_section("", "AVX2", section("AVX2", finished_rows()))
    assert text.startswith(file.INTRO + "## CPU kind: AVX2\n")
    assert "### Goals\n" in text and "### Results\n" in text
    assert text.endswith("\n\n" + file.EMPTY_NOTES)
    replaced = file.replace_section(text, "AVX2", section("AVX2", []),
                                    notes="## Notes\n\nnew\n")
    assert replaced.endswith("\n\n## Notes\n\nnew\n")


def test_docstring_examples_of_the_report_modules():
    # benchmarks/ is outside pytest's --doctest-modules paths; these examples are pure Python.
    for module in (file, goals, machine, table):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_best_round_per_measurement():
    from benchmarks.runner import best_round

    rounds = [dict(p50_ms=14.0, seq_per_s=90.0), dict(error="timed out"),
              dict(p50_ms=12.0, seq_per_s=80.0)]
    assert best_round(rounds, "seq_per_s")["p50_ms"] == 14.0  # a rate: its highest round
    assert best_round(rounds, "p50_ms", lowest=True)["seq_per_s"] == 80.0  # latency: lowest
    assert best_round([dict(error="a"), dict(error="b")], "p50_ms") == dict(error="a")
