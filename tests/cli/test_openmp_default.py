"""tt's OpenMP wait: every command sets GOMP_SPINCOUNT before torch loads libgomp, unless the user chose."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = (
    "import sys, os; sys.argv = ['tt', '--help']; import tt_cli.{module}; import torch; "
    "print(os.environ.get('GOMP_SPINCOUNT'), 'torch' in sys.modules)"
)


def run_probe(module: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        env={**base, **env},
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.parametrize("module", ["launch", "main"])
def test_entry_points_set_the_spin_count_before_torch(module):
    from tt_cli import SPIN_COUNT

    assert run_probe(module) == f"{SPIN_COUNT} True"


@pytest.mark.parametrize(
    ("env", "want"),
    [({"GOMP_SPINCOUNT": "5"}, "5"), ({"OMP_WAIT_POLICY": "PASSIVE"}, "None"), ({"OMP_WAIT_POLICY": "ACTIVE"}, "None")],
)
def test_a_users_own_openmp_wait_is_left_alone(env, want):
    assert run_probe("launch", **env) == f"{want} True"


def test_torch_is_not_loaded_by_the_package_itself():
    # The setting only counts if nothing in tt_cli/__init__ loads torch (and with it libgomp) first.
    done = subprocess.run(
        [sys.executable, "-c", "import sys, tt_cli; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"
