"""`tt eval`: sacreBLEU scores of the tiny real model on its own fixture, and clear errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.conftest import SHARED_DATA, TINY_TSV
from tt_cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval")
    pairs = [line.split("\t") for line in TINY_TSV.read_text(encoding="utf-8").splitlines()][:16]
    (d / "src.fr").write_text("".join(f"{fr}\n" for fr, _ in pairs), encoding="utf-8")
    (d / "ref.en").write_text("".join(f"{en}\n" for _, en in pairs), encoding="utf-8")
    (d / "short.en").write_text("".join(f"{en}\n" for _, en in pairs[:5]), encoding="utf-8")
    return d


def evaluate(model_dir, *args):
    return runner.invoke(app, ["eval", "--model", str(model_dir), *args])


def test_table_has_bleu_chrf_signatures_and_speed(tiny_model_dir, files):
    result = evaluate(tiny_model_dir, "--src", str(files / "src.fr"), "--ref", str(files / "ref.en"), "--greedy")
    assert result.exit_code == 0, result.stderr
    bleu, chrf, speed = result.stdout.splitlines()
    assert bleu.startswith("BLEU") and "nrefs:1|case:mixed" in bleu and "tok:13a" in bleu
    assert chrf.startswith("chrF") and "nc:6" in chrf
    assert float(bleu.split()[1]) > 50  # the fixture model has learned its training pairs
    assert speed.startswith("16 sentences in ") and "sentences/s, greedy" in speed


def test_json_with_two_references_and_output_file(tiny_model_dir, files, tmp_path):
    out = tmp_path / "hyp.en"
    result = evaluate(
        tiny_model_dir,
        "--src",
        str(files / "src.fr"),
        "--ref",
        str(files / "ref.en"),
        "--ref",
        str(files / "ref.en"),
        "--json",
        "--beam",
        "2",
        "--output",
        str(out),
    )
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["bleu_signature"].startswith("nrefs:2|") and obj["sentences"] == 16
    assert obj["sentences_per_second"] > 0  # the values themselves: test_scores_are_the_hand_computed_ones
    assert obj["decoding"] == {"method": "beam", "beam": 2, "alpha": 0.6}
    hyps = out.read_text(encoding="utf-8").splitlines()
    assert len(hyps) == 16 and hyps[0] == "I am a student."


def test_scores_are_the_hand_computed_ones(tiny_model_dir, tmp_path):
    """Two sentences the fixture model translates exactly as below, scored against references whose
    BLEU and chrF were worked out by hand (sacreBLEU defaults: 13a tokens, chrF n = 6, β = 2)."""
    src, hyp = tmp_path / "src.fr", tmp_path / "hyp.en"
    src.write_text("Je suis étudiant.\nIl est médecin.\n", encoding="utf-8")

    def scores(*refs: str) -> tuple[float, float]:
        ref = tmp_path / "ref.en"
        ref.write_text("".join(f"{r}\n" for r in refs), encoding="utf-8")
        result = evaluate(
            tiny_model_dir, "--src", str(src), "--ref", str(ref), "--greedy", "--json", "--output", str(hyp)
        )
        assert result.exit_code == 0, result.stderr
        assert hyp.read_text(encoding="utf-8") == "I am a student.\nHe is a doctor.\n"  # what was scored
        obj = json.loads(result.stdout)
        return obj["bleu"], obj["chrf"]

    assert scores("I am a student.", "He is a doctor.") == (100.0, 100.0)
    assert scores("xyz", "wvq") == (0.0, 0.0)  # not one word, not one character in common

    # Against "I am a teacher." / "He is a doctor.": 13a tokens "I am a student ." / "He is a doctor .",
    # so n-gram matches over the corpus are 1-grams 4+5 of 5+5, 2-grams 2+4 of 4+4, 3-grams 1+3 of 3+3,
    # 4-grams 0+2 of 2+2; equal lengths, so no brevity penalty. BLEU = (9/10 · 6/8 · 4/6 · 2/4)^(1/4).
    bleu = 100 * (9 / 10 * 6 / 8 * 4 / 6 * 2 / 4) ** 0.25  # 68.87
    # chrF: spaces removed, "Iamastudent." vs "Iamateacher." and "Heisadoctor." twice; character
    # n-grams matching for n = 1..6 (hypothesis and reference have the same counts, so P = R):
    # 19/24, 14/22, 12/20, 10/18, 8/16, 7/14. chrF = F_β of the mean P and the mean R = the mean.
    chrf = 100 * (19 / 24 + 14 / 22 + 12 / 20 + 10 / 18 + 8 / 16 + 7 / 14) / 6  # 59.73
    assert scores("I am a teacher.", "He is a doctor.") == (round(bleu, 2), round(chrf, 2)) == (68.87, 59.73)


def test_reference_line_count_mismatch_is_a_clear_error(tiny_model_dir, files):
    result = evaluate(tiny_model_dir, "--src", str(files / "src.fr"), "--ref", str(files / "short.en"))
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"tt: error: {files / 'short.en'} has 5 lines but {files / 'src.fr'} has 16; they must be line-aligned\n"
    )


def test_missing_files_and_bad_utf8(tiny_model_dir, files, tmp_path):
    result = evaluate(tiny_model_dir, "--src", str(tmp_path / "no.fr"), "--ref", str(files / "ref.en"))
    assert result.exit_code == 1 and result.stderr == f"tt: error: {tmp_path / 'no.fr'}: no such file\n"
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"ok\n\xc3\n")
    result = evaluate(tiny_model_dir, "--src", str(files / "src.fr"), "--ref", str(bad))
    assert result.exit_code == 1 and f"{bad}:2: invalid UTF-8" in result.stderr


@pytest.mark.data
def test_real_test_set_runs_end_to_end(tiny_model_dir, tmp_path):
    # The tiny model knows nothing of Multi30k; this checks real files flow through, not quality.
    src, ref = tmp_path / "t.fr", tmp_path / "t.en"
    for name, path in (("test_2016_flickr.fr", src), ("test_2016_flickr.en", ref)):
        lines = (SHARED_DATA / "multi30k" / name).read_text(encoding="utf-8").splitlines()[:8]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = evaluate(tiny_model_dir, "--src", str(src), "--ref", str(ref), "--greedy", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sentences"] == 8


def test_eval_takes_the_direction(tmp_path):
    """--from/--to pick the shipped model of a direction; one nobody shipped is one line and exit 1."""
    from typer.testing import CliRunner

    from tt_cli.main import app

    src, ref = tmp_path / "s.fr", tmp_path / "r.en"
    src.write_text("Je suis étudiant.\n", encoding="utf-8")
    ref.write_text("I am a student.\n", encoding="utf-8")
    ok = CliRunner().invoke(app, ["eval", "--from", "fr", "--to", "en", "--src", str(src), "--ref", str(ref), "--json"])
    assert ok.exit_code == 0, ok.stderr
    wrong = CliRunner().invoke(app, ["eval", "--to", "de", "--src", str(src), "--ref", str(ref)])
    assert wrong.exit_code == 1 and "no ?→de model is shipped" in wrong.stderr


def test_quantize_scores_the_int8_model_and_says_so(tiny_model_dir, files, monkeypatch):
    """`tt eval --quantize int8` scores the model `tt translate --quantize int8` runs (int8 Linear layers, not the
    packed fp32 ones), and the JSON names the mode; without it, the fp32 model and `null`."""
    import core.model.fast as fast

    converted = []
    real = fast.fast_model
    monkeypatch.setattr(fast, "fast_model", lambda model, mode: converted.append(mode) or real(model, mode))
    args = ["--src", str(files / "src.fr"), "--ref", str(files / "ref.en"), "--greedy", "--json"]
    int8 = evaluate(tiny_model_dir, *args, "--quantize", "int8")
    assert int8.exit_code == 0, int8.stderr
    assert converted == ["int8"] and json.loads(int8.stdout)["quantize"] == "int8"
    fp32 = evaluate(tiny_model_dir, *args)
    assert fp32.exit_code == 0, fp32.stderr
    assert converted == ["int8"] and json.loads(fp32.stdout)["quantize"] is None
