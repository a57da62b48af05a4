"""What a model directory says of itself without loading it (no torch): its languages, from its card, and
where the default model lives. Read where a command must stay light (the prompt, a warm `tt translate`)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def model_languages(path: Path) -> tuple[str, str]:
    """The (source, target) languages of a model directory: its card's last run's languages, else tt's fr→en."""
    card_file = Path(path) / "card.json"
    try:
        card = json.loads(card_file.read_text(encoding="utf-8")) if card_file.is_file() else {}
        config = (card.get("fine_tune") or card).get("train_config", {})
    except (OSError, ValueError, AttributeError):
        config = {}
    src, tgt = str(config.get("src_lang", "fr")), str(config.get("tgt_lang", "en"))
    return (tgt, src) if config.get("swap") else (src, tgt)


def default_model_dir() -> Path:
    """$TT_MODEL if set, else the model shipped in the `weights` package."""
    override = os.environ.get("TT_MODEL")
    if override:
        return Path(override)
    from weights import DIR

    return DIR
