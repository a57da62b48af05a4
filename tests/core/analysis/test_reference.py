"""Reference mode on the tiny real model: ranks, divergence and file summaries, core and CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from core.analysis.reference import RefComparison, RefStep, compare_pairs, summarize
from core.decode.trace import trace_steps
from core.decode.translate import TranslateOptions, translate_lines
from tt_cli.main import app

# Rests on the floats of a model trained or decoded here: .ci/run runs it again under a second CPU ISA.
pytestmark = pytest.mark.isa

PAIRS = [
    ("Je suis étudiant.", "I am a student."),
    ("Le chat dort.", "The cat sleeps."),  # the model says "is sleeping": it must leave here
    ("Il fait froid.", "It is very cold today."),
    ("La voiture est rouge.", "The car is red."),
]


@pytest.fixture(scope="module")
def comparisons(tiny_loaded):
    return compare_pairs(tiny_loaded, PAIRS)


def test_rank_one_exactly_where_the_model_agrees(comparisons):
    for c in comparisons:
        for s in c.steps:
            assert (s.ref_rank == 1) == s.agrees
            assert s.ref_prob <= s.model_prob + 1e-6


def test_first_divergence_is_where_greedy_output_leaves_the_reference(tiny_loaded, comparisons):
    tok = tiny_loaded.tokenizer
    greedy = [
        t.token_ids for t in translate_lines(tiny_loaded, [p[0] for p in PAIRS], TranslateOptions(method="greedy"))
    ]
    for c, out in zip(comparisons, greedy):
        ref = tok.encode(c.reference) + [tiny_loaded.cfg.eos_id]
        out = out + [tiny_loaded.cfg.eos_id]
        assert c.output == tok.decode(out[:-1])
        if c.first_divergence is None:
            assert out == ref
        else:
            t = c.first_divergence
            assert out[:t] == ref[:t]  # the same prefix up to the divergence...
            assert out[t] == c.steps[t].model_token != ref[t]  # ...where greedy picks the model's choice
    assert comparisons[0].first_divergence is None
    assert comparisons[1].first_divergence is not None


def test_reference_logprob_matches_the_trace_of_one_sentence(tiny_loaded, comparisons):
    tok = tiny_loaded.tokenizer
    for c in comparisons:
        ref = tok.encode(c.reference) + [tiny_loaded.cfg.eos_id]
        _, steps = trace_steps(tiny_loaded, tok.encode(c.source) + [tiny_loaded.cfg.eos_id], ref)
        assert c.ref_logprob == pytest.approx(sum(s.logprob for s in steps), abs=1e-4)
        assert [s.ref_prob for s in c.steps] == pytest.approx([2.718281828**s.logprob for s in steps], abs=1e-4)


def test_batching_does_not_change_the_result(tiny_loaded, comparisons):
    one_by_one = [compare_pairs(tiny_loaded, [p])[0] for p in PAIRS]
    for a, b in zip(one_by_one, comparisons):
        assert a.first_divergence == b.first_divergence
        assert a.ref_logprob == pytest.approx(b.ref_logprob, abs=1e-4)


def test_summary_counts_divergences(comparisons):
    s = summarize(comparisons)
    diverged = [c for c in comparisons if c.first_divergence is not None]
    assert s.sentences == 4 and s.diverged == len(diverged)
    assert sum(s.by_position.values()) == sum(s.by_relative_position.values()) == len(diverged)
    assert sum(n for _, n in s.ref_pieces) == len(diverged)
    assert 0 < s.top1_agreement < 1


def test_cli_ref_json_on_files(tiny_model_dir, tmp_path):
    src, ref = tmp_path / "s.fr", tmp_path / "r.en"
    src.write_text("".join(p[0] + "\n" for p in PAIRS), encoding="utf-8")
    ref.write_text("".join(p[1] + "\n" for p in PAIRS), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["analyze", "ref", "--model", str(tiny_model_dir), "--src", str(src), "--ref", str(ref), "--json"]
    )
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["summary"]["sentences"] == 4
    assert obj["sentences"][1]["first_divergence"] is not None
    first = obj["sentences"][0]
    assert "".join(s["ref_piece"] for s in first["steps"][:-1]).replace("▁", " ").strip() == "I am a student."
    assert first["steps"][-1]["ref_piece"] == "</s>" and first["first_divergence"] is None


def test_cli_ref_one_pair_table_and_usage_errors(tiny_model_dir, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["analyze", "ref", "--model", str(tiny_model_dir), "Le chat dort.", "The cat sleeps."])
    assert result.exit_code == 0, result.stderr
    assert "first divergence: step" in result.stdout
    only_src = runner.invoke(app, ["analyze", "ref", "--src", str(tmp_path / "x")])
    assert only_src.exit_code == 2 and "--src and --ref go together" in only_src.stderr
    missing = runner.invoke(
        app,
        [
            "analyze",
            "ref",
            "--model",
            str(tiny_model_dir),
            "--src",
            str(tmp_path / "nope.fr"),
            "--ref",
            str(tmp_path / "nope.en"),
        ],
    )
    assert missing.exit_code == 1 and missing.stderr.startswith("tt: error:") and len(missing.stderr.splitlines()) == 1


def _step(index: int, ref: str, model: str) -> RefStep:
    return RefStep(index, 0 if ref == model else 1, ref, 1 if ref == model else 2, 0.5, 0, model, 0.5)


def test_summary_counts_each_first_divergence_at_its_own_step():
    # By hand: "I am a student ." left at step index 2 ("a" → "the"), "The cat sleeps ." at index 0.
    first = RefComparison(
        "s",
        "I am a student.",
        "",
        [],
        [_step(0, "▁I", "▁I"), _step(1, "▁am", "▁am"), _step(2, "▁a", "▁the"), _step(3, "▁student", "▁pupil")],
        2,
        -1.0,
    )
    second = RefComparison("s", "The cat sleeps.", "", [], [_step(0, "▁The", "▁A"), _step(1, "▁cat", "▁cat")], 0, -1.0)
    s = summarize([first, second])
    assert s.by_position == {0: 1, 2: 1}  # indices; one step late would say {1: 1, 3: 1}
    assert s.ref_pieces == [("▁a", 1), ("▁The", 1)] and s.swaps == [("▁a", "▁the", 1), ("▁The", "▁A", 1)]
    assert s.by_relative_position == {"0-20%": 1, "40-60%": 1}


def test_cli_ref_counts_steps_from_one_as_tt_inspect_does(tiny_model_dir, comparisons):
    c = comparisons[1]  # "Le chat dort.": the model leaves the reference
    result = CliRunner().invoke(app, ["analyze", "ref", "--model", str(tiny_model_dir), *PAIRS[1]])
    assert result.exit_code == 0, result.stderr
    assert f"first divergence: step {c.first_divergence + 1} " in result.stdout
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[0]) for r in rows] == list(range(1, len(c.steps) + 1))
