"""The CI gate in tests/conftest.py: under CI=true a skip or a missing data directory fails the run.

Each case runs a real pytest in a subprocess on a small test file, with the gate (tests/ci_gate.py,
whose hooks tests/conftest.py takes in) loaded as a plugin, and reads its exit status and output.
The subprocesses never import torch: the gate does not need it, and each run starts in a second.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# Three ways to skip a whole module. The first two act while the module is collected: none of its
# tests then runs, so the skip is reported for the module alone.
MODULE_SKIPS = {
    "importorskip": 'pytest.importorskip("tt_no_such_module")',
    "allow_module_level": 'pytest.skip("no GPU here", allow_module_level=True)',
    "pytestmark": "pytestmark = pytest.mark.skip(reason='no GPU here')",
}

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


def run_pytest(
    tmp_path, ci: str | None, data: str, *select: str, files: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    files = files or {"test_suite.py": SUITE}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    # Fails the subprocess (exit 3, "INTERNALERROR") if anything imported torch: the gate must stay cheap.
    (tmp_path / "no_torch.py").write_text(
        "import sys\n\ndef pytest_unconfigure(config):\n    assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    # No plugin autoload: the installed ones (textual's snapshots among them) cost seconds and play no part.
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]), TT_SHARED_DATA=data)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if ci is not None:
        env["CI"] = ci
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "tests.ci_gate",
        "-p",
        "no_torch",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
        "-W",
        "ignore::pytest.PytestUnknownMarkWarning",
        *(str(tmp_path / name) for name in files),
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


@pytest.mark.parametrize("how", sorted(MODULE_SKIPS))
def test_in_ci_a_module_skipped_while_collected_fails_the_run(tmp_path, data_dir, how):
    skipped = f"import pytest\n\n{MODULE_SKIPS[how]}\n\n\ndef test_never_runs():\n    assert True\n"
    files = {"test_ok.py": "def test_runs():\n    assert True\n", "test_skipped_module.py": skipped}
    result = run_pytest(tmp_path, "true", data_dir, files=files)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "SKIPPED (counted as a failure): test_skipped_module.py" in result.stdout
    assert "1 passed, 1 skipped" in result.stdout
    # Outside CI the same run passes, the reason shown.
    result = run_pytest(tmp_path, None, data_dir, files=files)
    assert result.returncode == 0 and "1 passed, 1 skipped" in result.stdout, result.stdout + result.stderr


def test_the_suite_takes_in_every_hook_of_the_gate():
    import tests.ci_gate as gate
    import tests.conftest as conftest

    hooks = [name for name in vars(gate) if name.startswith("pytest_")]
    assert len(hooks) == 6 and all(getattr(conftest, name, None) is getattr(gate, name) for name in hooks)
