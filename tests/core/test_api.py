"""The Python API (core.api.Translator) and TT_MODEL: the README's example runs as written.

The README example runs in a child process with the shipped weights, from an empty directory, and
its printed output must be the block the README shows under it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from core.api import Result, Translator, translate_text_lines
from core.decode.translate import TranslateOptions, translate_lines
from core.errors import TTError
from tests.conftest import ROOT
from tt_cli.main import app


def readme_example() -> tuple[str, str]:
    """The first python block of the README's "Python API" section, and the text block after it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    shown = re.search(r"```python\n.*?```.*?```text\n(.*?)```", section, re.DOTALL).group(1)
    return code, shown


def test_the_readme_example_runs_as_written_and_prints_what_it_shows(tmp_path):
    code, shown = readme_example()
    env = {k: v for k, v in os.environ.items() if k != "TT_MODEL"}  # the shipped model, as a new user has it
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown


def test_import_core_stays_light():
    code = "import sys, core; assert core.__version__; assert 'torch' not in sys.modules; core.Translator; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"  # torch arrives with core.Translator, not before


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    return Translator(tiny_model_dir, device="cpu", method="greedy")


def test_results_match_translate_lines_and_the_json_keys(translator, tiny_loaded, tiny_model_dir):
    sentences = ["Je suis étudiant.", "", "Il est médecin."]
    results = translator.translate(sentences)
    expected = list(translate_lines(tiny_loaded, sentences, TranslateOptions(method="greedy")))
    assert [r.text for r in results] == [t.text for t in expected] == ["I am a student.", "", "He is a doctor."]
    assert [r.index for r in results] == [0, 1, 2] and all(isinstance(r, Result) for r in results)
    # translate_text's to_dict() has exactly the keys and values of `tt translate --json` for the same line.
    cli = CliRunner().invoke(
        app, ["translate", "--model", str(tiny_model_dir), "--greedy", "--json", "Je suis étudiant."]
    )
    assert cli.exit_code == 0, cli.stderr
    [line] = translator.translate_text(["Je suis étudiant."], coverage=True)
    assert line.to_dict() == json.loads(cli.stdout)
    assert list(line.sentences[0].decoded.token_ids) == results[0].token_ids  # the pipeline runs the same model
    assert json.loads(json.dumps(results[1].to_dict()))["translation"] == ""


def test_options_per_call_and_traces(translator):
    beams = translator.translate(["Le chat dort."], beam=4, method="beam", n_best=2)[0]
    assert len(beams.n_best) == 2 and beams.n_best[0].text == beams.text
    assert len(beams.to_dict()["n_best"]) == 2
    assert beams.steps is None
    with pytest.raises(TTError, match="trace=True"):
        beams.attention()
    traced = translator.translate(["Le chat dort."], trace=True)[0]
    cross = traced.attention("cross")
    assert len(cross) == len(traced.token_logprobs) and len(cross[0]) == len(traced.source_trace.tokens)
    assert all(abs(sum(row) - 1) < 1e-4 for row in cross)  # each output piece's attention sums to 1
    assert len(traced.attention("encoder_self", layer=0, head=1)) == len(traced.source_trace.tokens)
    assert translator.translate(["Le chat dort."])[0].steps is None  # a trace is only for the call that asked


def test_bad_calls_are_clear(translator, tmp_path):
    with pytest.raises(TypeError, match=r"a list of sentences; for one: translate\(\[text\]\)\[0\]"):
        translator.translate("Je suis étudiant.")
    # Messages in the API's own words: keywords, not `tt translate`'s flags.
    with pytest.raises(TTError, match="^beam must be at least 1"):
        translator.translate(["Bonjour."], beam=0, method="beam")
    with pytest.raises(TTError, match=r"n_best needs beam search \(not method='greedy' or method='sample'\)"):
        translator.translate(["Bonjour."], n_best=2, method="greedy")
    with pytest.raises(TTError, match="^batch_size must be at least 1"):
        Translator(translator.path, batch_size=0)
    with pytest.raises(TTError, match="no such model directory"):
        Translator(tmp_path / "nowhere")


def test_quantize_gives_the_quantized_models_translations():
    """quantize="int8" (as `tt translate --quantize int8`): the int8 copy's log-probabilities, not fp32's."""
    from dataclasses import replace

    from core.checkpoint import load_model
    from core.model.fast import fast_model

    shipped = ROOT / "weights"
    int8 = Translator(shipped, quantize="int8", method="greedy")
    assert int8.quantize == "int8"
    got = int8.translate(["Il fait froid ce matin."])[0].token_logprobs
    loaded = load_model(shipped)
    copy = replace(loaded, model=fast_model(loaded.model, "int8"))
    expected = next(translate_lines(copy, ["Il fait froid ce matin."], TranslateOptions(method="greedy")))
    assert got == pytest.approx(expected.token_logprobs, abs=1e-5)
    plain = Translator(shipped, method="greedy").translate(["Il fait froid ce matin."])[0].token_logprobs
    assert got != pytest.approx(plain, abs=2e-4)
    with pytest.raises(TTError, match=r"^quantize='int4': give one of int8, bf16, or None for the fp32 model"):
        Translator(shipped, quantize="int4")


# ------------------------------------------------------------------------------------ TT_MODEL


def test_tt_model_chooses_the_model_of_translate_and_eval(tiny_model_dir, tiny_loaded, tmp_path):
    runner = CliRunner()
    env = {"TT_MODEL": str(tiny_model_dir)}
    result = runner.invoke(app, ["translate", "--greedy", "--json", "Le chien mange."], env=env)
    assert result.exit_code == 0, result.stderr
    expected = next(translate_lines(tiny_loaded, ["Le chien mange."], TranslateOptions(method="greedy")))
    assert json.loads(result.stdout)["sentences"][0]["tokens"] == expected.pieces  # the tiny model's pieces

    (tmp_path / "s.fr").write_text("Le chien mange.\n", encoding="utf-8")
    (tmp_path / "r.en").write_text("The dog is eating.\n", encoding="utf-8")
    result = runner.invoke(
        app, ["eval", "--src", str(tmp_path / "s.fr"), "--ref", str(tmp_path / "r.en"), "--json"], env=env
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["model"] == str(tiny_model_dir)

    # --model wins over TT_MODEL; a TT_MODEL that points nowhere is named in the error.
    nowhere = {"TT_MODEL": str(tmp_path / "nowhere")}
    result = runner.invoke(app, ["translate", "--model", str(tiny_model_dir), "Le chien mange."], env=nowhere)
    assert result.exit_code == 0, result.stderr
    result = runner.invoke(app, ["translate", "Le chien mange."], env=nowhere)
    assert (
        result.exit_code == 1
        and result.stderr.strip()
        == f"tt: error: {tmp_path / 'nowhere'}: no such model directory "
        "(the path is $TT_MODEL's; unset it for the shipped model)"
    )


@pytest.mark.parametrize("command", ["translate", "eval", "inspect"])
def test_help_says_tt_model_is_the_default(command):
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert "$TT_MODEL" in result.stdout


def test_a_translator_takes_the_direction():
    from core import Translator
    from core.errors import ConfigError
    from weights import DIR

    assert Translator(source="fr", target="en").path == DIR
    with pytest.raises(ConfigError, match="no en→de model is shipped"):
        Translator(source="en", target="de")


def test_an_all_caps_line_keeps_the_names_the_models_vocabulary_knows():
    """Through the text pipeline, an ALL-CAPS line is lowered for the model, the names its vocabulary knows
    (PARIS) capitalised again: the shipped model then reads a city, not "paris"; lowering every word loses it."""
    from core.checkpoint import load_model
    from core.text.options import TextOptions

    loaded = load_model()
    line = ["UN ÉTÉ CHAUD À PARIS."]
    options = TranslateOptions(method="greedy")
    [kept] = translate_text_lines(loaded, line, options)
    [lowered] = translate_text_lines(loaded, line, options, TextOptions(proper=lambda word: False))
    assert "PARIS" in kept.text and "PARIS" not in lowered.text


@pytest.mark.parametrize(
    ("model", "line", "loud"),
    [("weights", "C'est TRÈS important.", "VERY"), ("weights/en-fr", "I NEVER said that.", "JAMAIS")],
)
def test_a_word_written_loud_is_translated_and_shouted_again(model, line, loud):
    """Inside a sentence in natural case, a word in capitals the vocabulary spells letter by letter is lowered
    for the model and its translation written in capitals again; left as written (case off), the model drops
    or garbles it."""
    from core.checkpoint import load_model
    from core.text.options import TextOptions

    loaded = load_model(ROOT / model)
    options = TranslateOptions().validate()
    [result] = translate_text_lines(loaded, [line], options)
    [as_written] = translate_text_lines(loaded, [line], options, TextOptions(case=False))
    assert result.sentences[0].model_input == line.replace(line.split()[1], line.split()[1].lower())
    assert loud in result.text.split() and loud not in as_written.text
    assert line.split()[1].lower() not in as_written.sentences[0].model_input  # TRÈS is spelt as TRES there
    assert not [w for w in result.warnings if "(written in capitals)" in w]  # carried: nothing to warn of


def test_a_loud_word_the_translation_does_not_carry_is_named_in_a_warning():
    """A word written in capitals is shouted again in the translation or named in a warning, never lost in
    silence: session 48's fr→en gives "TRÈS chaud aujourd'hui" as "It's hot today" (no "very" to shout). And
    one that no output word links to is found through its neighbours: "Il fait TRÈS chaud." → "It's VERY hot."
    ("very" links to "chaud")."""
    from core.checkpoint import load_model

    loaded = load_model(ROOT / "weights")
    options = TranslateOptions().validate()
    [dropped, linked] = translate_text_lines(loaded, ["TRÈS chaud aujourd'hui", "Il fait TRÈS chaud."], options)
    shouted = [w for w in dropped.text.split() if w.strip(".,!?").isupper() and len(w.strip(".,!?")) > 1]
    named = [w for w in dropped.warnings if "'TRÈS' (written in capitals)" in w]
    assert bool(shouted) != bool(named), (dropped.text, dropped.warnings)
    if "very" not in dropped.text.lower():  # the model of session 48 drops it
        assert named and dropped.warnings == named
    assert "VERY" in linked.text.split() and not linked.warnings, (linked.text, linked.warnings)


def test_a_ticket_number_is_copied_and_a_placeholder_the_model_invents_is_never_shown():
    """The shipped fr→en reads "#" before digits as its placeholders' mark: "Le bogue #4521 est corrigé." came out
    "<ph0>21 is corrected.". A hashtag or a ticket's number is now a span of its own, put back whole; and with
    protection off, the placeholder the model invents is taken out and named in a warning, never shown."""
    from core.checkpoint import load_model
    from core.text.options import TextOptions

    loaded = load_model(ROOT / "weights")
    options = TranslateOptions().validate()
    [fixed, hashtag] = translate_text_lines(
        loaded, ["Le bogue #4521 est corrigé.", "#MeToo a changé le monde."], options
    )
    assert "#4521" in fixed.text.split() and "#MeToo" in hashtag.text.split(), (fixed.text, hashtag.text)
    assert [s.kind for s in fixed.sentences[0].spans] == ["tag"] and "<ph" not in fixed.text + hashtag.text
    [raw] = translate_text_lines(loaded, ["Le bogue #4521 est corrigé."], options, TextOptions(protect=False))
    assert "<ph" in raw.sentences[0].model_output, raw.sentences[0].model_output  # the model's own slip
    assert "<ph" not in raw.text and any("where the source has no span" in w for w in raw.warnings), raw.warnings


def test_a_capital_the_vocabulary_cannot_spell_reaches_the_model_in_lower_case():
    """The shipped fr→en vocabulary cannot spell Œ, and Œ has no accent to take off: "Œuvre d'art." reached the
    model as <unk> and came out " ⁇ fect art.". It is given œ (which it spells), and the translation keeps the
    source's opening capital."""
    from core.checkpoint import load_model
    from core.model.config import UNK_ID

    loaded = load_model(ROOT / "weights")
    assert UNK_ID in loaded.tokenizer.encode("Œ") and UNK_ID not in loaded.tokenizer.encode("œ")  # the case
    [result] = translate_text_lines(loaded, ["Œuvre d'art."], TranslateOptions().validate())
    assert result.sentences[0].model_input == "œuvre d'art."
    assert "⁇" not in result.text and result.text[0].isupper(), result.text


def test_a_name_the_model_loses_is_named_in_a_warning():
    """A name the vocabulary does not hold and the model drops is never lost in silence: the shipped fr→en gives
    "Appeler Éric à 18h." without Éric (and the line was once taken for a headline, which lowered the name)."""
    from core.checkpoint import load_model
    from core.text.options import TextOptions

    loaded = load_model(ROOT / "weights")
    options = TranslateOptions().validate()
    [lost, kept] = translate_text_lines(loaded, ["Appeler Éric à 18h.", "J'ai vu Éric hier."], options)
    assert lost.sentences[0].model_input.startswith("Appeler Éric")  # a name, not a headline's word
    assert "eric" not in lost.text.lower() and "the name 'Éric' is not in the translation" in " ".join(lost.warnings)
    assert "Eric" in kept.text and not kept.warnings, (kept.text, kept.warnings)
    [unchecked] = translate_text_lines(loaded, ["Appeler Éric à 18h."], options, TextOptions(known=lambda w: True))
    assert not [w for w in unchecked.warnings if "the name" in w]
