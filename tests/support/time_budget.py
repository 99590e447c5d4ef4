"""The suite's time budget, printed at the end of every run (a pytest plugin, loaded by the
root conftest.py): the test files by the test time they took, with their test counts, so a
slow addition shows in every CI log. It asserts nothing about time (machines differ 6x); the
slowest single tests come from pytest's own `--durations=10` in the README's command."""

import collections

SHOWN = 15  # files


def _file(nodeid):
    return nodeid.split("::", 1)[0]


def pytest_terminal_summary(terminalreporter):
    seconds, counts = collections.Counter(), collections.Counter()
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid = getattr(report, "nodeid", None)
            if not nodeid or not hasattr(report, "duration"):
                continue
            path = _file(nodeid)
            seconds[path] += report.duration  # setup, call and teardown each report
            if report.when == "call" or (report.when == "setup" and report.skipped):
                counts[path] += 1
    if not seconds:
        return
    total = sum(seconds.values())
    workers = terminalreporter.config.getoption("numprocesses", None) or 1
    terminalreporter.write_sep("=", f"time budget: {sum(counts.values())} tests, {total:.0f} s "
                                    f"of test time over {workers} worker(s), by file")
    for path, spent in seconds.most_common(SHOWN):
        terminalreporter.write_line(f"{spent:8.1f} s {counts[path]:5d} tests  {path}")
    rest = seconds.most_common()[SHOWN:]
    if rest:
        terminalreporter.write_line(f"{sum(s for _, s in rest):8.1f} s "
                                    f"{sum(counts[p] for p, _ in rest):5d} tests  "
                                    f"the other {len(rest)} files")
