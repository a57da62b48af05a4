"""The writers of `tt runs`: a listing of runs, their validations as a Markdown table, JSON, and the
learning curves in the terminal. Each reads core.train.runs' records and writes to `out`."""

from __future__ import annotations

import json
from typing import TextIO

from core.train.runs import Point, Run, XAxis, panels, set_label


def _hours(run: Run, p: Point | None) -> str:
    return "?" if p is None or p.hours is None else f"{p.hours:.2f} {run.hours_unit}"


def _bleu(p: Point | None) -> str:
    return "–" if p is None or "bleu" not in p.numbers else f"{p.numbers['bleu']:.2f}"


def _sets(p: Point | None) -> str:
    """Each held-out set's BLEU (or loss, when BLEU was not measured): "newstest2013 21.2 · test 52.6"."""
    if p is None:
        return ""
    return " · ".join(
        f"{set_label(name)} {s['bleu']:.1f}" if "bleu" in s else f"{set_label(name)} loss {s['valid_loss']:.3f}"
        for name, s in p.sets.items()
    )


def write_list(runs: list[Run], out: TextIO) -> None:
    """One line per run: how far it came, its last validation, its best one, where it ran."""
    header = ("run", "step", "hours", "valid loss", "BLEU", "best step", "best BLEU", "sets", "status", "machine")
    rows = [header]
    for run in runs:
        last, best = run.last_valid, run.best
        rows.append(
            (
                run.name,
                str(run.last.step if run.last else 0),
                _hours(run, run.last),
                "–" if last is None else f"{last.numbers['valid_loss']:.3f}",
                _bleu(last),
                "–" if best is None else str(best.step),
                _bleu(best),
                _sets(last),
                run.status or "running or stopped",
                "; ".join(run.machines) or "?",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    for row in rows:
        out.write("  ".join(f"{c:<{w}}" for c, w in zip(row, widths)) + "  " + row[-1] + "\n")


def write_table(runs: list[Run], out: TextIO) -> None:
    """Every validation of every run as a Markdown table, each run's machines below it."""
    out.write("| run | step | CPU/GPU h | wall h | valid loss | BLEU | BLEU per held-out set |\n")
    out.write("|---|---|---|---|---|---|---|\n")
    for run in runs:
        for p in run.valid:
            wall = "?" if p.wall_hours is None else f"{p.wall_hours:.2f}"
            out.write(
                f"| {run.name} | {p.step} | {_hours(run, p)} | {wall} | {p.numbers['valid_loss']:.3f} "
                f"| {_bleu(p)} | {_sets(p)} |\n"
            )
    out.write("\n")
    for run in runs:
        out.write(f"- {run.name}: {'; '.join(run.machines) or 'machine not recorded'}\n")


def write_json(runs: list[Run], out: TextIO, curve: bool) -> None:
    """One JSON document: a list of runs (with every point of their curves when `curve`)."""
    out.write(json.dumps([r.to_dict(curve=curve) for r in runs], ensure_ascii=False, indent=1) + "\n")


def write_curves(runs: list[Run], out: TextIO, x: XAxis, width: int, height: int, colour: bool) -> None:
    """The runs' learning curves side by side (one panel per measure, one line per run)."""
    from tt_cli.curves import draw

    text = draw(panels(runs, x), x, width, height, colour)
    out.write(text.rstrip("\n") + "\n" if text else "no logged step or validation yet\n")
