"""`tt data get` / `tt data list`: fetch the public corpora into a local cache and say how to train on them."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from tt_cli.errors import guard
from tt_cli.options import CacheDirOpt
from tt_cli.usage import Typer

app = Typer(
    help="Fetch public French–English corpora (Tatoeba, Multi30k, any OPUS corpus such as opus:Europarl) into a "
    "local cache: resumable, sha256-recorded, placed atomically. `tt data list` shows what is there.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def get(
    corpus: Annotated[
        str,
        typer.Argument(
            help="tatoeba, multi30k, opus:NAME or opus:NAME/VERSION — e.g. opus:Europarl, opus:News-Commentary, opus:TED2020, "
            "opus:Books/v1 (OPUS's fr–en Moses zip). `tt data list` shows them."
        ),
    ],
    cache_dir: CacheDirOpt = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Fetch from this base URL instead (each file is BASE/NAME; for a one-file corpus, the file's URL).",
        ),
    ] = None,
    mirror: Annotated[
        str | None,
        typer.Option(
            "--mirror",
            envvar="TT_DATA_MIRROR",
            show_envvar=True,
            help="A mirror holding every corpus as MIRROR/<corpus>/<file> (OPUS: MIRROR/opus-NAME-VERSION/en-fr.txt.zip). "
            "--url wins over it.",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Download again even if the cache holds the files.")] = False,
    from_: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Place a copy you already downloaded instead (the file, e.g. fr-en.tgz or en-fr.txt.zip, or a directory "
            "holding the corpus's files): checksummed and prepared as a download would be.",
        ),
    ] = None,
) -> None:
    """Download a corpus (resumable, sha256-verified) and print the `tt train` line that uses it."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from core.data import corpora, download

    src = corpora.source(corpus)
    base = corpora.base_url_for(src, url, mirror)
    root = cache_dir or corpora.default_cache_dir()
    err = Console(stderr=True)
    tasks: dict[str, int] = {}
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    # Started on the first byte, so a run that only verifies the cache draws no empty bar.
    bar = Progress(*columns, console=err, transient=True)

    def on_progress(p: download.Progress) -> None:
        if p.file not in tasks:
            if not tasks:
                bar.start()
            resumed = f" (resuming at {p.done:,} bytes)" if p.done else ""
            tasks[p.file] = bar.add_task(f"{p.file}{resumed}", total=p.total, completed=p.done)
        bar.update(tasks[p.file], completed=p.done, total=p.total)

    try:
        result = download.fetch(src, root, base_url=base, force=force, on_progress=on_progress, local=from_)
    finally:
        bar.stop()

    for f in result.files:
        err.print(f"{f.status:>10}  {f.path.name}  sha256 {f.sha256[:16]}…  {f.size:,} bytes", highlight=False)
    counts = ", ".join(f"{name} {n:,} pairs" for name, n in result.pairs.items())
    err.print(f"{src.name}: {counts}; sha256 sums in {result.directory / download.MANIFEST}", highlight=False)
    # stdout: the result — where the corpus is and the exact line that trains on it.
    typer.echo(f"{src.name}: {result.directory}")
    typer.echo(shlex.join(["tt", "train", *src.train_args(result.directory)]))
    if eval_args := src.eval_args(result.directory):
        typer.echo(shlex.join(["tt", "eval", *eval_args]))


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB" if n else "-"


def list_corpora(cache_dir: CacheDirOpt = None) -> None:
    """List what `tt data get` can fetch and what is in the cache, with sizes on disk and sentence pairs.

    Sizes before download (≈) are rough; the exact pair count shows once fetched. Any OPUS corpus can be fetched as
    opus:NAME/VERSION."""
    from core.data import corpora, download

    root = cache_dir or corpora.default_cache_dir()
    sources = {s.name: s for s in corpora.SOURCES.values()}
    sources.update((s.name, s) for s in map(corpora.opus_source, corpora.OPUS_KNOWN))
    sources.update((s.name, s) for s in download.cached_sources(root))
    rows = []
    for src in sources.values():
        state = download.cache_status(src, root)
        if state.ready:
            status = "ready"
        elif state.present or state.partial:
            status = f"partial ({state.present}/{len(src.files)} files"
            status += f", {state.partial:,} bytes to resume)" if state.partial else ")"
        else:
            status = "not downloaded"
        about = src.description
        if state.pairs:
            about += " — here: " + ", ".join(f"{name} {n:,} pairs" for name, n in state.pairs.items())
        rows.append((src, state, status, about))
    width = max(len(src.name) for src, *_ in rows)
    typer.echo(f"cache: {root}")
    for src, state, status, about in rows:
        typer.echo(f"{src.name:<{width}}  {status:<14}  {_size(state.size):>8}  {about}")
        if state.ready:
            typer.echo(f"{'':<{width}}  {shlex.join(['tt', 'train', *src.train_args(state.directory)])}")


app.command("get", help=get.__doc__)(guard(get))
app.command("list", help=list_corpora.__doc__)(guard(list_corpora))
