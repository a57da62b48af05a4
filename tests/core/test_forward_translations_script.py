"""scripts/forward_translations.py: the filter that turns a model's translations into back-translated and forward
training sets, and the corpus slices (docs/model.md, sessions 22–23). Run as a user runs it, on real files."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "forward_translations.py"


def run(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def record(index: int, translation: str, logprobs: list[float], truncated: bool = False) -> str:
    return json.dumps(
        {
            "index": index,
            "translation": translation,
            "logprob": sum(logprobs),
            "token_logprobs": logprobs,
            "truncated": truncated,
        }
    )


SOURCES = [
    "Le chat dort sur le canapé.",  # 0: kept, the most probable per piece
    "Il pleut depuis trois jours à Montréal.",  # 1: kept, less probable
    "Bonjour.",  # 2: output far too long for its source
    "Le conseil a voté la loi hier soir.",  # 3: truncated
    "Nous partons demain matin très tôt.",  # 4: repeats its trigrams
    "La réunion commence à midi.",  # 5: empty output
    "Elle lit un livre.",  # 6: kept, the least probable
]
RECORDS = [
    record(0, "The cat sleeps on the sofa.", [-0.1, -0.1, -0.1]),
    record(1, "It has been raining for three days in Montreal.", [-0.5, -0.5]),
    record(2, "Hello hello and welcome to all of you here today.", [-0.1]),
    record(3, "The council voted the law last", [-0.1], truncated=True),
    record(4, "We leave we leave we leave we leave early.", [-0.2]),
    record(5, "  ", [-0.1]),
    record(6, "She reads a book.", [-2.0, -2.0]),
]


def test_filter_writes_every_passing_output_as_back_translation_and_the_best_share_as_forward_pairs(tmp_path):
    src, jsonl = tmp_path / "src.fr", tmp_path / "out.jsonl"
    src.write_text("".join(s + "\n" for s in SOURCES), encoding="utf-8")
    jsonl.write_text("".join(r + "\n" for r in RECORDS), encoding="utf-8")
    done = run("filter", src, jsonl, "fr", "en", 0.67, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "7 translations: 3 back-translated pairs, 2 forward pairs" in done.stdout

    def lines(name: str) -> list[str]:
        return (tmp_path / name).read_text(encoding="utf-8").splitlines()

    # best mean log-probability per piece first: -0.1, -0.5, -2.0
    assert lines("bt.fr") == [SOURCES[0], SOURCES[1], SOURCES[6]]
    assert lines("bt.en") == [
        "<BT> The cat sleeps on the sofa.",
        "<BT> It has been raining for three days in Montreal.",
        "<BT> She reads a book.",
    ]
    assert lines("ft.fr") == [SOURCES[0], SOURCES[1]]
    assert lines("ft.en") == ["The cat sleeps on the sofa.", "It has been raining for three days in Montreal."]


def test_filter_drops_a_character_run_the_source_does_not_have(tmp_path):
    """A back-translation that ran on into a rule of dashes (session 32's French news, 38 of 19,940) is dropped; a
    run the source has is the source's own and stays."""
    sources = ["Le bilan de la crise.", "Titre ----------", "Elle lit un livre."]
    records = [
        record(0, "The toll of the crisis -------------------", [-0.1]),
        record(1, "Title ----------", [-0.1]),
        record(2, "She reads a book.", [-0.1]),
    ]
    src, jsonl = tmp_path / "src.fr", tmp_path / "out.jsonl"
    src.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    jsonl.write_text("".join(r + "\n" for r in records), encoding="utf-8")
    done = run("filter", src, jsonl, "fr", "en", 1.0, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "bt.fr").read_text(encoding="utf-8").splitlines() == sources[1:]


def test_filter_keep_decides_the_forward_share(tmp_path):
    src, jsonl = tmp_path / "src.fr", tmp_path / "out.jsonl"
    src.write_text("".join(s + "\n" for s in SOURCES), encoding="utf-8")
    jsonl.write_text("".join(r + "\n" for r in RECORDS), encoding="utf-8")
    assert run("filter", src, jsonl, "fr", "en", 1.0, tmp_path).returncode == 0
    assert len((tmp_path / "ft.en").read_text(encoding="utf-8").splitlines()) == 3
    bad = run("filter", src, jsonl, "fr", "en", 70, tmp_path)
    assert bad.returncode != 0 and "keep is a share between 0 and 1, got 70" in bad.stderr


def test_slice_takes_the_same_pairs_from_both_sides_in_corpus_order(tmp_path):
    corpus = tmp_path / "corp"
    for lang in ("fr", "en"):
        with lzma.open(f"{corpus}.{lang}.xz", "wt", encoding="utf-8") as f:
            f.write("".join(f"{lang} {i}\n" for i in range(100)))
    out = tmp_path / "cut"
    assert run("slice", corpus, out, 10, 7).returncode == 0
    fr = Path(f"{out}.fr").read_text(encoding="utf-8").splitlines()
    en = Path(f"{out}.en").read_text(encoding="utf-8").splitlines()
    numbers = [int(line.split()[1]) for line in fr]
    assert len(fr) == 10 and numbers == sorted(numbers) and en == [f"en {i}" for i in numbers]
    other = tmp_path / "other"
    assert run("slice", corpus, other, 10, 8).returncode == 0  # the seed decides the sample
    assert Path(f"{other}.fr").read_text(encoding="utf-8").splitlines() != fr


def test_slice_refuses_sides_of_different_lengths(tmp_path):
    corpus = tmp_path / "corp"
    for lang, n in (("fr", 5), ("en", 4)):
        with lzma.open(f"{corpus}.{lang}.xz", "wt", encoding="utf-8") as f:
            f.write("x\n" * n)
    done = run("slice", corpus, tmp_path / "cut", 2, 1)
    assert done.returncode != 0 and "5 French lines but 4 English" in done.stderr


def test_news_takes_a_range_of_the_fixed_shuffle(tmp_path):
    mono = tmp_path / "mono"
    mono.mkdir()
    with lzma.open(mono / "news.fr.xz", "wt", encoding="utf-8") as f:
        f.write("".join(f"phrase {i}\n" for i in range(50)))
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import forward_translations
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    every = forward_translations.news_lines("fr", 1, 50, mono)
    assert sorted(every) == sorted(f"phrase {i}" for i in range(50)) and every != [f"phrase {i}" for i in range(50)]
    assert forward_translations.news_lines("fr", 11, 20, mono) == every[10:20]
    bad = run("news", "fr", 20, 10, tmp_path / "x")
    assert bad.returncode != 0 and "first ≤ last, got 20..10" in bad.stderr


def test_filter_reads_a_cut_run_and_its_resumption_as_one(tmp_path):
    """A generation cut by a session's stop is resumed on the lines after its last whole record (`tail -n +N`),
    whose records number from 0 again: files given in turn continue one numbering and the cut record is dropped,
    so the sets are the ones a whole run gives. The same records pasted into one file would pair outputs with the
    wrong sources (session 30 did, by hand): an index that does not move forward is an error naming file:line."""
    src = tmp_path / "src.fr"
    src.write_text("".join(s + "\n" for s in SOURCES), encoding="utf-8")
    first, rest, pasted = tmp_path / "out1.jsonl", tmp_path / "out2.jsonl", tmp_path / "pasted.jsonl"
    first.write_text(RECORDS[0] + "\n" + RECORDS[1][:25], encoding="utf-8")  # stopped while writing record 1
    resumed = [json.loads(r) for r in RECORDS[1:]]  # sources 2..7 translated again, numbered from 0
    rest.write_text("".join(json.dumps({**r, "index": r["index"] - 1}) + "\n" for r in resumed), encoding="utf-8")
    done = run("filter", src, first, rest, "fr", "en", 0.67, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{first}: its last record was cut short, dropped" in done.stderr
    assert "7 translations: 3 back-translated pairs, 2 forward pairs" in done.stdout
    assert (tmp_path / "bt.fr").read_text(encoding="utf-8").splitlines() == [SOURCES[0], SOURCES[1], SOURCES[6]]
    assert (tmp_path / "ft.en").read_text(encoding="utf-8").splitlines()[1] == json.loads(RECORDS[1])["translation"]

    pasted.write_text(RECORDS[0] + "\n" + rest.read_text(encoding="utf-8"), encoding="utf-8")
    wrong = run("filter", src, pasted, "fr", "en", 0.67, tmp_path)
    assert wrong.returncode != 0
    assert f"{pasted}:2: index 0 (source line 1) is not after the record before" in wrong.stderr
    past = run("filter", src, first, rest, rest, "fr", "en", 0.67, tmp_path)
    assert past.returncode != 0 and f"{rest}:1: index 0 (source line 8) is past the 7 source lines" in past.stderr
