"""The `tt` executable: a warm `tt translate` goes straight to a running server; everything else
goes to the Typer app (tt_cli.main).

With a `tt serve` running, a one-sentence translation is a few milliseconds of work; what a user
waits for is start-up. Typer and click alone take ~0.3 s to import on a busy 2-core machine, as much
as the whole warm call may take, so the common forms of `tt translate` are read here with the
standard library: sentences or `-`, and the options below. Anything else — another option, a
mistake, --help, no server for this model — goes to the full command, which checks it, reports it
and finds the server just the same. tests/cli/test_warm.py holds these names and defaults to the
Typer command's.
"""

from __future__ import annotations

import sys

# Options read here: name → (field, type); flags have the type bool. Defaults: the Typer command's.
OPTIONS: dict[str, tuple[str, type]] = {
    "--json": ("json_out", bool),
    "--greedy": ("greedy", bool),
    "--beam": ("beam", int),
    "--alpha": ("alpha", float),
    "--n-best": ("n_best", int),
    "--batch-size": ("batch_size", int),
    "--threads": ("threads", int),
    "--model": ("model", str),
    "-m": ("model", str),
    "--input": ("input_file", str),
    "-i": ("input_file", str),
    "--output": ("output", str),
    "-o": ("output", str),
}
SAMPLING = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": None}  # not read here: the defaults
DEFAULTS = {
    "json_out": False,
    "greedy": False,
    "beam": 4,
    "alpha": 0.6,
    "n_best": 1,
    "batch_size": 32,
    "threads": 0,
    "model": None,
    "input_file": None,
    "output": None,
}


def parse(args: list[str]) -> tuple[dict, list[str]] | None:
    """The options and sentences of `tt translate ARGS`, or None when they are not for this fast path."""
    values, sentences = dict(DEFAULTS), []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            sentences.append(arg)
            continue
        name, eq, given = arg.partition("=")
        if name not in OPTIONS:
            return None
        field, kind = OPTIONS[name]
        if kind is bool:
            if eq:
                return None
            values[field] = True
            continue
        if not eq:
            if i == len(args):
                return None
            given = args[i]
            i += 1
        try:
            values[field] = kind(given)
        except ValueError:
            return None
    return values, sentences


def fast_translate(args: list[str]) -> int | None:
    """The exit code of `tt translate ARGS` done by a running server; None: not done, run the full command."""
    parsed = parse(args)
    if parsed is None:
        return None
    values, sentences = parsed
    from_stdin = not sentences or sentences == ["-"]
    if (values["input_file"] is not None and not from_stdin) or (
        values["input_file"] is None and from_stdin and sys.stdin.isatty()
    ):
        return None  # the full command's usage errors
    from pathlib import Path

    from tt_cli import remote

    model = Path(values["model"]) if values["model"] is not None else None
    request = remote.Request(
        model,
        {
            "beam": values["beam"],
            "alpha": values["alpha"],
            "method": "greedy" if values["greedy"] else "beam",
            **SAMPLING,
        },
        values["n_best"],
        values["batch_size"],
        json=values["json_out"],
        threads=values["threads"],
        few=not from_stdin and values["input_file"] is None,
    )
    warm = remote.connect(request)
    if warm is None:
        return None
    try:
        remote.run(warm, request, None if from_stdin else sentences, values["input_file"], values["output"])
    except BaseException as exc:  # noqa: BLE001 - the one error policy, tt_cli.errors.guard, decides
        return _exit_code(exc)
    return 0


def _exit_code(exc: BaseException) -> int:
    """What `tt` exits with after `exc`, the message printed as every command prints it."""
    import typer  # only on this path: the error policy lives with the Typer commands

    from tt_cli.errors import guard

    def again() -> None:
        raise exc

    try:
        guard(again)()
    except typer.Exit as stop:
        return stop.exit_code
    return 1


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["translate"]:
        code = fast_translate(args[1:])
        if code is not None:
            sys.exit(code)
    from tt_cli.main import main as full

    full()


if __name__ == "__main__":
    main()
