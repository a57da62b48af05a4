"""Standard test sets (WMT newstest and the rest) through sacreBLEU's own dataset support.

sacreBLEU downloads each test set once into $SACREBLEU (default ~/.sacrebleu), turns its SGML or
XML into plain text and keeps both; tt reads the plain text from there. No downloader of our own:
the files and their processing are exactly the ones published scores were computed on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import DataError


@dataclass(frozen=True)
class TestSet:
    __test__ = False  # not a pytest class, despite the name

    name: str  # sacreBLEU's name, e.g. "wmt14"
    langpair: str  # e.g. "fr-en"
    sources: list[str]
    references: list[list[str]]  # one list per reference set, each aligned with `sources`
    source_file: Path


def _read(path: str) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\n") for line in f]


def load_testset(name: str, langpair: str = "fr-en") -> TestSet:
    """Source and references of a sacreBLEU test set; sacreBLEU fetches it on first use."""
    import urllib.error

    from sacrebleu.dataset import DATASETS
    from sacrebleu.utils import SACREBLEU_DIR

    if name not in DATASETS:
        family = name[:3]  # "wmt", "iwslt", "mtedx": names share their first letters
        near = sorted(n for n, d in DATASETS.items() if langpair in d.langpairs and n.startswith(family))
        hint = f" ({langpair} ones like it: {', '.join(near[:8])})" if near else ""
        raise DataError(f"--testset {name}: sacreBLEU knows no such test set{hint}; `sacrebleu --list` shows them all")
    dataset = DATASETS[name]
    if langpair not in dataset.langpairs:
        raise DataError(f"--testset {name} has no {langpair}; it has {', '.join(sorted(dataset.langpairs))}")
    try:
        source = dataset.get_source_file(langpair)
        references = dataset.get_reference_files(langpair)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise DataError(
            f"--testset {name}: sacreBLEU could not fetch it into {SACREBLEU_DIR} ({reason}); "
            "run once with network access (or copy a filled $SACREBLEU directory here)"
        ) from None
    except SystemExit:  # sacreBLEU exits on a bad MD5 or an SSL failure, after logging why
        raise DataError(f"--testset {name}: sacreBLEU could not fetch or verify it (see its message above)") from None
    sources = _read(source)
    refs = [_read(r) for r in references]
    for path, lines in zip(references, refs):
        if len(lines) != len(sources):
            raise DataError(
                f"{path} has {len(lines)} lines but {source} has {len(sources)}; delete {Path(SACREBLEU_DIR) / name} and retry"
            )
    if not sources:
        raise DataError(f"{source}: empty; delete {Path(SACREBLEU_DIR) / name} and retry")
    return TestSet(name, langpair, sources, refs, Path(source))
