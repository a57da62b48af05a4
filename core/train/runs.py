"""Training runs read back: the learning curve of a run directory from its metrics.jsonl.

A `Run` is built from the records the Trainer writes (the same dicts as its TrainEvents), so
`tt runs` reading a finished run and `tt train` drawing its own curve live share one record of a
run. `panels` turns runs into the series every view draws: the terminal (plotext), a PNG
(matplotlib), `--json`.

Time on the x axis is one of: the step; compute hours — CPU-hours on a CPU (the process's CPU time,
every thread, summed over resumed starts, so runs on a shared machine compare fairly) or GPU-hours
on GPUs (wall time × processes); or wall hours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from core.errors import DataError
from core.files import read_jsonl

METRICS = "metrics.jsonl"
XAxis = Literal["step", "hours", "wall"]
X_AXES: tuple[XAxis, ...] = ("step", "hours", "wall")
X_LABELS = {"step": "step", "hours": "CPU/GPU hours", "wall": "wall hours"}


@dataclass(frozen=True)
class Point:
    """One logged step or one validation of a run."""

    step: int
    hours: float | None  # compute hours so far: CPU-hours, or GPU-hours on GPUs
    wall_hours: float | None
    numbers: dict[str, float]  # a step: loss, lr, grad_norm, tokens_per_s; a validation: valid_loss, bleu, chrf, …
    sets: dict[str, dict[str, float]] = field(default_factory=dict)  # a validation: per held-out set
    best: bool = False  # a validation that saved the run's best model

    def x(self, axis: XAxis) -> float | None:
        return float(self.step) if axis == "step" else self.hours if axis == "hours" else self.wall_hours


@dataclass
class Run:
    """A run's curve so far: its logged steps, its validations, where it ran."""

    name: str
    path: Path | None = None
    train: list[Point] = field(default_factory=list)
    valid: list[Point] = field(default_factory=list)
    machines: list[str] = field(default_factory=list)  # each start's machine, once each, in order
    status: str | None = None  # how its last start ended (None: running, or killed)
    # the start under way: its device, processes, and the clocks when it began
    _gpu: bool = False
    _world: int = 1
    _wall_before: float = 0.0
    _gpu_before: float = 0.0
    _last_wall: float = 0.0

    def add(self, record: dict[str, Any]) -> None:
        """Take one metrics.jsonl record ({"event": kind, "step": n, …}); other kinds are ignored."""
        kind, step = record.get("event"), int(record.get("step", 0))
        if kind == "start":
            self._start(record)
        elif kind == "step":
            numbers = {k: float(record[k]) for k in ("loss", "lr", "grad_norm", "tokens_per_s") if k in record}
            self.train.append(Point(step, *self._clocks(record), numbers))
        elif kind == "valid":
            keys = ("valid_loss", "valid_ppl", "bleu", "chrf")
            numbers = {k: float(record[k]) for k in keys if k in record}
            sets = {name: {k: float(v) for k, v in s.items()} for name, s in (record.get("sets") or {}).items()}
            self.valid.append(Point(step, *self._clocks(record), numbers, sets, bool(record.get("best"))))
        elif kind == "end":
            self.status = record.get("status")

    def _start(self, record: dict[str, Any]) -> None:
        device, world = str(record.get("device", "cpu")), int(record.get("world", 1))
        machine = record.get("cpu", "CPU not recorded")
        if device.startswith("cuda"):
            machine = f"{world} × {device.split(':')[0].upper()} GPU, {machine}"
        if machine not in self.machines:
            self.machines.append(machine)
        self._gpu_before += (self._last_wall - self._wall_before) * self._world if self._gpu else 0.0
        self._gpu, self._world, self._wall_before = device.startswith("cuda"), world, self._last_wall
        self.status = None

    def _clocks(self, record: dict[str, Any]) -> tuple[float | None, float | None]:
        wall = record.get("elapsed")
        if wall is None:
            return None, None
        self._last_wall = float(wall)
        if self._gpu:
            gpu = self._gpu_before + (self._last_wall - self._wall_before) * self._world
            return gpu / 3600, self._last_wall / 3600
        cpu = record.get("cpu_time")
        return (None if cpu is None else float(cpu) / 3600), self._last_wall / 3600

    # -- what a listing shows ------------------------------------------------------------------
    @property
    def processes(self) -> int:
        """How many processes its last start ran (torchrun's world size; 1 alone)."""
        return self._world

    @property
    def hours_unit(self) -> str:
        return "GPU" if self._gpu else "CPU"

    @property
    def last_valid(self) -> Point | None:
        return self.valid[-1] if self.valid else None

    @property
    def best(self) -> Point | None:
        """The validation whose weights are the run's model (the last one marked best)."""
        return next((p for p in reversed(self.valid) if p.best), None)

    @property
    def last(self) -> Point | None:
        """The latest point of either kind: how far the run has come."""
        points = self.train[-1:] + self.valid[-1:]
        return max(points, key=lambda p: p.step) if points else None

    def to_dict(self, curve: bool = False) -> dict[str, Any]:
        last = self.last
        out: dict[str, Any] = {
            "name": self.name,
            "path": str(self.path) if self.path else None,
            "step": last.step if last else 0,
            "hours": last.hours if last else None,
            "hours_unit": self.hours_unit,
            "wall_hours": last.wall_hours if last else None,
            "status": self.status,
            "machines": self.machines,
            "last_valid": _point_dict(self.last_valid),
            "best": _point_dict(self.best),
        }
        if curve:
            out["train"] = [_point_dict(p) for p in self.train]
            out["valid"] = [_point_dict(p) for p in self.valid]
        return out


def _point_dict(p: Point | None) -> dict[str, Any] | None:
    if p is None:
        return None
    out = {"step": p.step, "hours": p.hours, "wall_hours": p.wall_hours, **p.numbers}
    if p.sets:
        out["sets"] = p.sets
    return out


def read_run(path: str | Path) -> Run:
    """The run in directory `path` (its metrics.jsonl); a DataError names what is wrong with it."""
    path = Path(path)
    metrics = path / METRICS
    if not metrics.is_file():
        what = "no such directory" if not path.exists() else f"no {METRICS} (not a tt train run directory)"
        raise DataError(f"{path}: {what}")
    run = Run(path.resolve().name, path)
    for _, record in read_jsonl(metrics)[0]:  # a run killed while writing its last line loses that line only
        run.add(record)
    return run


def find_runs(directory: str | Path) -> list[Run]:
    """The runs in `directory` (its subdirectories holding a metrics.jsonl, by name), or the directory
    itself when it is a run."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"{directory}: no such directory")
    if (directory / METRICS).is_file():
        return [read_run(directory)]
    return [read_run(d) for d in sorted(directory.iterdir()) if (d / METRICS).is_file()]


# ------------------------------------------------------------------------------------ curves
@dataclass(frozen=True)
class Series:
    label: str
    x: list[float]
    y: list[float]


@dataclass(frozen=True)
class Panel:
    title: str
    series: list[Series]
    falls: bool = False  # its curves go down (a loss): the empty corner for a legend is the top right


def set_label(name: str) -> str:
    """A held-out set as a legend names it: the last part of its path (newstest2013, test)."""
    return name.rstrip("/").split("/")[-1] or name


def panels(runs: list[Run], x: XAxis = "step") -> list[Panel]:
    """Loss (training and each validation set's) and BLEU (each validation set's) against `x`.
    Series are labelled by set, and by run too when there are several runs; points without the
    chosen clock (a record from before it was logged) are left out."""
    loss, bleu = [], []
    run_names = [r.name for r in runs]
    for n, run in enumerate(runs):
        name = run.name if run_names.count(run.name) == 1 else str(run.path or f"{run.name}#{n + 1}")
        prefix = f"{name} " if len(runs) > 1 else ""
        loss.append(_series(prefix + "train", run.train, x, lambda p: p.numbers.get("loss")))
        sets = list(dict.fromkeys(set_name for p in run.valid for set_name in p.sets)) or [None]
        for set_name in sets:
            tag = prefix + ("valid" if set_name is None else set_label(set_name))
            loss.append(_series(tag, run.valid, x, _number(set_name, "valid_loss")))
            bleu.append(_series(tag, run.valid, x, _number(set_name, "bleu")))
    return [
        Panel("loss", [s for s in loss if s.x], falls=True),
        Panel("BLEU", [s for s in bleu if s.x]),
    ]


def _number(set_name: str | None, key: str):
    if set_name is None:
        return lambda p: p.numbers.get(key)
    return lambda p: p.sets.get(set_name, {}).get(key)


def _series(label: str, points: list[Point], x: XAxis, value) -> Series:
    pairs = [(p.x(x), value(p)) for p in points]
    pairs = [(a, b) for a, b in pairs if a is not None and b is not None and math.isfinite(b)]
    return Series(label, [a for a, _ in pairs], [b for _, b in pairs])
