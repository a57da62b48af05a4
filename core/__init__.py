"""tt core: the Transformer of "Attention Is All You Need" and everything that computes with it.

Nothing here imports typer, rich or textual; tt_cli shows what core returns. For programs,
`from core import Translator` (core/api.py) is the stable entry point; it is imported on first
use, so `import core` stays light (no torch).
"""

from core.version import __version__

__all__ = ["Translator", "__version__"]


def __getattr__(name: str):
    if name == "Translator":
        from core.api import Translator

        return Translator
    raise AttributeError(f"module 'core' has no attribute {name!r}")
