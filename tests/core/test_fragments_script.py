"""scripts/fragments.py: consistent phrase pairs from word links, headings, and the script end to end on real
files (docs/fragments, docs/model.md session 47)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.fragments import headings, label, phrase_pairs  # noqa: E402


def test_phrase_pairs_are_the_consistent_ones():
    src = "j'ai oublié mon mot de passe .".split()
    tgt = "i forgot my password .".split()
    links = {(0, 0), (1, 1), (2, 2), (3, 3), (4, 3), (5, 3), (6, 4)}
    pairs = phrase_pairs(src, tgt, links)
    assert (3, 5, 3, 3) in pairs  # mot de passe → password
    assert (2, 5, 2, 3) in pairs  # mon mot de passe → my password
    assert (3, 4, 3, 3) not in pairs  # "mot de" is not a phrase: password is also linked to "passe"
    assert all(1 <= b - a <= 3 for a, b, _, _ in pairs)  # 2..4 source words
    # a target word inside the run linked from outside the source run breaks it
    crossed = phrase_pairs("a b c".split(), "x y z".split(), {(0, 0), (1, 2), (2, 1)})
    assert (0, 1, 0, 2) not in crossed and (1, 2, 1, 2) in crossed


def test_headings_keep_short_lines_without_a_stop_digits_or_names():
    pairs = [
        ("Ordre du jour", "Agenda"),
        ("Le chat dort.", "The cat sleeps."),
        ("Vote n o 1071", "Division No. 1071"),
        ("M. Peter Adams", "Mr. Peter Adams"),
        ("L'hon. Paul Martin", "Hon. Paul Martin"),
        ("Un très long titre de plus de six mots ici", "A long title"),
    ]
    assert list(headings(pairs)) == [("Ordre du jour", "Agenda")]
    assert list(headings([("QUESTIONS ORALES", "ORAL QUESTIONS"), ("Les mots dans ton souffle,", "The words,")])) == []
    assert list(headings([("La grammaire en est atroce et", "My grammar is bad")])) == []
    assert label("mot de passe") == "Mot de passe"


def test_the_script_writes_phrase_pairs_and_headings_and_leaves_out_the_yardstick(tmp_path):
    fr = ["J'ai oublié mon mot de passe ."] * 3 + ["Heure des votes", "Table des matières"]
    en = ["I forgot my password ."] * 3 + ["Voting time", "Table of contents"]
    (tmp_path / "c.fr").write_text("".join(x + "\n" for x in fr), encoding="utf-8")
    (tmp_path / "c.en").write_text("".join(x + "\n" for x in en), encoding="utf-8")
    one = "0-0 1-1 2-2 3-3 4-3 5-3 6-4"
    (tmp_path / "links").write_text("\n".join([one] * 3 + ["0-0 1-0 2-0", "0-0 1-1 2-2"]) + "\n", encoding="utf-8")
    cmd = [sys.executable, str(ROOT / "scripts" / "fragments.py"), "--data", str(tmp_path / "c")]
    done = subprocess.run(
        [*cmd, "--links", str(tmp_path / "links"), "--out", str(tmp_path / "frag"), "--min-count", "3"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    out = list(
        zip(
            (tmp_path / "frag.fr").read_text(encoding="utf-8").splitlines(),
            (tmp_path / "frag.en").read_text(encoding="utf-8").splitlines(),
        )
    )
    assert ("Mot de passe", "Password") in out and ("Mon mot de passe", "My password") in out
    assert ("Heure des votes", "Voting time") in out
    assert not any(fr == "Table des matières" for fr, _ in out)  # a line of docs/fragments: the yardstick stays unseen
    assert len(out) == len(set(out))
    # too few sightings: no phrase pairs, the heading still
    rare = subprocess.run(
        [*cmd, "--links", str(tmp_path / "links"), "--out", str(tmp_path / "rare"), "--min-count", "4"],
        capture_output=True,
        text=True,
    )
    assert rare.returncode == 0, rare.stderr
    assert (tmp_path / "rare.fr").read_text(encoding="utf-8").splitlines() == ["Heure des votes"]
    # no English holds more than all of its phrase's sightings: no phrase pairs again
    args = ["--links", str(tmp_path / "links"), "--out", str(tmp_path / "shared"), "--min-share", "1.01"]
    assert subprocess.run([*cmd, *args], capture_output=True, text=True).returncode == 0
    assert (tmp_path / "shared.fr").read_text(encoding="utf-8").splitlines() == ["Heure des votes"]
    for links, error in (
        ("0-0\n1-1\n", "holds 2 lines for 5 pairs"),
        ("0-0\nI forgot\n", "short:2: expected Pharaoh links"),
    ):
        (tmp_path / "short").write_text(links, encoding="utf-8")
        args = ["--links", str(tmp_path / "short"), "--out", str(tmp_path / "x")]
        bad = subprocess.run([*cmd, *args], capture_output=True, text=True)
        assert bad.returncode == 1 and error in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert not (tmp_path / "x.fr").exists()
