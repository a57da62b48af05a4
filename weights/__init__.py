"""The shipped French→English model (see README.md in this directory for its card)."""

from pathlib import Path

DIR = Path(__file__).resolve().parent
