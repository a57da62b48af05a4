"""The decoding method a caller's flags ask for, in one place for the command line, the REPL and the server.
Light: no torch, so `tt --help` and the server's request parsing stay cheap."""

from __future__ import annotations

from core.errors import ConfigError


def method_of(greedy: bool, sample: bool = False) -> str:
    """The decoding method --greedy and --sample (or a request's greedy/sample fields) ask for: beam search
    when neither."""
    if greedy and sample:
        raise ConfigError("--greedy and --sample exclude each other")
    return "sample" if sample else "greedy" if greedy else "beam"
