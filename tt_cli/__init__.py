"""tt's command line and terminal UI: a thin shell that shows what `core` computes."""

import os
from collections.abc import Mapping

# How long torch's OpenMP threads (GNU libgomp, read when torch loads it) wait awake for the next parallel
# operation before they sleep: 3,000 spins rather than libgomp's 300,000. On an idle machine batched
# decoding runs as fast (beam and greedy, batches of 64); beside a process that keeps a core busy it runs
# 1.3–1.6× faster, since a thread no longer spins away the core its partner needs (bench/README.md,
# *Beside a busy process*). Every command imports this package before torch; a user's own
# GOMP_SPINCOUNT or OMP_WAIT_POLICY is left as it is.
SPIN_COUNT = "3000"


def with_openmp_default(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with tt's GOMP_SPINCOUNT, unless it already names an OpenMP wait (the user's choice stays)."""
    if "GOMP_SPINCOUNT" in env or "OMP_WAIT_POLICY" in env:
        return dict(env)
    return {**env, "GOMP_SPINCOUNT": SPIN_COUNT}


os.environ.update(with_openmp_default(os.environ))
