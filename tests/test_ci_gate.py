"""The CI gate in tests/conftest.py: under CI=true a skip or a missing data directory fails the run.

Each case runs a real pytest in a subprocess on a two-test file, with tests/conftest.py loaded as
a plugin, and reads its exit status and output.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SUITE = """
import pytest

def test_runs():
    assert True

@pytest.mark.data
def test_needs_data():
    assert True

def test_skips():
    pytest.skip("no GPU here")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False
"""


def run_pytest(tmp_path, ci: str | None, data: str, *select: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env.update(PYTHONPATH=str(ROOT), TT_SHARED_DATA=data)
    if ci is not None:
        env["CI"] = ci
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "tests.conftest",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
        "-W",
        "ignore::pytest.PytestUnknownMarkWarning",
        str(tmp_path / "test_suite.py"),
        *select,
    ]
    return subprocess.run(args, check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def data_dir(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    return str(d)


def test_outside_ci_skips_pass_and_show_their_reasons(tmp_path):
    missing = str(tmp_path / "no-data")
    result = run_pytest(tmp_path, None, missing)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no GPU here" in result.stdout and f"{missing} is absent" in result.stdout  # -rs: both reasons
    assert "1 passed, 2 skipped, 1 xfailed" in result.stdout


def test_in_ci_a_skip_fails_the_run_and_is_named(tmp_path, data_dir):
    result = run_pytest(tmp_path, "true", data_dir)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "SKIPPED (counted as a failure): test_suite.py::test_skips" in result.stdout
    assert "test_needs_data" not in result.stdout  # the data is there: it ran
    assert "2 passed, 1 skipped, 1 xfailed" in result.stdout  # pytest's own summary line is still printed


def test_in_ci_a_run_without_skips_passes(tmp_path, data_dir):
    # An xfail is not a skip: it ran and failed as expected.
    result = run_pytest(tmp_path, "true", data_dir, "-k", "not test_skips")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed, 1 deselected, 1 xfailed" in result.stdout


def test_in_ci_missing_data_is_an_error(tmp_path):
    missing = str(tmp_path / "no-data")
    result = run_pytest(tmp_path, "true", missing)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert f"CI=true but {missing} is absent; 1 test(s) need it" in result.stderr
