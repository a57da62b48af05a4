"""The corpora `tt data get` knows: where each lives upstream and how it becomes training files.

core/download.py fetches the files; each Source's `prepare` turns them into what `tt train` and
`tt eval` read (Tatoeba's zip into a French-first TSV, Multi30k's .gz files into plain text, an
OPUS Moses zip into train.fr + train.en).
"""

from __future__ import annotations

import gzip
import io
import os
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import zip_longest
from pathlib import Path

from core.errors import DownloadError
from core.files import cache_home


def error_reason(exc: BaseException) -> str:
    """The human part of a network or disk error ("Connection refused", "timed out")."""
    import urllib.error

    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        if not isinstance(exc.reason, BaseException):
            return str(exc.reason)
        exc = exc.reason
    if isinstance(exc, TimeoutError):
        return "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


@dataclass(frozen=True)
class RemoteFile:
    name: str  # the file name in the cache, and the last part of its URL
    sha256: str | None = None  # None: recorded in manifest.json on first download, verified after


@dataclass(frozen=True)
class Source:
    name: str
    description: str
    base_url: str  # each file is fetched from base_url + name
    files: tuple[RemoteFile, ...]
    prepare: Callable[[Path], dict[str, int]]  # corpus dir → sentence pairs per data set
    outputs: tuple[str, ...] = ()  # files prepare() writes; the corpus is ready when all exist
    train: str = ""  # `tt train --data`, relative to the corpus directory
    valid: str | None = None  # `tt train --valid`, when the corpus has an official dev set
    test: str | None = None  # prefix P of the test set (P.fr + P.en), for `tt eval`
    testset: str | None = None  # else a sacreBLEU test set to score on (`tt eval --testset`)
    directory: str = ""  # the cache sub-directory when the name is not a safe one ("opus:Europarl/v8")

    @property
    def dirname(self) -> str:
        return self.directory or self.name

    def train_args(self, directory: Path) -> list[str]:
        """The `tt train` options that use this corpus, once it sits in `directory`."""
        args = ["--data", str(directory / self.train)]
        return args + ["--valid", str(directory / self.valid)] if self.valid else args

    def eval_args(self, directory: Path) -> list[str]:
        """The `tt eval` options that score a model on this corpus's test set."""
        if self.test:
            return ["--src", f"{directory / self.test}.fr", "--ref", f"{directory / self.test}.en"]
        return ["--testset", self.testset, "--langpair", "fr-en"] if self.testset else []

    def url(self, name: str, base_url: str | None = None) -> str:
        base = base_url or self.base_url
        if len(self.files) == 1 and base.endswith("/" + name):
            return base  # --url gave the file itself
        return base.rstrip("/") + "/" + name


def _delete_bad(path: Path, what: str) -> DownloadError:
    path.unlink(missing_ok=True)
    return DownloadError(f"{path}: {what}; deleted it (the server may have sent an error page), run again")


def prepare_tatoeba(directory: Path) -> dict[str, int]:
    """fra.txt in the zip is English<TAB>French<TAB>attribution; write fra-eng.tsv French first."""
    from core.files import atomic_path

    archive, tsv = directory / "fra-eng.zip", directory / "fra-eng.tsv"
    pairs = lineno = 0
    try:
        with zipfile.ZipFile(archive) as zf:
            if "fra.txt" not in zf.namelist():
                raise DownloadError(f"{archive}: no fra.txt inside (found: {', '.join(zf.namelist()) or 'nothing'})")
            with atomic_path(tsv) as tmp, open(tmp, "w", encoding="utf-8") as out, zf.open("fra.txt") as raw:
                for lineno, line in enumerate(io.TextIOWrapper(raw, encoding="utf-8", newline=""), start=1):
                    cols = line.rstrip("\r\n").split("\t")
                    if len(cols) >= 2 and cols[0].strip() and cols[1].strip():
                        out.write(f"{cols[1].strip()}\t{cols[0].strip()}\n")
                        pairs += 1
            if "_about.txt" in zf.namelist():
                # The licence (CC-BY 2.0 FR) asks for attribution: keep the notice beside the data.
                with atomic_path(directory / "ABOUT.txt") as tmp:
                    tmp.write_bytes(zf.read("_about.txt"))
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise _delete_bad(archive, f"not a valid zip archive ({exc})") from None
    except UnicodeDecodeError as exc:
        raise DownloadError(f"{archive}: fra.txt:{lineno + 1}: invalid UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise DownloadError(f"{tsv}: cannot write ({error_reason(exc)})") from None
    if not pairs:
        raise DownloadError(f"{archive}: fra.txt holds no English<TAB>French lines")
    return {"fra-eng.tsv": pairs}


def prepare_multi30k(directory: Path) -> dict[str, int]:
    """Unpack each split beside its .gz (`tt eval` reads plain files) and check its sides align."""
    from core.files import atomic_path

    pairs = {}
    for split in ("train", "val", "test_2016_flickr"):
        lines = {}
        for lang in ("fr", "en"):
            packed, plain = directory / f"{split}.{lang}.gz", directory / f"{split}.{lang}"
            try:
                with gzip.open(packed, "rb") as src, atomic_path(plain) as tmp, open(tmp, "wb") as out:
                    lines[lang] = 0
                    for line in src:
                        out.write(line)
                        lines[lang] += 1
            except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
                raise _delete_bad(packed, f"not a valid gzip file ({exc})") from None
            except OSError as exc:
                raise DownloadError(f"{plain}: cannot write ({error_reason(exc)})") from None
        if lines["fr"] != lines["en"]:
            raise DownloadError(
                f"{directory / split}.fr.gz: {lines['fr']} lines but {split}.en.gz has {lines['en']}; they do not align"
            )
        pairs[split] = lines["fr"]
    return pairs


TATOEBA = Source(
    name="tatoeba",
    description="Tatoeba French–English sentence pairs, packaged by manythings.org/anki (CC-BY 2.0 FR)",
    base_url="http://www.manythings.org/anki/",
    files=(RemoteFile("fra-eng.zip"),),
    prepare=prepare_tatoeba,
    outputs=("fra-eng.tsv",),
    train="fra-eng.tsv",
)
MULTI30K = Source(
    name="multi30k",
    description="Multi30k task 1 image captions, French–English: train 29k, val 1k, test 2016 flickr 1k",
    base_url="https://github.com/multi30k/dataset/raw/master/data/task1/raw/",
    files=tuple(
        RemoteFile(f"{split}.{lang}.gz") for split in ("train", "val", "test_2016_flickr") for lang in ("fr", "en")
    ),
    prepare=prepare_multi30k,
    outputs=tuple(f"{split}.{lang}" for split in ("train", "val", "test_2016_flickr") for lang in ("fr", "en")),
    train="train",  # prefix: train.fr + train.en
    valid="val",
    test="test_2016_flickr",
)


def prepare_europarl(directory: Path) -> dict[str, int]:
    """Unpack europarl-v7.fr-en.fr / .en from statmt.org's fr-en.tgz into train.fr / train.en, checking they align."""
    import tarfile

    from core.files import atomic_path

    archive = directory / "fr-en.tgz"
    names = {lang: f"europarl-v7.fr-en.{lang}" for lang in ("fr", "en")}
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = {m.name.rsplit("/", 1)[-1]: m for m in tar.getmembers() if m.isfile()}
            missing = [n for n in names.values() if n not in members]
            if missing:
                raise DownloadError(
                    f"{archive}: no {', '.join(missing)} inside (found: {', '.join(members) or 'nothing'})"
                )
            counts = {}
            for lang, name in names.items():
                with tar.extractfile(members[name]) as src, atomic_path(directory / f"train.{lang}") as tmp:
                    with open(tmp, "wb") as out:
                        counts[lang] = 0
                        for line in src:
                            out.write(line if line.endswith(b"\n") else line + b"\n")
                            counts[lang] += 1
    except (tarfile.TarError, zlib.error, EOFError) as exc:
        raise _delete_bad(archive, f"not a valid .tgz archive ({exc})") from None
    except OSError as exc:
        raise DownloadError(f"{directory}: cannot write train.fr / train.en ({error_reason(exc)})") from None
    if counts["fr"] != counts["en"]:
        raise DownloadError(
            f"{archive}: {names['fr']} has {counts['fr']} lines, {names['en']} {counts['en']}; they do not align"
        )
    return {"train": counts["fr"]}


EUROPARL = Source(
    name="europarl",
    description="Europarl v7 French–English (Koehn 2005), ≈2.0M pairs of parliament proceedings, raw: `tt train` cleans it",
    base_url="https://www.statmt.org/europarl/v7/",
    files=(RemoteFile("fr-en.tgz"),),
    prepare=prepare_europarl,
    outputs=("train.fr", "train.en"),
    train="train",
    testset="wmt14",
)

SOURCES = {s.name: s for s in (TATOEBA, MULTI30K, EUROPARL)}


# ------------------------------------------------------------------------------------ OPUS
# OPUS (opus.nlpl.eu) publishes every corpus's language pairs as Moses zips at
# https://object.pouta.csc.fi/OPUS-{corpus}/{version}/moses/{l1}-{l2}.txt.zip, the pair sorted
# alphabetically (en-fr), holding {corpus}.{l1}-{l2}.{l1} and .{l2}: one sentence per line, aligned.
OPUS_URL = "https://object.pouta.csc.fi/OPUS-{corpus}/{version}/moses/"
OPUS_PAIR = "en-fr"
# A few fr–en corpora with the version fetched by default and a rough size for the pair, as OPUS's
# listing gave it when this was written (not re-checked: no network here; the exact count is printed
# once downloaded). Any other OPUS corpus works as opus:NAME/VERSION.
OPUS_KNOWN = {
    "Europarl": ("v8", "≈2.0M pairs, European Parliament proceedings"),
    "News-Commentary": ("v16", "≈0.4M pairs, news commentary articles"),
    "TED2020": ("v1", "≈0.4M pairs, TED talk transcripts"),
    "GlobalVoices": ("v2018q4", "≈0.15M pairs, citizen-media news"),
    "OpenSubtitles": ("v2018", "≈40M pairs, film subtitles (large)"),
}


def prepare_opus(directory: Path, corpus: str) -> dict[str, int]:
    """Unpack {corpus}.en-fr.fr / .en from the Moses zip into train.fr / train.en, checking they align."""
    from core.files import atomic_path

    archive = directory / f"{OPUS_PAIR}.txt.zip"
    stem = f"{corpus}.{OPUS_PAIR}"
    try:
        with zipfile.ZipFile(archive) as zf:
            names = zf.namelist()
            missing = [f"{stem}.{lang}" for lang in ("fr", "en") if f"{stem}.{lang}" not in names]
            if missing:
                raise DownloadError(
                    f"{archive}: no {', '.join(missing)} inside (found: {', '.join(names) or 'nothing'})"
                )
            pairs = 0
            with (
                zf.open(f"{stem}.fr") as fr_in,
                zf.open(f"{stem}.en") as en_in,
                atomic_path(directory / "train.fr") as fr_tmp,
                atomic_path(directory / "train.en") as en_tmp,
                open(fr_tmp, "wb") as fr_out,
                open(en_tmp, "wb") as en_out,
            ):
                for fr, en in zip_longest(fr_in, en_in):
                    if fr is None or en is None:
                        longer, shorter = (stem + ".en", stem + ".fr") if fr is None else (stem + ".fr", stem + ".en")
                        raise DownloadError(
                            f"{archive}: {shorter} ends at line {pairs} but {longer} goes on; they do not align"
                        )
                    fr_out.write(fr if fr.endswith(b"\n") else fr + b"\n")
                    en_out.write(en if en.endswith(b"\n") else en + b"\n")
                    pairs += 1
            # OPUS asks users to cite the corpus and keep its licence: keep both beside the data.
            for name in ("README", "LICENSE"):
                if name in names:
                    with atomic_path(directory / f"{name}.txt") as tmp:
                        tmp.write_bytes(zf.read(name))
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise _delete_bad(archive, f"not a valid zip archive ({exc})") from None
    except OSError as exc:
        raise DownloadError(f"{directory}: cannot write train.fr / train.en ({error_reason(exc)})") from None
    return {"train": pairs}


def opus_source(spec: str) -> Source:
    """The Source for `opus:NAME` (the version in OPUS_KNOWN) or `opus:NAME/VERSION` (any OPUS corpus)."""
    name, _, version = spec.partition("/")
    known = {k.lower(): k for k in OPUS_KNOWN}
    corpus = known.get(name.lower(), name)  # OPUS's names are case-sensitive in the URL
    if not version:
        if corpus not in OPUS_KNOWN:
            raise DownloadError(
                f"opus:{name}: not one tt knows the version of; give it as opus:{name}/VERSION "
                f"(see opus.nlpl.eu), or use one of: {', '.join('opus:' + k for k in OPUS_KNOWN)}"
            )
        version = OPUS_KNOWN[corpus][0]
    if not corpus or not all(c.isalnum() or c in "-_." for c in corpus + version) or ".." in corpus + version:
        raise DownloadError(f"opus:{spec}: not an OPUS corpus name (letters, digits, - _ . and one /VERSION)")
    about = OPUS_KNOWN.get(corpus, (None, "an OPUS corpus"))[1]
    return Source(
        name=f"opus:{corpus}/{version}",
        description=f"OPUS {corpus} {version} French–English, {about}",
        base_url=OPUS_URL.format(corpus=corpus, version=version),
        files=(RemoteFile(f"{OPUS_PAIR}.txt.zip"),),
        prepare=partial(prepare_opus, corpus=corpus),
        outputs=("train.fr", "train.en"),
        train="train",  # prefix: train.fr + train.en
        testset="wmt14",  # newstest2014 fr–en, through sacreBLEU
        directory=f"opus-{corpus}-{version}",
    )


def default_cache_dir() -> Path:
    """$TT_CACHE, else $XDG_CACHE_HOME/tt/data, else ~/.cache/tt/data."""
    if os.environ.get("TT_CACHE"):
        return Path(os.environ["TT_CACHE"]).expanduser()
    return cache_home() / "data"


def source(name: str) -> Source:
    if name.lower().startswith("opus:"):
        return opus_source(name[len("opus:") :])
    name = name.lower()
    if name not in SOURCES:
        hint = (
            "; test sets such as WMT's come through tt eval --testset" if name.startswith(("wmt", "newstest")) else ""
        )
        raise DownloadError(
            f"unknown corpus {name!r}; known: {', '.join(SOURCES)}, or opus:NAME (e.g. opus:Europarl){hint}"
        )
    return SOURCES[name]


def base_url_for(src: Source, url: str | None = None, mirror: str | None = None) -> str:
    """--url wins, then a mirror (TT_DATA_MIRROR) laid out as MIRROR/<corpus directory>/<file>, then upstream."""
    base = url or (mirror.rstrip("/") + "/" + src.dirname + "/" if mirror else src.base_url)
    if not base.startswith(("http://", "https://")):
        raise DownloadError(f"{base}: not an http:// or https:// URL")
    return base
