"""What a model directory says of itself without loading it (no torch): its languages, from its card, and
where the default model lives. Read where a command must stay light (the prompt, a warm `tt translate`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

LANGUAGES_KEY = "languages"  # weights-file metadata, "en-fr": what tt train and tt average write


def model_languages(path: Path) -> tuple[str, str]:
    """The (source, target) languages of a model directory: its card's last run's languages; without a card (a
    run directory, a checkpoint, `tt average`'s output) what its weights say, else its run's settings; else tt's
    fr→en."""
    path = Path(path)
    card_file = path / "card.json"
    try:
        card = json.loads(card_file.read_text(encoding="utf-8")) if card_file.is_file() else {}
        config = (card.get("fine_tune") or card).get("train_config", {})
    except (OSError, ValueError, AttributeError):
        config = {}
    if not config:
        found = _weights_languages(path / "model.safetensors")
        if found:
            return found
        config = _run_config(path)
    src, tgt = str(config.get("src_lang", "fr")), str(config.get("tgt_lang", "en"))
    return (tgt, src) if config.get("swap") else (src, tgt)


def _weights_languages(weights: Path) -> tuple[str, str] | None:
    """`languages` from a safetensors file's header, read as JSON (no torch): 8 bytes of length, then the header."""
    try:
        with open(weights, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size)) if 0 < size <= 100_000_000 else {}
        src, sep, tgt = str((header.get("__metadata__") or {}).get(LANGUAGES_KEY, "")).partition("-")
    except (OSError, ValueError, AttributeError):
        return None
    return (src, tgt) if sep and src and tgt else None


def _run_config(path: Path) -> dict:
    """The training settings of a checkpoint (its trainer.json) or of a run directory (its newest checkpoint's)."""
    candidates = [path / "trainer.json", *sorted((path / "checkpoints").glob("step_*/trainer.json"), reverse=True)]
    for file in candidates:
        try:
            config = json.loads(file.read_text(encoding="utf-8")).get("train_config")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(config, dict):
            return config
    return {}


def default_model_dir() -> Path:
    """$TT_MODEL if set, else the model shipped in the `weights` package."""
    override = os.environ.get("TT_MODEL")
    if override:
        return Path(override)
    from weights import DIR

    return DIR
