"""tt core: the Transformer of "Attention Is All You Need" and everything that computes with it.

Nothing here imports typer, rich or textual; tt_cli shows what core returns.
"""

__version__ = "0.1.0"
