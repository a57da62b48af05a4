"""Checkpoint scrubber: one probe sentence through every saved checkpoint of a training run.

For each finished checkpoint (`core.train.state.list_checkpoints`, oldest first) the probe is
translated greedily and traced, giving its translation, each step's top candidates and every
attention matrix: what `tt inspect --run` slides over to show how the model learned to translate.
Checkpoints are loaded one at a time, so a long run costs one model's memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from core.decode.trace import SourceTrace, StepTrace
from core.errors import CheckpointError


@dataclass
class ScrubPoint:
    step: int  # the training step the checkpoint was saved at
    path: Path
    translation: str
    source: SourceTrace
    steps: list[StepTrace]  # per output piece (EOS included): candidates, attention, logits

    @property
    def logprob(self) -> float:
        return sum(s.logprob for s in self.steps)

    def cross(self, layer: int = -1) -> torch.Tensor:
        """(T, S) cross-attention of one decoder layer, mean over heads."""
        if not self.steps:
            return torch.zeros(0, len(self.source.tokens))
        return torch.stack([s.cross[layer].mean(0) for s in self.steps])


def run_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """(step, directory) of each finished checkpoint, oldest first; an error when there are none."""
    from core.train.state import list_checkpoints, read_trainer_info

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir}: no such run directory")
    found = [(int(read_trainer_info(p).get("step", 0)), p) for p in list_checkpoints(run_dir)]
    if not found:
        raise CheckpointError(
            f"{run_dir}: no finished checkpoints in {run_dir / 'checkpoints'} (tt train --save-every)"
        )
    return found


def scrub(
    run_dir: str | Path,
    text: str,
    *,
    top_k: int = 5,
    device: str | torch.device = "cpu",
    checkpoints: list[tuple[int, Path]] | None = None,
) -> Iterator[ScrubPoint]:
    """The probe `text` at each checkpoint of `run_dir`, oldest first, one checkpoint loaded at a time."""
    from core.checkpoint import load_model
    from core.decode.translate import TranslateOptions, translate_lines

    options = TranslateOptions(method="greedy", with_attention=True, n_candidates=top_k)
    for step, path in checkpoints if checkpoints is not None else run_checkpoints(run_dir):
        loaded = load_model(path, device=device)
        t = next(translate_lines(loaded, [text], options))
        if t.source_trace is None:
            raise CheckpointError("the probe sentence is empty")
        yield ScrubPoint(step, path, t.text, t.source_trace, t.steps or [])
