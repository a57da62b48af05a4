"""The real `tt inspect` command in a pseudo-terminal: it opens only on a terminal, so its options
are checked end to end here, through the screenshots that key s saves (tests read their text).

No fixed sleep: each step presses s until a screenshot shows what the step waits for (the model
loading and decoding take what they take), within a generous deadline.
"""

from __future__ import annotations

import fcntl
import html
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def svg_text(path: Path) -> str:
    """The text of a Textual screenshot, its spans joined in order (non-breaking spaces as spaces)."""
    spans = re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text(encoding="utf-8"))
    return html.unescape("".join(spans)).replace("\xa0", " ")


class Terminal:
    """`tt inspect ARGS` on a 120×40 pseudo-terminal; what it prints is drained (and kept for errors)."""

    def __init__(self, args: list[str], svg_dir: Path, cwd: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
        env.pop("TT_MODEL", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tt_cli.main", "inspect", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,  # the pty becomes its controlling terminal
        )
        os.close(slave)
        self.master, self.svg_dir, self.output = master, svg_dir, bytearray()
        self.seen: set[Path] = set()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the child closed the terminal
                return
            if not chunk:
                return
            self.output += chunk

    def press(self, keys: str) -> None:
        os.write(self.master, keys.encode("utf-8"))

    def screen_until(self, shows: Callable[[str], bool], what: str, deadline_s: float = 180) -> str:
        """Press s until a new screenshot in svg_dir `shows` what is awaited; its text."""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"tt inspect ended ({self.proc.returncode}): {self.tail()}"
            self.press("s")
            wait_until = time.monotonic() + 3  # then press again: the key may have come before the app
            while time.monotonic() < wait_until:
                for path in sorted(set(self.svg_dir.glob("*.svg")) - self.seen):
                    if path.stat().st_size == 0:
                        continue  # reserved, not written yet
                    self.seen.add(path)
                    text = svg_text(path)
                    if shows(text):
                        return text
                time.sleep(0.1)
        raise AssertionError(f"no screenshot showed {what} in {deadline_s} s; last output: {self.tail()}")

    def quit(self) -> int:
        self.press("q")
        try:
            return self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            os.close(self.master)

    def tail(self) -> str:
        return self.output[-2000:].decode("utf-8", "replace")
