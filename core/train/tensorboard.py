"""`tt train --tensorboard`: the run's numbers as TensorBoard event files, in OUT/tensorboard.

A Trainer callback: it reads the same TrainEvents as metrics.jsonl, so the two cannot disagree.
Scalars: train/loss, train/lr, train/grad_norm, train/tokens_per_s at each logged step; valid/loss,
valid/ppl, valid/bleu, valid/chrf at each validation, and valid/<set>/… for each held-out set; the
run's training and model configs as text (config/train, config/model). The writer is PyTorch's own (torch.utils.tensorboard), which needs the
`tensorboard` package: the tensorboard extra (pip install 'tt[tensorboard]').
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from core.errors import ConfigError

DIRECTORY = "tensorboard"  # inside the run directory: `tensorboard --logdir runs` shows every run
MISSING = "--tensorboard needs the tensorboard package: pip install 'tt[tensorboard]' (or pip install tensorboard)"
TRAIN_SCALARS = ("loss", "lr", "grad_norm", "tokens_per_s")
VALID_SCALARS = {"valid_loss": "loss", "valid_ppl": "ppl", "bleu": "bleu", "chrf": "chrf"}


def check_available() -> None:
    """A ConfigError when the tensorboard package is missing (before any data is read)."""
    if importlib.util.find_spec("tensorboard") is None:
        raise ConfigError(MISSING)


class TensorBoardLog:
    """Callback for core.train.trainer.Trainer; opens its writer at the run's start event."""

    def __init__(self, run_dir: str | Path, config: dict[str, Any]) -> None:
        self.log_dir = Path(run_dir) / DIRECTORY
        self.config = config
        self.writer = None

    def __call__(self, event: Any) -> None:
        kind, step, data = event.kind, event.step, event.data
        if kind == "start":
            self._open(step, resumed=bool(data.get("resumed")), model=data.get("model_config") or {})
        elif self.writer is None:
            return
        elif kind == "step" and data.get("log"):
            for name in TRAIN_SCALARS:
                if data.get(name) is not None:
                    self.writer.add_scalar(f"train/{name}", data[name], step)
            self.writer.flush()
        elif kind == "valid":
            self._scalars("valid", data, step)
            for set_name, numbers in (data.get("sets") or {}).items():
                self._scalars(f"valid/{set_name.strip('/')}", numbers, step)
            self.writer.flush()
        elif kind == "end":
            self.writer.close()
            self.writer = None

    def _open(self, step: int, resumed: bool, model: dict[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        # A resumed run starts again after its checkpoint's step: events written past it by the start it
        # resumes are dropped, as metrics.jsonl's are.
        self.writer = SummaryWriter(str(self.log_dir), purge_step=step + 1 if resumed else None)
        for name, config in (("config/train", self.config), ("config/model", model)):
            text = json.dumps(config, indent=2, sort_keys=True, default=str)
            self.writer.add_text(name, "```\n" + text + "\n```", step)  # a Markdown code block: kept as written

    def _scalars(self, prefix: str, numbers: dict[str, Any], step: int) -> None:
        for key, name in VALID_SCALARS.items():
            if numbers.get(key) is not None:
                self.writer.add_scalar(f"{prefix}/{name}", numbers[key], step)
