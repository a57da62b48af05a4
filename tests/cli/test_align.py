"""`tt align` through the real Typer app and the tiny real model: Pharaoh output, empty lines, --json,
--gold, --find-heads and the model's stored rule, and one-line errors for bad files."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from core.align.aer import pharaoh
from core.align.links import AlignRule, align, pair_attention
from tt_cli.main import app

# Rests on the floats of a model trained or decoded here: .ci/run runs it again under a second CPU ISA.
pytestmark = pytest.mark.isa

runner = CliRunner()

PAIRS = [
    ("Je suis étudiant.", "I am a student."),
    ("", ""),
    ("je suis un étudiant .", "i am a student ."),  # lowercased and tokenized, as gold sets come
    ("Il est médecin.", "He is a doctor."),
]


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "a.fr").write_text("".join(s + "\n" for s, _ in PAIRS), encoding="utf-8")
    (tmp_path / "a.en").write_text("".join(t + "\n" for _, t in PAIRS), encoding="utf-8")
    # SENTENCE TARGET SOURCE S|P, 1-based: "Je-I suis-am étudiant-student" sure, "étudiant-a" possible.
    (tmp_path / "a.wa").write_text("1 1 1 S\n1 2 2 S\n1 4 3 S\n1 3 3 P\n", encoding="utf-8")
    return tmp_path


@pytest.fixture()
def tt(tiny_model_dir):
    def invoke(*args: str, model=tiny_model_dir, input: str | None = None):
        return runner.invoke(app, ["align", "--model", str(model), *args], input=input)

    return invoke


def test_pharaoh_lines_match_the_core_alignment(tt, files, tiny_loaded):
    result = tt("--src", str(files / "a.fr"), "--tgt", str(files / "a.en"))
    assert result.exit_code == 0, result.stderr
    expected = [pharaoh((i, j) for i, j, _ in links) for links in align(pair_attention(tiny_loaded, PAIRS))]
    assert result.stdout.splitlines() == expected
    lines = result.stdout.split("\n")
    assert lines[1] == "" and len(lines) == len(PAIRS) + 1  # the empty pair gives an empty line
    # Every target word of a non-empty pair has exactly one link (argmax), indices within the words.
    for (src, tgt), line in zip(PAIRS, lines):
        links = [tuple(map(int, link.split("-"))) for link in line.split()]
        assert sorted(j for _, j in links) == list(range(len(tgt.split())))
        assert all(0 <= i < len(src.split()) for i, _ in links)


def test_tsv_on_stdin_and_json(tt, tiny_loaded):
    text = "".join(f"{s}\t{t}\n" if s else "\n" for s, t in PAIRS)
    plain = tt(input=text)
    assert plain.exit_code == 0, plain.stderr
    result = tt("--json", input=text)
    assert result.exit_code == 0, result.stderr
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["index"] for o in objs] == [0, 1, 2, 3] and objs[1]["links"] == []
    first = objs[0]["links"]
    assert [(x["source"], x["target"]) for x in first] == [
        tuple(map(int, p.split("-"))) for p in plain.stdout.splitlines()[0].split()
    ]
    # One link per target word. The list follows the source words, and which source word the tiny
    # model links each target word to rests on the floats of its training: read it by target word.
    assert [x["target_word"] for x in sorted(first, key=lambda x: x["target"])] == ["I", "am", "a", "student."]
    assert all(x["source_word"] == PAIRS[0][0].split()[x["source"]] and 0 < x["score"] <= 1 for x in first)


def test_gold_prints_the_score_on_stderr(tt, files):
    result = tt(
        "--method",
        "diagonal",
        "--src",
        str(files / "a.fr"),
        "--tgt",
        str(files / "a.en"),
        "--gold",
        str(files / "a.wa"),
    )
    assert result.exit_code == 0, result.stderr
    # Diagonal on pair 1 (3 source, 4 target words): j -> int((j + .5) * 3/4) = 0, 1, 1, 2.
    assert result.stdout.splitlines()[0] == "0-0 1-1 1-2 2-3"
    # Pair 1: A∩S = {0-0, 1-1, 2-3}, A∩P the same (1-2 is not the possible 2-2), |S| = 3, |P| = 4.
    # Pairs 3 and 4 add 5 + 4 links and no gold: AER = 1 - (3 + 3) / (13 + 3), precision 3/13, recall 3/3.
    assert result.stderr == ("tt: AER 62.5  precision 23.1  recall 100.0  (13 links; gold 3 sure, 4 possible)\n")


def test_gold_order_src_tgt_reads_the_columns_the_other_way(tt, files):
    # The same links as a.wa with the source position first: the same score once --gold-order says so.
    (files / "a.sw").write_text("1 1 1 S\n1 2 2 S\n1 3 4 S\n1 3 3 P\n", encoding="utf-8")
    args = ["--method", "diagonal", "--src", str(files / "a.fr"), "--tgt", str(files / "a.en")]
    tgt_first = tt(*args, "--gold", str(files / "a.wa"))
    src_first = tt(*args, "--gold", str(files / "a.sw"), "--gold-order", "src-tgt")
    assert src_first.exit_code == 0, src_first.stderr
    assert src_first.stderr == tgt_first.stderr and "AER 62.5" in src_first.stderr
    # Read in the default order, the swapped file names a source word pair 1 does not have.
    assert tt(*args, "--gold", str(files / "a.sw")).exit_code == 1


def test_find_heads_stores_the_rule_that_align_and_translate_then_use(tt, files, tiny_model_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    result = tt(
        "--find-heads",
        "--src",
        str(files / "a.fr"),
        "--tgt",
        str(files / "a.en"),
        "--gold",
        str(files / "a.wa"),
        model=model,
    )
    assert result.exit_code == 0, result.stderr
    rows = result.stdout.splitlines()
    # layers × (plain, shift, full context) × (mean + 4 heads) × (one way, both ways)
    assert len(rows) == 2 * 3 * 5 * 2 and rows[0].startswith("  1  layer ") and any("full context" in r for r in rows)
    stored = json.loads((model / "alignment.json").read_text(encoding="utf-8"))
    assert stored["format"] == "tt.alignment" and len(stored["ranking"]) == 60
    assert "stored the best rule" in result.stderr
    # Now the default: `tt align` equals the stored rule given explicitly.
    rule = AlignRule(**stored["rule"])
    explicit = [
        "--method",
        "shift" if rule.shift else "full" if rule.full_context else "plain",
        "--layer",
        str(rule.layer + 1),  # options count from 1; alignment.json keeps indices
    ]
    explicit += ["--head", str(rule.head + 1)] if rule.head is not None else []
    explicit += ["--both-ways"] if rule.bidirectional else []
    by_default = tt("--src", str(files / "a.fr"), "--tgt", str(files / "a.en"), model=model)
    given = tt("--src", str(files / "a.fr"), "--tgt", str(files / "a.en"), *explicit, model=model)
    assert by_default.exit_code == 0 and by_default.stdout == given.stdout


def test_reverse_model_symmetrizes(tt, files, tiny_model_dir, tiny_loaded):
    args = ["--src", str(files / "a.fr"), "--tgt", str(files / "a.en")]
    forward = tt(*args).stdout.splitlines()
    reverse = pair_attention(tiny_loaded, [(t, s) for s, t in PAIRS])  # the reverse model reads target→source
    for how in ("intersection", "union"):
        both = tt(*args, "--reverse-model", str(tiny_model_dir), "--symmetrize", how)
        assert both.exit_code == 0, both.stderr
        expected = align(pair_attention(tiny_loaded, PAIRS), reverse=reverse, symmetrization=how)
        assert both.stdout.splitlines() == [pharaoh((i, j) for i, j, _ in links) for links in expected]
        # The reverse direction changes the links here, so an ignored --reverse-model (or --symmetrize) shows.
        assert both.stdout.splitlines() != forward


@pytest.mark.data
def test_the_shipped_models_align_together_as_their_alignment_json_says(tmp_path):
    """Both shipped directions: --find-heads with --reverse-model ranks the ways of combining them and stores
    the best (lower AER than the rule alone); plain `tt align` then combines them, --one-model does not."""
    from core.align.links import read_alignment
    from core.checkpoint import shipped_models
    from tests.conftest import SHARED_DATA

    d = SHARED_DATA / "hansards-align"
    reverse = shipped_models()[("en", "fr")]
    trial = ["--src", str(d / "trial.fr"), "--tgt", str(d / "trial.en")]
    found = runner.invoke(
        app,
        ["align", "--find-heads", *trial, "--gold", str(d / "trial.wa"), "--reverse-model", str(reverse)]
        + ["--save-to", str(tmp_path)],
    )
    assert found.exit_code == 0, found.stderr
    stored = read_alignment(tmp_path)
    assert stored.symmetrize["reverse"] == ["en", "fr"] and stored.symmetrize["aer"] < stored.found_on["aer"]
    assert f"\nwith {reverse} (" in found.stdout and "and both directions combined by" in found.stderr
    shipped = read_alignment(shipped_models()[("fr", "en")]).symmetrize
    assert shipped is not None and stored.symmetrize == shipped  # what the shipped alignment.json holds
    text = trial
    default = runner.invoke(app, ["align", *text])
    alone = runner.invoke(app, ["align", *text, "--one-model"])
    given = runner.invoke(app, ["align", *text, "--reverse-model", str(reverse), "--symmetrize", shipped["method"]])
    assert default.exit_code == alone.exit_code == given.exit_code == 0
    assert default.stdout == given.stdout != alone.stdout
    grown = runner.invoke(app, ["align", *text, "--symmetrize", "union"])  # the stored reverse, another method
    assert grown.exit_code == 0 and grown.stdout not in (default.stdout, alone.stdout)


@pytest.mark.parametrize(
    ("setup", "args", "code", "message"),
    [
        (
            lambda d: (d / "b.en").write_text("one\n", encoding="utf-8"),
            ["--src", "{d}/a.fr", "--tgt", "{d}/b.en"],
            1,
            "tt: error: {d}/b.en has 1 lines but {d}/a.fr has 4; they must be line-aligned\n",
        ),
        (
            lambda d: (d / "long.en").write_text("a\n\nx\n" + "étudiant " * 80 + "\n", encoding="utf-8"),
            ["--src", "{d}/a.fr", "--tgt", "{d}/long.en"],
            1,
            "tt: error: {d}/long.en:4: 400 pieces, longer than the model's 63\n",
        ),
        (
            lambda d: (d / "bad.wa").write_text("1 1 1 S\n1 9 1 S\n", encoding="utf-8"),
            ["--src", "{d}/a.fr", "--tgt", "{d}/a.en", "--gold", "{d}/bad.wa"],
            1,
            "tt: error: {d}/bad.wa:2: link source 1 - target 9, but pair 1 has 3 source and 4 target words "
            "(is the file for these sentences, with the target position first?)\n",
        ),
        (lambda d: None, ["--src", "{d}/a.fr"], 2, "tt: error: give both --src and --tgt, or TSV lines on stdin\n"),
        (lambda d: None, ["--src", "{d}/none.fr", "--tgt", "{d}/a.en"], 1, "tt: error: {d}/none.fr: no such file\n"),
        (
            lambda d: None,
            ["--find-heads", "--src", "{d}/a.fr", "--tgt", "{d}/a.en"],
            2,
            "tt: error: --find-heads needs --gold\n",
        ),
        (
            lambda d: None,
            ["--one-model", "--reverse-model", "{d}", "--src", "{d}/a.fr", "--tgt", "{d}/a.en"],
            2,
            "tt: error: --one-model aligns with the model alone; drop --reverse-model\n",
        ),
        (
            lambda d: None,
            ["--find-heads", "--one-model", "--gold", "{d}/a.wa", "--src", "{d}/a.fr", "--tgt", "{d}/a.en"],
            2,
            "tt: error: --find-heads ranks the rules itself; it takes no --method, --symmetrize, --one-model or --json\n",
        ),
        (
            lambda d: None,
            ["--layer", "5", "--src", "{d}/a.fr", "--tgt", "{d}/a.en"],
            1,
            "tt: error: --layer 5: this model has 2 layers, counted from 1 (1..2, or -1 for the last)\n",
        ),
        (
            lambda d: None,
            ["--layer", "0", "--src", "{d}/a.fr", "--tgt", "{d}/a.en"],
            1,
            "tt: error: --layer 0: this model has 2 layers, counted from 1 (1..2, or -1 for the last)\n",
        ),
    ],
)
def test_bad_input_is_one_line(tt, files, setup, args, code, message):
    setup(files)
    result = tt(*[a.format(d=files) for a in args])
    assert result.exit_code == code
    assert result.stdout == "" and result.stderr == message.format(d=files)


def test_tsv_line_without_a_tab(tt):
    result = tt(input="Je suis\tI am\nsans tabulation\n")
    assert (
        result.exit_code == 1
        and result.stderr == "tt: error: <stdin>:2: expected 'source<TAB>target', got 1 tab-separated field(s)\n"
    )


def test_bad_alignment_json_in_the_model_dir(tt, tiny_model_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    (model / "alignment.json").write_text("[]", encoding="utf-8")
    result = tt(model=model, input="a\tb\n")
    assert result.exit_code == 1 and result.stderr.startswith(
        f"tt: error: {model / 'alignment.json'}: not a valid alignment rule"
    )


def test_threshold_and_no_save(tt, files, tiny_loaded, tiny_model_dir):
    result = tt(
        "--method",
        "plain",
        "--layer",
        "1",  # the first layer: options count from 1
        "--threshold",
        "0.2",
        "--src",
        str(files / "a.fr"),
        "--tgt",
        str(files / "a.en"),
    )
    assert result.exit_code == 0, result.stderr
    expected = align(pair_attention(tiny_loaded, PAIRS), AlignRule(0, None, False, 0.2))
    assert result.stdout.splitlines() == [pharaoh((i, j) for i, j, _ in links) for links in expected]
    ranked = tt(
        "--find-heads",
        "--no-save",
        "--src",
        str(files / "a.fr"),
        "--tgt",
        str(files / "a.en"),
        "--gold",
        str(files / "a.wa"),
    )
    assert ranked.exit_code == 0 and len(ranked.stdout.splitlines()) == 60
    assert not (tiny_model_dir / "alignment.json").exists() and ranked.stderr == ""
