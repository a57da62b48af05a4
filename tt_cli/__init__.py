"""tt's command line and terminal UI: a thin shell that shows what `core` computes."""

import os

# How long torch's OpenMP threads (GNU libgomp, read when torch loads it) wait awake for the next parallel
# operation before they sleep: 3,000 spins rather than libgomp's 300,000. On an idle machine batched
# decoding runs as fast (beam and greedy, batches of 64); beside a process that keeps a core busy it runs
# 1.3–1.6× faster, since a thread no longer spins away the core its partner needs (bench/README.md,
# *Beside a busy process*). Every command imports this package before torch; a user's own
# GOMP_SPINCOUNT or OMP_WAIT_POLICY is left as it is.
SPIN_COUNT = "3000"
if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
