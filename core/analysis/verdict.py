"""A claim's verdict and its record, shared by the claim modules (model, timing, quality)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

HOLDS, FAILS, DEPENDS = "holds", "does not hold", "depends"
VERDICTS = (HOLDS, FAILS, DEPENDS)


@dataclass(frozen=True)
class Claim:
    key: str
    claim: str  # what the notes say
    source: str  # which note says it
    figure: str  # what was measured, one line
    verdict: str  # holds / does not hold / depends
    why: str  # one line: what the verdict rests on
    values: dict = field(default_factory=dict)  # the numbers behind the figure, JSON-ready

    def to_dict(self) -> dict:
        return asdict(self)


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log y against log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
