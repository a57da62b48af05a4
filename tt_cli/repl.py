"""`tt translate -I`: a prompt that translates each line as you press Enter.

Line editing and history come from Python's `readline` (GNU readline or libedit, in the standard
library: no new dependency). History persists in $XDG_STATE_HOME/tt/history, else
~/.local/state/tt/history. Lines that start with ':' are commands; `parse_command` and `Settings`
are plain functions and data, tested without a terminal.

Ctrl-C cancels the line being typed (or the translation running) and gives a fresh prompt;
Ctrl-D on an empty line, or :quit, leaves.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported for real only when the prompt starts: core.decode pulls in torch
    from core.decode.translate import TranslateOptions
    from core.text.pipeline import TextOptions

HISTORY_LENGTH = 1000
NO_TERMINAL = (
    "tt translate -I is interactive and needs a terminal; in a script pipe lines instead: "
    "cat fr.txt | tt translate > en.txt"
)

HELP = """\
Type a French sentence and press Enter. Commands:
  :beam N        beam search with beam N (default 4)
  :greedy        greedy search (fastest)
  :sample [T]    sample at temperature T (default 1.0)
  :json on|off   print the --json object instead of the plain translation
  :attention     cross-attention heatmap of the last sentence (of the last line)
  :inspect       open tt inspect on the last sentence (q returns here)
  :help          this list
  :quit          leave (Ctrl-D too); Ctrl-C cancels the current line"""

COMMANDS = ("beam", "greedy", "sample", "json", "attention", "inspect", "help", "quit")
ALIASES = {"q": "quit", "exit": "quit", "h": "help", "?": "help"}


class CommandError(ValueError):
    """A :command that cannot be run as typed; the message says how to type it."""


@dataclass(frozen=True)
class Command:
    name: str  # one of COMMANDS
    value: float | bool | None = None  # the beam size, the temperature, json on/off


def parse_command(line: str) -> Command | None:
    """The command on `line`, or None when the line is text to translate (it does not start with ':')."""
    text = line.strip()
    if not text.startswith(":"):
        return None
    parts = text[1:].split()
    name, args = (parts[0].lower(), parts[1:]) if parts else ("", [])
    name = ALIASES.get(name, name)
    if name not in COMMANDS:
        raise CommandError(f"unknown command :{name}; :help lists them")
    if name == "beam":
        if len(args) != 1 or not args[0].isdigit() or int(args[0]) < 1:
            raise CommandError(":beam takes a beam size, a whole number ≥ 1 (e.g. :beam 8)")
        return Command("beam", int(args[0]))
    if name == "sample":
        if len(args) > 1:
            raise CommandError(":sample takes one temperature (e.g. :sample 0.7)")
        try:
            temperature = float(args[0]) if args else 1.0
        except ValueError:
            raise CommandError(f":sample {args[0]}: the temperature must be a number (e.g. :sample 0.7)") from None
        if not temperature > 0 or temperature == float("inf"):
            raise CommandError(f":sample {args[0]}: the temperature must be positive and finite")
        return Command("sample", temperature)
    if name == "json":
        if len(args) != 1 or args[0].lower() not in ("on", "off"):
            raise CommandError(":json takes on or off")
        return Command("json", args[0].lower() == "on")
    if args:
        raise CommandError(f":{name} takes no argument")
    return Command(name)


@dataclass(frozen=True)
class Settings:
    """What the next line is translated with; commands return a changed copy."""

    options: TranslateOptions
    json: bool = False
    text: TextOptions | None = None  # splitting, protection, glossary (None: the defaults)

    def apply(self, command: Command) -> tuple[Settings, str]:
        """The settings after a decoding command, and the line that says what changed."""
        o = self.options
        if command.name == "beam":
            new = replace(o, beam=int(command.value), method="beam")
        elif command.name == "greedy":
            new = replace(o, method="greedy")
        elif command.name == "sample":
            new = replace(o, method="sample", temperature=float(command.value))
        elif command.name == "json":
            return replace(self, json=bool(command.value)), f"json {'on' if command.value else 'off'}"
        else:
            raise ValueError(f":{command.name} does not change the settings")
        return replace(self, options=new), describe(new)


def describe(options: TranslateOptions) -> str:
    if options.search == "sample":
        return f"sampling, temperature {options.temperature:g}"
    if options.search == "greedy":
        return "greedy search"
    return f"beam search, beam {options.beam}, α {options.alpha:g}"


def history_path() -> Path:
    """$XDG_STATE_HOME/tt/history, else ~/.local/state/tt/history (history is state, not cache)."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base).expanduser() / "tt" / "history"


# ------------------------------------------------------------------------------------ the loop


def say(message: str) -> None:
    """Status and errors go to stderr; stdout carries only translations."""
    print(message, file=sys.stderr, flush=True)


class Repl:
    def __init__(
        self, loaded, settings: Settings, history: Path, warm=None, load=None, prompt: str = "fr> ", load_exact=None
    ) -> None:
        """loaded: the model that translates the lines, in the command's precision (`tt translate`'s: int8 where the
        card chose it); warm: a running server (tt_cli.remote.Warm) that translates them instead, then `load` loads
        that model only if the server goes away. :attention and :inspect show exact numbers: the fp32 model,
        loaded by `load_exact` when first needed (it returns None, as does a Repl without it, where the translating
        model is fp32). prompt: the source language's code."""
        self.warm, self._load, self.prompt, self._load_exact, self._exact = warm, load, prompt, load_exact, None
        try:
            import readline  # importing it is what gives input() line editing
        except ImportError:  # a Python built without it (Windows): plain input, no history
            readline = None
            say("tt: warning: no readline module in this Python: no line editing or history")
        self.readline, self._loaded, self.settings, self.history = readline, loaded, settings, history
        self.last = None  # the last Translation: what :attention and :inspect show
        self.history_ok = readline is not None
        if readline is None:
            return
        readline.set_history_length(HISTORY_LENGTH)
        try:
            readline.read_history_file(history)
        except FileNotFoundError:
            pass
        except OSError as exc:
            say(f"tt: warning: {history}: cannot read the history ({exc.strerror}); starting without it")

    @property
    def translating(self):
        """The model that translates the lines here."""
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded

    @property
    def loaded(self):
        """The fp32 model :attention and :inspect read."""
        if self._exact is None:
            self._exact = (self._load_exact and self._load_exact()) or self.translating
        return self._exact

    def save_history(self) -> None:
        """Written after every line, so a killed session keeps what was typed; private (0600), as
        shells keep theirs: what people translate can be personal."""
        if not self.history_ok:
            return
        try:
            self.history.parent.mkdir(parents=True, exist_ok=True)
            self.readline.write_history_file(self.history)
            os.chmod(self.history, 0o600)
        except OSError as exc:
            self.history_ok = False  # say it once, not after every line
            say(f"tt: warning: {self.history}: cannot save the history ({exc.strerror})")

    def run(self) -> None:
        where = f"served by {self.warm.url}" if self.warm else self.translating.path
        say(f"tt {describe(self.settings.options)} · {where} · :help for commands, Ctrl-D to quit")
        while True:
            try:
                line = input(self.prompt)
            except EOFError:  # Ctrl-D
                print(file=sys.stderr)
                break
            except KeyboardInterrupt:  # Ctrl-C: drop the line, keep the session
                print(file=sys.stderr)
                continue
            if line.strip():
                self.save_history()
            try:
                if not self.handle(line):
                    break
            except KeyboardInterrupt:
                say("cancelled")

    def handle(self, line: str) -> bool:
        """Run one line; False when the session should end."""
        from core.errors import TTError

        try:
            command = parse_command(line)
        except CommandError as exc:
            say(f"tt: {exc}")
            return True
        try:
            if command is None:
                if line.strip():
                    self.translate(line)
            elif command.name == "quit":
                return False
            elif command.name == "help":
                say(HELP)
            elif command.name == "attention":
                self.attention()
            elif command.name == "inspect":
                self.inspect()
            else:
                self.settings, message = self.settings.apply(command)
                say(message)
        except TTError as exc:
            say(f"tt: error: {exc}")
        return True

    def translate(self, line: str) -> None:
        """The line through `tt translate`'s pipeline (core.api.translate_text_lines, or the server's):
        sentences, protected spans, case, glossary; :attention and :inspect then show its last sentence."""
        from tt_cli import remote_text
        from tt_cli.output import json_line

        s = self.settings
        r = remote_text.prompt_line(self, line) if self.warm is not None else None
        if r is None:
            from core.api import translate_text_lines

            r = next(translate_text_lines(self.translating, [line], s.options, s.text, coverage=s.json))
        self.last = r if r.to_dict()["sentences"] else None  # its last sentence traced when it is shown
        for w in r.warnings:
            say(f"tt: warning: {w}")
        print(json_line(r.to_dict()) if s.json else r.text, flush=True)

    def attention(self) -> None:
        if self.last is None:
            say("nothing translated yet: type a sentence first")
            return
        from rich.console import Console

        from core.decode.trace import trace_steps
        from tt_cli.output import show_attention

        t = self.last = self.local_last()
        if (
            t.steps is None and t.source_tokens
        ):  # traced on demand: a teacher-forced pass costs about one decoding step per piece
            eos = [self.loaded.cfg.eos_id] if t.eos_produced else []
            t.source_trace, t.steps = trace_steps(self.loaded, t.source_tokens, t.token_ids + eos, text=t.source)
        if not t.steps:
            say("the last translation is empty: no attention to show")
            return
        show_attention(Console(highlight=False), t, -1, None)

    def inspect(self) -> None:
        if self.last is None:
            say("nothing translated yet: type a sentence first")
            return
        from tt_cli.tui.app import make_app

        o = self.settings.options
        make_app(self.loaded, self.local_last().source, beam_size=o.beam, alpha=o.alpha).run()

    def local_last(self):
        """The Translation of the last line's last sentence, rebuilt with the model here from the line's
        record (the pipeline's here, or a server's)."""
        from core.decode.translate import Translation
        from tt_cli import remote_text

        if not isinstance(self.last, Translation):
            self.last = remote_text.last_sentence(self.last, self.loaded)
        return self.last


def interactive(
    model: Path | None,
    device: str,
    options,
    *,
    json_out: bool = False,
    threads: int = 0,
    other_input: bool = False,
    text=None,
    precision: str | None = None,
) -> None:
    """`tt translate -I`: check the terminal, load the model once, run the prompt. Lines are translated in
    `precision` (--precision), else the card's, as `tt translate` runs them; :attention and :inspect in fp32."""
    from tt_cli.errors import EXIT_USAGE, fail

    if other_input:
        raise fail("-I reads sentences from the prompt; drop the sentences, --input and --output", EXIT_USAGE)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise fail(NO_TERMINAL, EXIT_USAGE)

    from core.card import default_model_dir, fast_mode, model_languages
    from tt_cli.options import default_mode, load_model_for, load_model_in, set_threads
    from tt_cli.remote import connect_prompt

    @functools.cache
    def mode() -> str | None:  # the fast_model mode lines are translated in here (None: fp32); the card's needs torch
        return fast_mode(precision) if precision is not None else default_mode(model, device)

    def load():
        return load_model_in(model, device, mode())

    def load_exact():
        return None if mode() is None else load_model_for(model, device)

    set_threads(threads, few=True)  # one sentence at a time: one thread is fastest
    warm = connect_prompt(model, device, precision)  # a running `tt serve` of this model translates; else here
    loaded = None if warm is not None else load()
    prompt = f"{model_languages(model or default_model_dir())[0]}> "  # the language to type in
    settings = Settings(options.validate(), json_out, text)
    Repl(loaded, settings, history_path(), warm, load, prompt, load_exact).run()
