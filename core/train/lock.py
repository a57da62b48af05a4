"""One run directory, one writer: a lock a training run holds for its whole life.

Two `tt train --out runs/x` started together would both pass the "already holds a run" check and
then interleave metrics.jsonl and overwrite each other's checkpoints. The first to take the lock
trains; the second stops at once with an error that names the holder.

The lock is `flock` on `run_dir/train.lock`: the kernel drops it when the holding process exits,
however it exits (a crash, SIGKILL), so a dead run never leaves a stale lock that blocks
`--resume`. The file itself stays; only a held lock means anything, and its text (pid and host of
the holder) is written by each new holder.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import IO

import torch

from core.errors import ConfigError, OutputError
from core.files import make_dir

try:
    import fcntl
except ImportError:  # Windows: no flock; runs there go unguarded
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = "train.lock"


class RunLock:
    """The lock on one run directory, held from `acquire()` until `release()` or process exit."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self.file: IO[str] | None = None

    def acquire(self) -> RunLock:
        """Take the lock, or raise ConfigError naming the process that holds it."""
        if fcntl is None or self.file is not None:
            return self
        # "a": creates the file if needed and never truncates the holder's text before we own it.
        file = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held open for the run's life
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().strip() or "a process that is starting"
            file.close()
            raise ConfigError(
                f"{self.path.parent} is in use by another training run ({holder}); "
                "wait for it to end, or choose another --out"
            ) from None
        file.seek(0)
        file.truncate()
        file.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        file.flush()
        self.file = file
        return self

    def release(self) -> None:
        if self.file is not None:
            self.file.close()  # closing the last descriptor drops the flock
            self.file = None


def lock_run_dir(
    run_dir: str | Path, *, is_main: bool = True, world: int = 1, device: torch.device | None = None
) -> RunLock:
    """Rank 0 (the one writer) creates `run_dir` and locks it; the other ranks hold nothing.

    Under DDP every rank learns whether rank 0 got the lock, so a refused job stops on all ranks
    instead of leaving the others waiting at a barrier.
    """
    lock, refused = RunLock(run_dir), None
    if is_main:
        try:
            make_dir(lock.path.parent)
            lock.acquire()
        except (ConfigError, OutputError) as exc:
            refused = exc
    if world > 1:
        flag = torch.tensor([refused is not None], dtype=torch.int32, device=device)
        torch.distributed.all_reduce(flag)  # also a barrier: the directory exists after it
        if int(flag) and refused is None:
            refused = ConfigError(f"{run_dir} is in use by another training run (see rank 0's error)")
    if refused is not None:
        raise refused
    return lock
