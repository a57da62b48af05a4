"""Interactive piping: each line on a slow pipe is answered before the next one is written.

A real `tt translate` subprocess reads a real pipe. The test writes one line, then waits for its
answer before writing the next, and only closes stdin at the very end: if tt waited for more lines
(or for EOF) the read would block, and the generous deadline turns that hang into a failure.
No timing is asserted beyond that deadline.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time

import pytest

from core.decode import lines as reading
from core.decode.lines import chunks as _chunks
from tests.conftest import ROOT

DEADLINE_S = 120  # far above a tiny model's answer time, far below "waits for EOF" (forever)


def read_line(stream, deadline: float) -> bytes:
    """One line from a pipe, or fail at the deadline (a blocking readline would hang the test)."""
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        ready, _, _ = select.select([stream], [], [], max(left, 0))
        if not ready:
            pytest.fail(f"no answer within {DEADLINE_S} s: tt is waiting for more input; got {data!r}")
        chunk = os.read(stream.fileno(), 1)
        if not chunk:
            pytest.fail(f"tt closed stdout early; got {data!r}")
        data += chunk
    return data


@pytest.mark.slow  # a subprocess that imports torch and loads a model
@pytest.mark.parametrize("method", [["--greedy"], ["--beam", "2"]])
def test_each_line_is_answered_before_the_next_is_sent(tiny_model_dir, tiny_translation, method):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tt_cli.main", "translate", "--model", str(tiny_model_dir), *method],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + DEADLINE_S
        answers = []
        for line in ["Je suis étudiant.", "", "Il est médecin.", "Je suis étudiant."]:
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
            answers.append(read_line(proc.stdout, deadline).decode().rstrip("\n"))
        proc.stdin.close()
        assert proc.wait(timeout=DEADLINE_S) == 0, proc.stderr.read().decode()
        assert proc.stdout.read() == b""
    finally:
        proc.kill()
    assert answers[0] == answers[3] == tiny_translation("Je suis étudiant.", *method)
    assert answers[1] == ""
    assert answers[2] == tiny_translation("Il est médecin.", *method)


def test_a_file_or_fast_pipe_still_fills_whole_chunks(monkeypatch):
    # A generator (how stdin and files arrive) of 100 lines available at once: full chunks of 32.
    # The grace between lines is made long, so a reader thread descheduled on a loaded machine
    # cannot end a chunk early: what is checked is that available lines fill the chunk, not a clock.
    monkeypatch.setattr(reading, "LINE_GRACE_S", DEADLINE_S)
    assert [len(c) for c in _chunks((f"l{i}" for i in range(100)), 32)] == [32, 32, 32, 4]
    assert [len(c) for c in _chunks([f"l{i}" for i in range(5)], 2)] == [2, 2, 1]


def test_a_slow_source_gives_the_lines_already_there_without_waiting_for_the_rest(monkeypatch):
    release, handed_over = threading.Event(), threading.Event()

    def slow():
        yield from ["a", "b", "c"]  # available at once
        handed_over.set()  # the reader has queued a, b and c: it asks for "d" only after putting "c"
        release.wait(DEADLINE_S)  # then nothing until the consumer has had its first chunk
        yield "d"

    def read_ahead_then_wait(lines, limit):
        # The consumer starts once a, b and c are queued: however the two threads are scheduled, the
        # first chunk is the three lines there, and it ends on the missing "d", not on a timer.
        queued = read_ahead(lines, limit)
        assert handed_over.wait(DEADLINE_S)
        return queued

    read_ahead = reading._read_ahead
    monkeypatch.setattr(reading, "_read_ahead", read_ahead_then_wait)
    chunks = _chunks(slow(), 32)
    assert next(chunks) == ["a", "b", "c"]
    release.set()
    assert list(chunks) == [["d"]]


def test_a_reading_error_comes_after_the_lines_before_it():
    def broken():
        yield "a"
        raise ValueError("line 2 is bad")

    chunks = _chunks(broken(), 32)
    assert next(chunks) == ["a"]
    with pytest.raises(ValueError, match="line 2 is bad"):
        next(chunks)
