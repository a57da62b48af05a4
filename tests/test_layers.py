"""The layers hold: imports read from the source (top-level and lazy ones inside functions alike).

core's packages form one direction (LAYERS, as drawn in ../shared/DESIGN.md), core never imports the
CLI or its UI libraries, and only the root app wires the commands, so no command reaches into another.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Bottom to top: a package may import only packages on an earlier line. Packages on one line are
# peers and import neither each other. A top-level module (core/files.py) counts as a package.
LAYERS: list[set[str]] = [
    {"errors", "version"},
    {"files", "device", "evaluate", "card"},
    {"model"},
    {"text"},
    {"data"},
    {"checkpoint"},
    {"decode"},
    {"align"},
    {"train"},
    {"analysis"},
    {"learn"},
    {"api"},
]
RANK = {package: level for level, packages in enumerate(LAYERS) for package in packages}
UI = {"typer", "rich", "textual", "tt_cli", "click", "prompt_toolkit", "fastapi", "starlette", "uvicorn"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, wherever it sits."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return read_imports(path.read_text(encoding="utf-8"), package)


def read_imports(source: str, package: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from core.align import aer` imports the module core.align.aer
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def python_files(top: str) -> list[Path]:
    return sorted((ROOT / top).rglob("*.py"))


def core_package(module: str) -> str | None:
    """The package of core that `module` lies in: core.decode.search → decode; None for core itself."""
    parts = module.split(".")
    return parts[1] if parts[0] == "core" and len(parts) > 1 else None


def test_every_core_package_has_a_layer() -> None:
    packages = {core_package(module_name(p)) for p in python_files("core")} - {None}
    missing = sorted(packages - RANK.keys())
    assert not missing, f"core packages without a layer in LAYERS (tests/test_layers.py): {missing}"


def test_core_packages_import_only_downwards() -> None:
    wrong = []
    for path in python_files("core"):
        here = core_package(module_name(path))
        if here is None:  # core/__init__.py is the public face, above everything
            continue
        for line, target in imports(path):
            there = core_package(target)
            if there is None or there == here or there not in RANK or here not in RANK:
                continue
            if RANK[there] >= RANK[here]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {here} imports {target} ({there} is not below {here})")
    assert not wrong, "\n".join(wrong)


def test_no_core_module_imports_the_package_face() -> None:
    """`from core import __version__` inside core runs core/__init__.py, which sits above everything (core →
    core.api → core.checkpoint → core): every module imports what it needs from the module that defines it."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: imports {target} from the package face"
        for path in python_files("core")
        if path != ROOT / "core" / "__init__.py"
        for line, target in imports(path)
        if core_package(target) is not None and core_package(target) not in RANK
    ]
    assert not wrong, "\n".join(wrong)


def test_core_imports_no_cli_or_ui() -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: imports {target}"
        for path in python_files("core")
        for line, target in imports(path)
        if target.split(".")[0] in UI
    ]
    assert not wrong, "\n".join(wrong)


def test_only_the_root_app_imports_commands() -> None:
    """A command's helpers that another module needs belong in a shared module (tt_cli/output.py, ...).
    The entry points may: tt_cli.main (the Typer app) and tt_cli.launch (the `tt` executable's fast lane,
    which calls `tt translate` without building the app)."""
    wrong = []
    for path in python_files("tt_cli"):
        name = module_name(path)
        if name in ("tt_cli.main", "tt_cli.launch"):
            continue
        for line, target in imports(path):
            if target.startswith("tt_cli.commands.") and not target.startswith(name + "."):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {name} imports {target}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import core.decode.search", ["core.decode.search"]),
        ("from core.align import aer", ["core.align.aer"]),
        ("def f():\n    from ..model import masks", ["core.model.masks"]),
        ("from . import trace", ["core.decode.trace"]),
    ],
)
def test_imports_are_read_lazily_and_relatively(source: str, expected: list[str]) -> None:
    """The reader above sees what Python would import, so the rules cannot pass by missing an import."""
    assert [target for _, target in read_imports(source, "core.decode")] == expected


def test_the_http_server_imports_no_cli_framework() -> None:
    """tt_cli/serve is the server (Starlette, uvicorn over core.api); its command line lives with the other
    commands (tt_cli/commands/serve.py), so a program embedding the server never imports typer."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: imports {target}"
        for path in python_files("tt_cli/serve")
        for line, target in imports(path)
        if target.split(".")[0] in ("typer", "click", "rich") or target.startswith("tt_cli.options")
    ]
    assert not wrong, "\n".join(wrong)


# Where setattr sets something that is not a record: a module's child layer swapped for its packed form,
# torch's initialisers patched while a model loads, a Textual widget's reactive attribute set from a callback.
SETATTR_ALLOWED = ("core/model/fast.py", "core/checkpoint.py", "tt_cli/tui/")


def test_no_record_is_written_through_setattr_or_its_dict() -> None:
    """A record changes by dataclasses.replace (or is built whole): `setattr(record, name, ...)` and
    `record.__dict__[name] = ...` write fields a reader of the class cannot see coming."""
    wrong = []
    for top in ("core", "tt_cli"):
        for path in python_files(top):
            where = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                dict_write = (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "__dict__"
                )
                set_attr = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                if dict_write or (set_attr and not where.startswith(SETATTR_ALLOWED)):
                    wrong.append(f"{where}:{node.lineno}")
    assert not wrong, "\n".join(wrong)
