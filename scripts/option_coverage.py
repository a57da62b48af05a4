"""Every option of every tt command, and the tests that pass it: the table in docs/tests.md.

    python scripts/option_coverage.py            # print the table (markdown)
    python scripts/option_coverage.py --missing  # only the options no test passes (exit 1 if any)

A test "passes" an option when its source holds the option's name as a string ("--beam"); that finds
the tests that could catch the option being ignored, not proof that they do. Proof is by breaking
the wiring and watching a test fail: docs/tests.md lists the options checked that way.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from typer.main import get_command

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tt_cli.main import app  # noqa: E402

SKIP = {"--help", "-h", "--install-completion", "--show-completion", "--version"}
# Tests that cover every option of a command without naming each one (they walk the command's params).
EVERY_OPTION = {"tt train": "tests/cli/test_train_option_wiring.py"}


def commands(command, path=("tt",)):
    """(path, command) for every leaf command, depth first in the order --help lists them."""
    subs = getattr(command, "commands", None)
    if subs is None:
        yield " ".join(path), command
        return
    for name, sub in subs.items():
        yield from commands(sub, (*path, name))


def options(command) -> list[tuple[str, list[str]]]:
    """Each option as --help shows it (its long name), with every name a test may use for it
    (-I for --interactive, --no-save for --save)."""
    found = []
    for p in command.params:
        names = [n for n in (*p.opts, *p.secondary_opts) if n not in SKIP]
        if p.param_type_name == "option" and names:
            found.append((next(n for n in names if n.startswith("--")), names))
    return found


def test_sources() -> dict[str, str]:
    return {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests").rglob("test_*.py"))
    }


def tests_passing(option: str, command_word: str, sources: dict[str, str]) -> list[str]:
    """The test files that name `option` as a string and also name the command (its last word)."""
    quoted = re.compile(r"[\"']" + re.escape(option) + r"(=[^\"']*)?[\"']")
    return [f for f, text in sources.items() if quoted.search(text) and command_word in text]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="only the options no test passes")
    args = parser.parse_args()
    sources = test_sources()
    missing = 0
    if not args.missing:
        print("| command | option | tests that pass it |\n|---|---|---|")
    for path, command in commands(get_command(app)):
        for option, names in options(command):
            files = sorted({f for name in names for f in tests_passing(name, path.split()[-1], sources)})
            if path in EVERY_OPTION and option not in ("--resume", "--quiet", "--threads"):
                files = [EVERY_OPTION[path], *(f for f in files if f != EVERY_OPTION[path])]
            missing += not files
            if args.missing and not files:
                print(f"{path} {option}")
            elif not args.missing:
                names = ", ".join(Path(f).name for f in files) or "**none**"
                print(f"| {path} | `{option}` | {names} |")
    return 1 if args.missing and missing else 0


if __name__ == "__main__":
    sys.exit(main())
