"""The `tt` executable: the common forms of `tt translate` start without the Typer app; everything
else goes to it (tt_cli.main).

A one-sentence translation is mostly start-up. Typer and click take ~0.3 s to import on a busy
2-core machine — as much as a whole warm call may take — and Typer's option parsing imports
pydantic and builds every command of the app, which a cold `tt translate` pays before its model
loads. So the common forms (sentences or `-`, and the options in OPTIONS) are read here with the
standard library: with a `tt serve` of the model running, the lines go to it (the text pipeline, or
the model alone with --raw or --n-best) without Typer or torch;
else the `translate` command function is called directly (its own checks, errors and exit codes).
Anything else — another option, a mistake, --help — goes to the Typer app, which reads and reports
it. tests/cli/test_warm.py holds these names and defaults to the Typer command's.
"""

from __future__ import annotations

import sys

# Options read here: name → (field, type); flags have the type bool. Defaults: the Typer command's.
OPTIONS: dict[str, tuple[str, type]] = {
    "--json": ("json_out", bool),
    "--raw": ("raw", bool),
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
DEFAULTS = {
    "json_out": False,
    "raw": False,
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
    """The exit code of `tt translate ARGS`, run here; None: not a form read here, run the Typer app."""
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

    from core.decode.method import TranslateOptions
    from tt_cli import remote

    model = Path(values["model"]) if values["model"] is not None else None
    request = remote.Request(
        model,
        TranslateOptions(
            beam=values["beam"],
            alpha=values["alpha"],
            method="greedy" if values["greedy"] else "beam",
            n_best=values["n_best"],
            batch_size=values["batch_size"],
        ),
        json=values["json_out"],
        threads=values["threads"],
        few=not from_stdin and values["input_file"] is None,
    )
    from tt_cli.textrun import document_format

    args = None if from_stdin else sentences
    input_file = Path(values["input_file"]) if values["input_file"] is not None else None
    model_view = values["raw"] or values["n_best"] > 1  # the model alone on each line
    fmt = document_format(input_file, None)
    if model_view and fmt != "text":
        return None  # the full command's usage error
    warm = remote.connect(request) if input_file is None or input_file.is_file() else None
    if warm is not None and model_view:
        return _guarded(remote.run, warm, request, args, values["input_file"], values["output"])
    if warm is not None:  # the text pipeline, run by the server
        from tt_cli import remote_text, textrun

        text = {"split": True, "protect": True, "accents": True, "glossary": None}
        output = Path(values["output"]) if values["output"] is not None else None
        job = textrun.TextJob(input_file, args, output, fmt, text, values["json_out"], None, "strict")
        return _guarded(remote_text.run, warm, request, job)
    from tt_cli.commands.translate import translate

    paths = {
        name: Path(values[name]) if values[name] is not None else None for name in ("model", "input_file", "output")
    }
    # local=True: the server question is answered (no second warning about $TT_SERVER)
    return _guarded(translate, text=sentences or None, **{**values, **paths}, local=True)


def _guarded(function, *args, **kwargs) -> int:
    """The exit code of `function(...)` under the one error policy of every command (tt_cli.errors.guard)."""
    try:
        function(*args, **kwargs)
        return 0
    except BaseException as exc:  # noqa: BLE001 - guard decides, as it does for the Typer app
        failure = exc
    import typer  # only on this path: the error policy lives with the Typer commands

    from tt_cli.errors import guard

    def again() -> None:
        raise failure

    try:
        guard(again)()
    except typer.Exit as stop:
        return stop.exit_code
    return 0


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
