"""The CI gate, a pytest plugin: under CI=true every skip fails the run, and so does missing data.

tests/conftest.py takes these hooks in; tests/test_ci_gate.py loads this module alone (`-p tests.ci_gate`)
into small pytest subprocesses, which then start without torch. A skip counts whether it happens while
a test runs (pytest.skip, a skip marker) or while a module is collected (pytest.importorskip or
pytest.skip(allow_module_level=True) at module level, which take every test of the module with them).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data"))

# CI sets CI=true (GitHub Actions, GitLab and most others do; .ci/run does too). There a skip is a
# failure: a green run must mean every test ran, including the data-marked ones (the shipped
# model's quality figures among them). Without CI=true, tests that need the data skip, with the reason shown.
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}

if IN_CI:
    from hypothesis import settings

    # The same examples on every CI run, and no example database carried over from an earlier one,
    # so a CI failure reproduces with the same command.
    settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    settings.load_profile("ci")


def pytest_report_header(config):
    data = f"{SHARED_DATA} ({'present' if SHARED_DATA.is_dir() else 'absent: data-marked tests skip'})"
    ci = "CI=true: a skip fails the run; Hypothesis derandomized" if IN_CI else "not CI: skips are allowed"
    return [f"tt shared data: {data}", f"tt: {ci}"]


def pytest_collection_modifyitems(config, items):
    if SHARED_DATA.is_dir():
        return
    needs_data = [item for item in items if item.get_closest_marker("data")]  # a marker, not the tests/core/data folder
    if needs_data and IN_CI:
        raise pytest.UsageError(
            f"CI=true but {SHARED_DATA} is absent; {len(needs_data)} test(s) need it. "
            "Put the shared data beside the repository or point TT_SHARED_DATA at it."
        )
    skip = pytest.mark.skip(reason=f"{SHARED_DATA} is absent (set TT_SHARED_DATA)")
    for item in needs_data:
        item.add_marker(skip)


_skipped: list[str] = []


def pytest_runtest_logreport(report):
    # An expected failure (xfail) is reported as skipped too; it is not a skip.
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_collectreport(report):
    # A module skipped while it was collected: none of its tests ever reach pytest_runtest_logreport.
    if report.skipped:
        _skipped.append(f"{report.nodeid} (the whole module, skipped while collected)")


def pytest_sessionfinish(session, exitstatus):
    if IN_CI and _skipped and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if IN_CI and _skipped:
        terminalreporter.section("skips fail the run in CI", sep="=", red=True, bold=True)
        for nodeid in _skipped:
            terminalreporter.line(f"SKIPPED (counted as a failure): {nodeid}")
