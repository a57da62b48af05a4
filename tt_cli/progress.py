"""The `tt train` display on stderr: on a terminal, the learning curve drawn live above a progress
bar; plain lines in a log file (or with --plain).

It is one of the Trainer's callbacks: it only reads the TrainEvents core emits (the same numbers
metrics.jsonl records), and the curve is core.train.runs' record of a run fed those events, the one
`tt runs show` reads back from metrics.jsonl, so what the screen shows and what the log keeps
cannot disagree.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, RenderableType
from rich.progress import BarColumn, Progress, TaskID, TextColumn
from rich.text import Text

from core.train.runs import Run, panels

CURVE_HEIGHT = 16  # terminal rows of the live curve, fewer on a short terminal
MIN_TERMINAL_HEIGHT = 16  # below this the curve would push the bar off a small screen: the bar alone


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class CurveProgress(Progress):
    """A rich Progress that draws the run's learning curve above its bar."""

    curve: RenderableType | None = None

    def get_renderables(self):
        if self.curve is not None:
            yield self.curve
        yield from super().get_renderables()


class TrainProgress:
    """Callback for core.train.trainer.Trainer. Use as a context manager around `Trainer.run()`."""

    def __init__(self, console: Console, quiet: bool = False, plain: bool = False, name: str = "") -> None:
        self.console = console
        self.quiet = quiet
        # A bar and the curve only where someone watches; a log file (or --plain) gets one line per logged step.
        self.live = console.is_terminal and not quiet and not plain
        self.curve = self.live and console.height >= MIN_TERMINAL_HEIGHT
        self.run = Run(name)  # the curve so far
        self.progress: CurveProgress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> TrainProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.stop()

    def _bar(self, total: int | None, step: int) -> None:
        self.progress = CurveProgress(
            TextColumn("step {task.completed}/{task.fields[total_text]}"),
            BarColumn(),
            TextColumn(
                "loss {task.fields[loss]}  lr {task.fields[lr]}  {task.fields[speed]} tok/s  ETA {task.fields[eta]}"
            ),
            console=self.console,
            transient=False,
        )
        self.task = self.progress.add_task(
            "train", total=total or None, completed=step, total_text=total or "?", loss="-", lr="-", speed="-", eta="?"
        )
        self.progress.start()

    def __call__(self, event: Any) -> None:
        kind, step, data = event.kind, event.step, event.data
        if kind == "start":
            self._start(step, data)
        elif kind == "step":
            self._step(step, data)
        elif kind == "valid" and not self.quiet:
            bleu = f"  BLEU {data['bleu']:.2f}  chrF {data['chrf']:.2f}" if "bleu" in data else ""
            best = "  (best so far, saved)" if data.get("best") else ""
            self._line(f"valid @ {step}: loss {data['valid_loss']:.3f}  ppl {data['valid_ppl']:.1f}{bleu}{best}")
            for name, numbers in (data.get("sets") or {}).items():
                scores = f"  BLEU {numbers['bleu']:.2f}" if "bleu" in numbers else ""
                self._line(f"  {name}: loss {numbers['valid_loss']:.3f}{scores}")
        elif kind == "checkpoint" and not self.quiet:
            self._line(f"checkpoint @ {step}: {data['path']}")
        if self.curve and (kind in ("start", "valid") or (kind == "step" and data.get("log"))):
            self.run.add({"event": kind, "step": step, **data})
            self._draw_curve(step)

    def _draw_curve(self, step: int) -> None:
        """Draw the curve again (at each logged step and validation, not at every refresh)."""
        from tt_cli.curves import draw

        if self.progress is None:
            return
        point = self.run.last
        hours = f" · {point.hours:.3g} {self.run.hours_unit}-hours" if point and point.hours is not None else ""
        width, height = self.console.width, min(CURVE_HEIGHT, self.console.height - 4)
        colour = self.console.color_system is not None
        text = draw(panels([self.run], "step"), "step", width, height, colour, title=f"step {step}{hours}")
        self.progress.curve = Text.from_ansi(text) if text else None

    def _line(self, text: str) -> None:
        (self.progress.console if self.progress else self.console).print(
            text, highlight=False, markup=False, soft_wrap=True
        )

    def _start(self, step: int, data: dict[str, Any]) -> None:
        if self.quiet:
            return
        how = "resumed at step {}".format(step) if data.get("resumed") else "training"
        world = f" × {data['world']} processes" if data.get("world", 1) > 1 else ""
        self._line(
            f"{how}: {data['params']:,} parameters on {data['device']}{world} in {data['precision']}; "
            f"{data['train_pairs']} training pairs"
            + (f" + {data['joined_examples']} joined (--concat)" if data.get("joined_examples") else "")
            + f", {data['valid_pairs']} validation"
        )
        skipped = {k: data.get(f"skipped_{k}", 0) for k in ("malformed", "filtered", "duplicate")}
        if any(skipped.values()):
            self._line("skipped: " + ", ".join(f"{n} {k}" for k, n in skipped.items() if n))
        cleaned = {k: n for k, n in (data.get("cleaning") or {}).items() if n}
        if cleaned:
            self._line("cleaning: " + ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in cleaned.items()))
        corpora = data.get("corpora") or {}
        if len(corpora) > 1:
            self._line(
                "corpora (examples, drawn per epoch): "
                + ", ".join(f"{name} {c['train']}/{c['per_epoch']}" for name, c in corpora.items())
            )
        if data.get("cached"):
            self._line("data: the tokenized cache of an earlier start (the corpora were not read again)")
        for problem in data.get("problems") or []:
            self._line(f"  {problem}")

    def _step(self, step: int, data: dict[str, Any]) -> None:
        if self.quiet:
            return
        fields = dict(
            loss=f"{data['loss']:.3f}",
            lr=f"{data['lr']:.2e}",
            speed=f"{data['tokens_per_s']:,.0f}",
            eta=duration(data["eta"]),
        )
        if self.live:
            if self.progress is None:
                self._bar(data.get("max_steps") or None, step - 1)
            self.progress.update(self.task, completed=step, **fields)
        elif data.get("log"):
            total = data.get("max_steps") or "?"
            self._line(
                f"step {step}/{total}  loss {fields['loss']}  lr {fields['lr']}  {fields['speed']} tok/s  ETA {fields['eta']}"
            )


def line_progress(total: int, what: str = "translating") -> Progress:
    """A bar of lines done on stderr (`tt eval`, `tt translate --input`), drawn only when stderr is a
    terminal and gone when done, so a log or a pipe never sees it."""
    from rich.progress import MofNCompleteColumn, TimeRemainingColumn

    err = Console(stderr=True, highlight=False)
    return Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
