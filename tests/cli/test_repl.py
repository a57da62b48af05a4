"""`tt translate -I`: the command parser as a plain function, the loop through a real pseudo-terminal.

The pty tests run `python -m tt_cli.main translate -I` as a child whose controlling terminal is the
pty, so readline edits lines, Ctrl-C (byte 0x03) becomes SIGINT and Ctrl-D (0x04) ends input exactly
as at a keyboard. The timeouts only keep a broken build from hanging the suite; nothing is timed.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

import pytest
from typer.testing import CliRunner

from core.decode.translate import TranslateOptions
from tests.conftest import ROOT
from tt_cli.main import app
from tt_cli.repl import Command, CommandError, Settings, history_path, parse_command

WAIT = 120.0  # seconds before a missing prompt counts as a hang (a loaded 2-core machine is slow to import torch)
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-B]|\r")


# ------------------------------------------------------------------------------------ commands


@pytest.mark.parametrize(
    "line, command",
    [
        ("Je suis étudiant.", None),
        ("", None),
        (":beam 8", Command("beam", 8)),
        ("  :BEAM 2 ", Command("beam", 2)),
        (":greedy", Command("greedy")),
        (":sample", Command("sample", 1.0)),
        (":sample 0.7", Command("sample", 0.7)),
        (":json on", Command("json", True)),
        (":json OFF", Command("json", False)),
        (":attention", Command("attention")),
        (":inspect", Command("inspect")),
        (":help", Command("help")),
        (":?", Command("help")),
        (":quit", Command("quit")),
        (":q", Command("quit")),
    ],
)
def test_parse_command(line, command):
    assert parse_command(line) == command


@pytest.mark.parametrize(
    "line, message",
    [
        (":", "unknown command :"),
        (":bream 4", "unknown command :bream"),
        (":beam", ":beam takes a beam size"),
        (":beam 0", ":beam takes a beam size"),
        (":beam four", ":beam takes a beam size"),
        (":sample hot", "the temperature must be a number"),
        (":sample 0", "must be positive"),
        (":sample -1", "must be positive"),
        (":sample nan", "must be positive"),
        (":json maybe", ":json takes on or off"),
        (":greedy 3", ":greedy takes no argument"),
    ],
)
def test_parse_command_errors_say_how_to_type_it(line, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        parse_command(line)


def test_settings_follow_the_commands():
    s = Settings(TranslateOptions())
    s, msg = s.apply(Command("greedy"))
    assert s.options.method == "greedy" and msg == "greedy search"
    s, msg = s.apply(Command("sample", 0.5))
    assert s.options.method == "sample" and s.options.temperature == 0.5 and msg == "sampling, temperature 0.5"
    s, msg = s.apply(Command("beam", 6))
    assert (s.options.method, s.options.beam, msg) == ("beam", 6, "beam search, beam 6, α 0.6")
    s, msg = s.apply(Command("json", True))
    assert s.json and msg == "json on" and s.options.beam == 6


def test_history_lives_in_the_state_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert history_path() == tmp_path / "tt" / "history"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert history_path() == tmp_path / "home" / ".local" / "state" / "tt" / "history"


def test_without_a_terminal_it_points_to_the_pipe_form(tiny_model_dir):
    result = CliRunner().invoke(app, ["translate", "-I", "--model", str(tiny_model_dir)], input="Je suis étudiant.\n")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().startswith("tt: error: tt translate -I is interactive and needs a terminal")
    assert "cat fr.txt | tt translate" in result.stderr


# ------------------------------------------------------------------------------- through a pty


class Terminal:
    """A child process on a pseudo-terminal, read and written as a user at a keyboard would."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: the pty is its controlling terminal (stdin, stdout, stderr)
            os.chdir(ROOT)
            # A pytest started in the background (`&`) ignores SIGINT, and a child inherits that:
            # give it the default, as a terminal would, so Ctrl-C reaches it.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execvpe(sys.executable, [sys.executable, "-m", "tt_cli.main", *args], env)
        self.pid, self.fd, self.seen = pid, fd, b""
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # rows, cols (for the TUI)

    def read_until(self, pattern: str, wait: float = WAIT) -> str:
        """Everything printed until `pattern` (a regex) shows up, escape sequences removed."""
        deadline = time.monotonic() + wait
        start = len(self.seen)
        while True:
            text = ANSI.sub(b"", self.seen[start:]).decode("utf-8", "replace")
            if re.search(pattern, text):
                return text
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {pattern!r} after {wait:.0f} s; the terminal shows:\n{text}")
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"the program ended before {pattern!r}; it showed:\n{text}")
                self.seen += chunk

    def waiting_for_a_key(self) -> None:
        """Return once the child sleeps in readline's select() on the terminal (Linux: its wchan).

        CPython's readline checks for signals only when that select() is interrupted: a Ctrl-C that
        lands between echoing a key and re-entering select() waits for the next key. Waiting for
        the state, not for a clock, makes the Ctrl-C land where a person's always does."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{self.pid}/wchan", encoding="ascii") as f:
                    where = f.read()
            except OSError:  # no /proc (not Linux): nothing to read the state from
                return
            if "select" in where or "poll" in where:
                return
            select.select([], [], [], 0.005)  # yield the CPU to the child
        raise AssertionError(f"the child never came back to wait for a key (wchan {where!r})")

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def wait(self) -> int:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:  # drain the pty so the child never blocks writing its last lines
                if select.select([self.fd], [], [], 0.1)[0]:
                    self.seen += os.read(self.fd, 4096)
            except OSError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        self.kill()
        raise AssertionError("the program did not exit")

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


@pytest.fixture
def terminal(tiny_model_dir, tmp_path):
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "TERM": "xterm-256color",
        "PYTHONPATH": str(ROOT),
        "INPUTRC": "/dev/null",  # the user's ~/.inputrc must not change the keys
    }
    opened = []

    def start(*args: str) -> Terminal:
        t = Terminal(["translate", "-I", "--model", str(tiny_model_dir), *args], env)
        opened.append(t)
        return t

    yield start
    for t in opened:
        t.kill()


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_a_session_translates_runs_commands_cancels_and_quits(terminal, tmp_path, tiny_translation):
    tty = terminal("--greedy")
    tty.read_until("fr> ")
    tty.type("Je suis étudiant.\r")
    student = tiny_translation("Je suis étudiant.", "--greedy")
    assert student in tty.read_until(re.escape(student) + r"\n.*fr> ")

    tty.type(":json on\r")
    tty.read_until(r"json on\n.*fr> ")
    tty.type("Il est médecin.\r")
    shown = tty.read_until(r"\}\n.*fr> ")
    obj = json.loads(next(line for line in shown.splitlines() if line.startswith("{")))
    assert obj["translation"] == tiny_translation("Il est médecin.", "--greedy") and obj["source"] == "Il est médecin."
    [sentence] = obj["sentences"]  # the REPL writes tt translate's --json object
    assert sentence["tokens"] and len(sentence["token_logprobs"]) == len(sentence["tokens"]) + 1  # EOS's last
    assert 0 < obj["confidence"] <= 1 and 0 <= obj["coverage"] <= 1

    tty.type(":beam 0\r")
    assert ":beam takes a beam size" in tty.read_until("fr> ")
    tty.type(":json off\r")
    tty.read_until("fr> ")

    # Ctrl-C drops the half-typed line and gives a new prompt; the session goes on.
    tty.type("Le chien ma")
    tty.read_until("Le chien ma")
    tty.waiting_for_a_key()
    tty.type("\x03")
    tty.read_until("fr> ")
    tty.type("Le chat dort.\r")
    after = tty.read_until(re.escape(tiny_translation("Le chat dort.", "--greedy")) + r"\n.*fr> ")
    assert "dog" not in after  # the cancelled line was never translated

    tty.type("\x04")  # Ctrl-D on an empty line
    assert tty.wait() == 0
    path = tmp_path / "state" / "tt" / "history"
    assert path.stat().st_mode & 0o777 == 0o600  # private, as shells keep theirs
    history = path.read_text(encoding="utf-8").splitlines()
    assert history == ["Je suis étudiant.", ":json on", "Il est médecin.", ":beam 0", ":json off", "Le chat dort."]


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_history_persists_to_the_next_session(terminal, tmp_path, tiny_translation):
    cold = re.escape(tiny_translation("Il fait froid.", "--greedy")) + r"\n.*fr> "
    first = terminal("--greedy")
    first.read_until("fr> ")
    first.type("Il fait froid.\r")
    first.read_until(cold)
    first.type(":quit\r")
    assert first.wait() == 0

    second = terminal("--greedy")
    second.read_until("fr> ")
    second.type("\x1b[A")  # the up arrow walks back through the last session's lines: ":quit", then the sentence
    second.read_until(":quit")
    second.type("\x1b[A")
    second.read_until("Il fait froid.")
    second.type("\r")
    assert re.search(cold, second.read_until(cold))
    second.type("\x04")
    assert second.wait() == 0


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_attention_and_inspect_show_the_last_sentence(terminal, tiny_translation):
    cat = tiny_translation("Le chat dort.")  # beam 4, the session's default
    tty = terminal()
    tty.read_until("fr> ")
    tty.type(":attention\r")
    assert "nothing translated yet" in tty.read_until("fr> ")
    tty.type("Le chat dort.\r")
    tty.read_until(re.escape(cat) + r"\n.*fr> ")
    tty.type(":attention\r")
    heatmap = tty.read_until(r"cross-attention, layer 2 of 2, mean over heads(.|\n)*0 .* 1\n.*fr> ")
    rows = [line.split()[0] for line in heatmap.splitlines()[3:] if line.strip() and not line.startswith(("0 ", "fr>"))]
    assert "·do" in heatmap.splitlines()[2]  # source pieces across
    assert "".join(rows).replace("·", " ").strip() == cat + "</s>"  # output pieces down

    tty.type(":inspect\r")
    tty.read_until("tt inspect")  # the TUI's title bar
    tty.type("q")
    tty.read_until("fr> ")  # back at the prompt after the TUI
    tty.type(":help\r")
    assert ":sample [T]" in tty.read_until(r":quit.*\n.*fr> ")
    tty.type(":q\r")
    assert tty.wait() == 0


def test_the_prompt_runs_the_text_pipeline_with_the_commands_text_options(terminal):
    line = "Je suis étudiant. Il est médecin."
    for flags, n_sentences in (((), 2), (("--no-split",), 1)):
        tty = terminal("--greedy", "--json", *flags)
        tty.read_until("fr> ")
        tty.type(line + "\r")
        shown = tty.read_until(r"\}\n.*fr> ")
        obj = json.loads(next(text for text in shown.splitlines() if text.startswith("{")))
        assert len(obj["sentences"]) == n_sentences
        tty.type("\x04")
        assert tty.wait() == 0


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_the_prompt_takes_the_direction_and_shows_its_source_language(tmp_path):
    """`tt translate -I --from en`: the shipped en→fr model, an `en> ` prompt, French out."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONPATH": str(ROOT), "INPUTRC": "/dev/null"}
    env["TT_SERVER"] = ""  # translate here, not through a server a test beside this one started
    expected = CliRunner().invoke(app, ["translate", "--from", "en", "--greedy", "I am a student."]).stdout.strip()
    tty = Terminal(["translate", "-I", "--from", "en", "--greedy"], env)
    try:
        tty.read_until("en> ")
        tty.type("I am a student.\r")
        assert expected and expected in tty.read_until(re.escape(expected) + r"\n.*en> ")
        tty.type("\x04")
        assert tty.wait() == 0
    finally:
        tty.kill()
