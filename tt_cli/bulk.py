"""Bulk translation across processes and machines: `tt translate` under torchrun.

    torchrun --nproc-per-node N -m tt_cli.main translate --input big.fr --output big.en

Rank 0 reads the input in rounds: each round it takes up to CHUNKS_PER_RANK chunks per process
(the chunks one process would make: batch size × 4 lines), hands them out round-robin
(torch.distributed, gloo: CPUs and the network between machines, through torchrun's rendezvous),
translates its own share, gathers every share's finished lines and writes them in input order.
A chunk is translated exactly as one process translates it — the same sorted batches — so the
output is the same, byte for byte, as `tt translate` in one process (with the same --threads).

Only rank 0 reads the input and writes the output, atomically: a failure anywhere (bad input on
rank 0, a model error on another rank) stops every rank and leaves no partial file. Memory stays
bounded by a round, whatever the input's length.
"""

from __future__ import annotations

import io
import os
import sys
from itertools import islice

from core.errors import ConfigError, TTError
from tt_cli.output import Warnings

CHUNKS_PER_RANK = 2  # chunks each process gets per round: more smooths uneven chunks, costs memory


def distributed() -> bool:
    """Whether this process is one of several that torchrun started."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def run(request, open_lines, output, refused: dict | None = None) -> None:
    """Translate on every rank; `open_lines(stack)` opens the input (on rank 0 only), `output` (a
    path, or None: stdout) is written by rank 0. refused: options (by flag) a split run cannot honour."""
    import torch.distributed as dist

    from tt_cli.remote import Local

    given = [name for name, value in (refused or {}).items() if value]
    if given:
        raise ConfigError(f"{', '.join(given)}: not available under torchrun (run it in one process)")
    if request.options.method == "sample" and request.options.seed is not None:
        raise ConfigError("--sample --seed draws per batch of the whole run: run it in one process")
    if not dist.is_initialized():
        dist.init_process_group(backend="gloo")  # objects only: gloo carries them, on CPUs and GPUs alike
    if request.device == "auto":
        import dataclasses

        import torch

        if torch.cuda.is_available():  # one GPU per process on a machine, as torchrun numbers them
            request = dataclasses.replace(request, device=f"cuda:{os.environ.get('LOCAL_RANK', '0')}")
    try:
        local = Local(request)
        if dist.get_rank() == 0:
            _lead(local, dist.get_world_size(), open_lines, output)
        else:
            while (share := _share(None)) is not None:
                dist.gather_object(_translate(local, share), None, dst=0)
    finally:
        dist.destroy_process_group()


def _share(shares: list | None) -> list | None:
    """This rank's chunks of the round, as (first line's index, lines); None: stop. Rank 0 gives
    `shares` (one list per rank, or None to stop them all)."""
    import torch.distributed as dist

    mine: list = [None]
    dist.scatter_object_list(mine, None if shares is None else [{"chunks": s} for s in shares], src=0)
    return mine[0]["chunks"]


def _lead(local, world: int, open_lines, output) -> None:
    """Rank 0: read a round, hand it out, translate its own share, gather, write in order."""
    from contextlib import ExitStack

    import torch.distributed as dist

    from core.decode.lines import chunks
    from core.files import open_output

    stop = [None] * world
    warn, start = Warnings(), 0
    with ExitStack() as stack:
        out = sys.stdout if output is None else stack.enter_context(open_output(output))
        pieces = chunks(open_lines(stack), local.request.options.batch_size * 4)
        while True:
            try:
                work = list(islice(pieces, world * CHUNKS_PER_RANK))
            except Exception:  # noqa: BLE001 - the input failed: stop every rank, then say why
                _share(stop)
                raise
            if not work:
                _share(stop)
                break
            numbered = []
            for chunk in work:
                numbered.append((start, chunk))
                start += len(chunk)
            gathered: list = [None] * world
            dist.gather_object(_translate(local, _share([numbered[r::world] for r in range(world)])), gathered, dst=0)
            errors = [share["error"] for share in gathered if share["error"]]
            if errors:
                _share(stop)
                raise TTError(errors[0])
            for _, text, warnings in sorted(item for share in gathered for item in share["done"]):
                out.write(text)
                warn(warnings)
            out.flush()
    warn.close()


def _translate(local, share: list[tuple[int, list[str]]]) -> dict:
    """This rank's chunks as written text and warnings, or the error that stopped it."""
    from tt_cli.output import where
    from tt_cli.remote import writer

    write = writer(local.request)
    done = []
    try:
        for start, chunk in share:
            buffer, warnings = io.StringIO(), []
            for t in local.translate(chunk, start):
                warnings += where(t.index, t.warnings)
                write(buffer, t)
            done.append((start, buffer.getvalue(), warnings))
    except TTError as exc:
        return {"done": [], "error": str(exc)}
    return {"done": done, "error": None}
