"""scripts/align_by_length.py: joined pairs keep every word and link, and the script runs end to end."""

from __future__ import annotations

import subprocess
import sys

from core.data.readers import read_corpus
from scripts.align_by_length import joined
from tests.conftest import ROOT, TINY_TSV


def test_joined_pairs_move_their_links():
    pairs = [("a b", "x y z"), ("c", "w"), ("d e", "v u")]
    links = [{(0, 0), (1, 2)}, {(0, 0)}, {(1, 0)}]
    ((pair, gold),) = joined(pairs, links, 3)
    assert pair == ("a b c d e", "x y z w v u")
    assert gold.sure == gold.possible == {(0, 0), (1, 2), (2, 3), (4, 4)}
    assert [p for p, _ in joined(pairs, links, 2)] == [("a b c", "x y z w")]  # a short last group is left out


def test_the_script_prints_one_row_per_length(tiny_model_dir, tmp_path):
    pairs = list(read_corpus(TINY_TSV))
    diagonal = [" ".join(f"{i}-{i}" for i in range(min(len(p.src.split()), len(p.tgt.split())))) for p in pairs]
    (tmp_path / "links").write_text("\n".join(diagonal) + "\n", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/align_by_length.py"),
            "--model",
            str(tiny_model_dir),
            "--data",
            str(TINY_TSV),
            "--links",
            str(tmp_path / "links"),
            "--lines",
            "1-20",
            "--join",
            "1,4",
            "--layer",
            "1",
            "--head",
            "2",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = result.stdout.splitlines()
    assert "layer 1, head 2, plain, argmax" in rows[0] and len(rows) == 4
    assert [r.split()[0] for r in rows[2:]] == ["1", "4"] and float(rows[3].split()[1]) > float(rows[2].split()[1])
