"""core.text stays below the views and above nothing heavy: it imports no UI package and no model code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TEXT = Path(__file__).resolve().parents[3] / "core" / "text"
FORBIDDEN = ("typer", "rich", "textual", "tt_cli", "torch", "core.api", "core.decode", "core.analysis")


@pytest.mark.parametrize("path", sorted(TEXT.glob("*.py")), ids=lambda p: p.name)
def test_core_text_imports_no_view_and_no_model_code(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    bad = [n for n in names if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == []
