"""The precision `tt translate` and `tt serve` run a model in when --precision is not given: its card's choice
(core.card.default_precision, written by scripts/ship_weights.py: int8 for a model whose test sets all stay
within 0.3 BLEU of fp32 in int8, fp32 for one whose sets do not — copies of the shipped models with their cards'
verdict set stand for each, whatever the shipped cards chose), fp32 wherever exact numbers are shown;
--precision (and its older spelling --quantize) overrides it. tt serve's side: test_warm.py and
test_serve_directions.py (what it announces and reports per direction)."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from core.card import default_precision, quantize_mode
from core.decode.translate import TranslateOptions
from core.model.fast import linear_kind
from tests.conftest import ROOT
from tt_cli.main import app
from tt_cli.translate_job import TranslateJob

FR_EN, EN_FR = ROOT / "weights", ROOT / "weights" / "en-fr"
FRENCH = ["Il fait froid ce matin.", "Le gouvernement a annoncé mardi une hausse des impôts."]
ENGLISH = ["It is cold this morning.", "The government announced a tax increase on Tuesday."]


def logprobs(args: list[str], lines: list[str]) -> list[list[float]]:
    """Each line's token log-probabilities from `tt translate --raw --json ARGS LINES`, translated here."""
    result = CliRunner().invoke(app, ["translate", "--raw", "--json", "--local", *args, *lines])
    assert result.exit_code == 0, result.stderr
    return [json.loads(line)["token_logprobs"] for line in result.stdout.splitlines()]


def test_each_shipped_card_chooses_by_the_rule_on_its_own_figures():
    for directory in (FR_EN, EN_FR):
        card = json.loads((directory / "card.json").read_text(encoding="utf-8"))["precision"]
        within = all(s["int8"] - s["fp32"] >= -card["tolerance"] for s in card["sets"].values())
        # the rule of docs/precision.md, on the card's own figures
        assert default_precision(directory) == card["default"] == ("int8" if within else "fp32")


def card_choosing(tmp_path_factory, model, precision: str):
    """A shipped model with a card that chose `precision` (its files linked, its card's verdict set)."""
    tmp_path = tmp_path_factory.mktemp(f"{model.name}-{precision}")
    for path in model.iterdir():
        if path.is_file() and path.name != "card.json":
            (tmp_path / path.name).symlink_to(path)
    card = json.loads((model / "card.json").read_text(encoding="utf-8"))
    card["precision"]["default"] = precision
    (tmp_path / "card.json").write_text(json.dumps(card), encoding="utf-8")
    return tmp_path


@pytest.fixture
def fp32_card(tmp_path_factory):
    """The en→fr model with a card that chose fp32."""
    return card_choosing(tmp_path_factory, EN_FR, "fp32")


@pytest.fixture
def int8_card(tmp_path_factory):
    """The fr→en model with a card that chose int8."""
    return card_choosing(tmp_path_factory, FR_EN, "int8")


def test_fr_en_translates_in_its_cards_precision_unless_another_is_asked():
    default, int8, fp32 = (logprobs(args, FRENCH) for args in ([], ["--precision", "int8"], ["--precision", "fp32"]))
    assert int8 != fp32
    assert default == {"int8": int8, "fp32": fp32}[default_precision(FR_EN)]
    assert logprobs(["--quantize", "fp32"], FRENCH) == fp32  # the option's older name


def test_a_card_that_chose_int8_translates_in_int8_unless_fp32_is_asked(int8_card):
    default, int8, fp32 = (
        logprobs(["--model", str(int8_card), *a], FRENCH)
        for a in ([], ["--precision", "int8"], ["--precision", "fp32"])
    )
    assert default == int8 and default != fp32


def test_en_fr_translates_in_its_cards_precision_unless_another_is_asked():
    direction = ["--from", "en", "--to", "fr"]
    default, int8, fp32 = (
        logprobs(direction + a, ENGLISH) for a in ([], ["--precision", "int8"], ["--precision", "fp32"])
    )
    assert int8 != fp32
    assert default == {"int8": int8, "fp32": fp32}[default_precision(EN_FR)]


def test_a_card_that_chose_fp32_translates_in_fp32_unless_int8_is_asked(fp32_card):
    model = ["--model", str(fp32_card), "--from", "en", "--to", "fr"]
    default, int8, fp32 = (logprobs(model + a, ENGLISH) for a in ([], ["--precision", "int8"], ["--precision", "fp32"]))
    assert default == fp32 and default != int8


@pytest.mark.parametrize(
    "asked",
    [
        {"show_attention": True},
        {"attribution": "ixg"},
        {"trace_file": ROOT / "trace.safetensors"},
        {"attention_figure": ROOT / "a.png"},
        {"distribution_figure": ROOT / "d.png"},
    ],
    ids=["show-attention", "attribution", "trace", "attention-figure", "distribution-figure"],
)
def test_what_shows_the_models_own_numbers_runs_fp32_unless_asked(asked, int8_card):
    assert TranslateJob(model=int8_card, device="cpu").precision_mode() == "int8"
    assert TranslateJob(model=int8_card, device="cpu", **asked).precision_mode() is None
    assert TranslateJob(model=int8_card, device="cpu", quantize="int8", **asked).precision_mode() == "int8"


def test_explicit_precisions_and_models_without_a_choice(tmp_path, fp32_card):
    assert TranslateJob(model=FR_EN, quantize="fp32").precision_mode() is None
    assert TranslateJob(model=EN_FR, quantize="bf16").precision_mode() == "bf16"
    assert TranslateJob(model=fp32_card, device="cpu").precision_mode() is None
    assert TranslateJob(model=fp32_card, device="cpu", quantize="int8").precision_mode() == "int8"
    assert default_precision(tmp_path) == "fp32"  # no card (a run, a checkpoint)
    (tmp_path / "card.json").write_text(json.dumps({"precision": {"default": "int4"}}), encoding="utf-8")
    assert default_precision(tmp_path) == "fp32"  # a value tt does not know
    (tmp_path / "card.json").write_text("{not json", encoding="utf-8")
    assert default_precision(tmp_path) == "fp32"
    (tmp_path / "card.json").write_text(json.dumps({"precision": {"default": "int8"}}), encoding="utf-8")
    assert quantize_mode(None, tmp_path) == "int8" and quantize_mode("fp32", tmp_path) is None


def test_eval_scores_fp32_unless_asked(tmp_path):
    """tt eval measures the cards' fp32 figures: it never takes the card's default."""
    src, ref = tmp_path / "src.fr", tmp_path / "ref.en"
    src.write_text("\n".join(FRENCH) + "\n", encoding="utf-8")
    ref.write_text("\n".join(ENGLISH) + "\n", encoding="utf-8")
    runs = {}
    for name, args in [("default", []), ("int8", ["--precision", "int8"])]:
        result = CliRunner().invoke(app, ["eval", "--src", str(src), "--ref", str(ref), "--json", *args])
        assert result.exit_code == 0, result.stderr
        runs[name] = json.loads(result.stdout)["quantize"]
    assert runs == {"default": None, "int8": "int8"}


def prompt_logprobs(monkeypatch, capsys, model, precision: str | None) -> tuple[list[float], object]:
    """The token log-probs `tt translate -I --json` prints for FRENCH[1] (the session built as the command builds it,
    its loop replaced by one line), and the session."""
    from tt_cli import repl

    monkeypatch.setenv("TT_SERVER", "")  # translate here, not through a server a test beside this one started
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    started = []
    monkeypatch.setattr(repl.Repl, "run", lambda self: started.append(self))
    repl.interactive(model, "auto", TranslateOptions(), json_out=True, precision=precision)
    [session] = started
    capsys.readouterr()
    session.handle(FRENCH[1])
    [sentence] = json.loads(capsys.readouterr().out)["sentences"]
    return sentence["token_logprobs"], session


def test_the_prompt_translates_in_the_commands_precision_and_shows_attention_in_fp32(monkeypatch, capsys, int8_card):
    """`tt translate -I`: lines in --precision, else the card's (as `tt translate` prints them); :attention and
    :inspect read the fp32 model."""
    line = {a: logprobs(["--model", str(int8_card), *a], [FRENCH[1]])[0] for a in ((), ("--precision", "fp32"))}
    assert line[()] != line[("--precision", "fp32")]  # the card's int8
    for precision, expected in ((None, ()), ("fp32", ("--precision", "fp32")), ("int8", ())):
        shown, session = prompt_logprobs(monkeypatch, capsys, int8_card, precision)
        assert shown == line[expected], precision
        exact = session.loaded
        assert not any(linear_kind(m) == "int8" for m in exact.model.modules())
        assert (exact is session.translating) == (precision == "fp32")
