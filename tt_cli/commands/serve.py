"""`tt serve`: the options, checked before anything heavy is loaded; then the model, the socket, the server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from core.decode.method import method_of
from tt_cli.errors import EXIT_USAGE, fail
from tt_cli.options import (
    AlphaOpt,
    BeamOpt,
    DeviceOpt,
    GreedyOpt,
    ModelOpt,
    QuantizeOpt,
    RerankOpt,
    SourceOpt,
    TargetOpt,
    model_of_direction,
    set_threads,
)


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0: every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free one; the log's 'listening' line names it).")] = 5000,
    model: ModelOpt = None,
    source: SourceOpt = None,
    target: TargetOpt = None,
    device: DeviceOpt = "auto",
    threads: Annotated[int, typer.Option(help="CPU threads for torch (0 = torch's default).")] = 0,
    beam: BeamOpt = 4,
    alpha: AlphaOpt = 0.6,
    greedy: GreedyOpt = False,
    rerank: RerankOpt = False,
    quantize: QuantizeOpt = None,
    batch_size: Annotated[
        int, typer.Option(help="Most sentences decoded together (1 = each request decoded on its own).")
    ] = 32,
    batch_wait: Annotated[
        float, typer.Option(help="Milliseconds the first request of a batch waits for others to join it.")
    ] = 5.0,
    queue_size: Annotated[
        int, typer.Option(help="Most sentences waiting or in decoding; a request beyond it gets 503 with Retry-After.")
    ] = 512,
    max_chars: Annotated[int, typer.Option(help="Most characters in one request (413 beyond).")] = 5000,
    max_sentences: Annotated[
        int, typer.Option(help="Most sentences (lines, or HTML text runs) in one request (413 beyond).")
    ] = 128,
    timeout: Annotated[float, typer.Option(help="Seconds a request may wait for its translation (504 beyond).")] = 60.0,
    read_timeout: Annotated[
        float,
        typer.Option(help="Seconds a request's head, then its body, may take to arrive (408 and closed beyond)."),
    ] = 30.0,
    api_keys: Annotated[
        Optional[Path],
        typer.Option(
            help="Require a key from FILE (one per line, # comments) on the translate endpoints: "
            "Authorization: Bearer KEY, X-API-Key: KEY, or api_key in the body."
        ),
    ] = None,
    cors: Annotated[
        Optional[list[str]],
        typer.Option(
            help="Origins whose browser pages may call the server (repeatable). Default '*': any page, as "
            "LibreTranslate allows; 'none': no CORS headers at all."
        ),
    ] = None,
) -> None:
    """Serve translations over HTTP, every shipped direction (fr→en, en→fr) unless --model or --from/--to names one: LibreTranslate's API (POST /translate, /detect, /translate_file; GET /languages, /frontend/settings) and tt's own (POST /v1/translate: the --json record; GET /v1/model), with GET /health. Concurrent requests are decoded together in batches. Needs the serve extra: pip install -e ".\\[serve]".

    The log (one JSON object per line: each request, server events) goes to stderr. Ctrl-C or SIGTERM stops accepting, answers what is in flight, then exits.

    While it runs, `tt translate` and `tt translate -I` of the same user and model send their sentences here instead of loading the model (the server announces itself in $XDG_RUNTIME_DIR/tt); they keep their output and exit codes. tt translate --local (or TT_SERVER= in the environment) translates in the process.
    """
    from tt_cli.serve.settings import ServeSettings

    settings = ServeSettings(
        batch_size=batch_size,
        batch_wait_s=batch_wait / 1000,
        queue_size=queue_size,
        max_chars=max_chars,
        max_sentences=max_sentences,
        timeout_s=timeout,
        read_timeout_s=read_timeout,
        cors_origins=cors_origins(cors),
        announce=True,
    )
    problems = settings.problems() + ([f"--port must be 0..65535, got {port}"] if not 0 <= port <= 65535 else [])
    if problems:
        raise fail("; ".join(problems), EXIT_USAGE)
    models = served_models(model_of_direction(model, source, target))  # a direction nobody shipped: one line
    try:
        from tt_cli.serve.server import listen, run
    except ImportError as exc:
        raise fail(f'tt serve needs the serve extra ({exc.name} is missing): pip install -e ".[serve]"') from None
    from dataclasses import replace

    from core.api import Translator
    from core.card import fast_mode
    from core.decode.method import CHANNEL_WEIGHT
    from tt_cli.options import default_mode
    from tt_cli.serve.keys import read_keys

    if api_keys is not None:
        settings = replace(settings, api_keys=read_keys(api_keys))
    with listen(host, port) as sock:  # before the models load: a port in use fails at once
        set_threads(threads, few=False)
        translators = [  # one after the other
            Translator(
                path,
                device=device,
                quantize=default_mode(path, device) if quantize is None else fast_mode(quantize.value),
                beam=beam,
                alpha=alpha,
                method=method_of(greedy),
                rerank=CHANNEL_WEIGHT if rerank else 0.0,
                batch_size=batch_size,
            )
            for path in models
        ]
        run(translators, settings, sock)


def served_models(model: Path | None) -> list[Path | None]:
    """The model directories to serve: --model, or that of --from/--to; with neither, $TT_MODEL where it is set,
    else every shipped direction (fr→en first: the default of a request that names no language)."""
    if model is not None or os.environ.get("TT_MODEL"):
        return [model]
    from core.checkpoint import shipped_models

    shipped = shipped_models()
    default = shipped.pop(("fr", "en"), None)
    return [default, *shipped.values()] if default is not None else list(shipped.values())


def cors_origins(given: list[str] | None) -> tuple[str, ...]:
    """--cors: none given, any origin ('*'); 'none', no CORS headers; else the origins named."""
    if not given:
        return ("*",)
    return () if given == ["none"] else tuple(given)
