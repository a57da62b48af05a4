"""`tt translate` on real text, end to end through the Typer app and the shipped model (weights/):
sentences, things to copy, glossary, confidence flags, documents, and the --json object the README
documents. Each option has a test here that fails when the option is ignored."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT
from tests.core.text.copy_cases import COPY_CASES
from tt_cli.main import app

runner = CliRunner()
THREE = "Je suis étudiant. Il fait froid ce matin. Le chat dort sur le canapé."
PARAGRAPH = (
    "Je m'appelle Paul. J'ai vingt ans. J'habite à Lyon. Mon père est médecin. Ma mère est professeur. "
    "Nous avons un chien. Il s'appelle Max. Il aime courir. Le soir, nous mangeons ensemble. Je suis heureux."
)


def tt(*args: str, input: str | bytes | None = None):
    """`tt translate` with the shipped model and its defaults (beam 4): the bars are on what users get."""
    return runner.invoke(app, ["translate", *args], input=input)


def ok(*args: str, input: str | bytes | None = None):
    result = tt(*args, input=input)
    assert result.exit_code == 0, result.stderr
    return result


def records(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


# ------------------------------------------------------------------------------------- sentences
def test_the_three_sentence_line_comes_out_as_three_sentences():
    result = ok(THREE)
    # Each sentence comes out as it does on its own, in order, joined by the source's single spaces.
    alone = [
        ok(s).stdout.strip() for s in ("Je suis étudiant.", "Il fait froid ce matin.", "Le chat dort sur le canapé.")
    ]
    assert result.stdout == " ".join(alone) + "\n" and alone[0] == "I am a student."
    [obj] = records(ok("--json", THREE))
    assert [s["source"] for s in obj["sentences"]] == [
        "Je suis étudiant.",
        "Il fait froid ce matin.",
        "Le chat dort sur le canapé.",
    ]


def test_a_ten_sentence_paragraph_loses_none():
    [obj] = records(ok("--json", PARAGRAPH))
    assert len(obj["sentences"]) == 10
    assert all(s["translation"] for s in obj["sentences"])
    assert obj["translation"].count(". ") == 9 and obj["translation"].endswith(".")


def test_no_split_gives_the_model_the_whole_line():
    [obj] = records(ok("--json", "--no-split", THREE))
    assert [s["model_input"] for s in obj["sentences"]] == [THREE]


def test_one_line_out_per_line_in_with_several_sentences_and_blank_lines():
    result = ok(input=f"{THREE}\n\nBonjour. Merci.\n")
    assert len(result.stdout.split("\n")) == 4 and result.stdout.split("\n")[1] == ""


# ------------------------------------------------------------------------------------- copies
def test_a_number_the_best_translation_drops_comes_from_the_beams_next_hypothesis_not_a_second_try():
    """The model's best for this line writes "198"; tt translate takes the beam's next hypothesis, which keeps
    1987, rather than translating the line again with a placeholder for it."""
    [record] = records(ok("--json", "Elle est née en 1987."))
    [sentence] = record["sentences"]
    assert record["translation"] == "She was born in 1987." and record["warnings"] == []
    assert sentence["model_input"] == "Elle est née en 1987." and "1987" in sentence["model_output"]


def test_every_number_url_and_emoji_of_the_copy_list_survives_through_the_cli():
    sources = [src for src, _ in COPY_CASES]
    lines = ok(input="\n".join(sources) + "\n").stdout.splitlines()
    assert len(lines) == len(sources)
    missing = [(src, out, want) for (src, wants), out in zip(COPY_CASES, lines) for want in wants if want not in out]
    assert missing == []


def test_raw_is_the_model_alone_on_the_line_as_given():
    raw = ok("--raw", "--json", THREE)
    [obj] = records(raw)
    assert "sentences" not in obj and obj["token_ids"]  # the model's own record, one for the line
    assert obj["translation"] != ok(THREE).stdout.strip()  # the whole line in one go comes out otherwise


def test_no_protect_hands_numbers_to_the_model():
    [on, off] = [records(ok("--json", *flag, "Elle est née en 1987."))[0] for flag in ((), ("--no-protect",))]
    assert on["translation"] == "She was born in 1987."
    assert [p["source"] for p in on["sentences"][0]["protected"]] == ["1987"]
    assert off["sentences"][0]["protected"] == [] and "1987" in off["sentences"][0]["model_input"]


def test_names_are_kept_unless_no_names():
    line = "Hier, j'ai vu Angela Merkel et Zlatan Ibrahimovic à Berlin."
    [on, off] = [records(ok("--json", *flag, line))[0] for flag in ((), ("--no-names",))]
    assert [p["kind"] for p in on["sentences"][0]["protected"]] == ["name", "name"]
    assert "Angela Merkel" in on["translation"] and "Zlatan Ibrahimovic" in on["translation"]
    assert off["sentences"][0]["protected"] == [] and off["sentences"][0]["model_input"] == line


def test_accents_are_given_back_to_a_line_typed_without_them_unless_no_accents():
    [on, off] = [records(ok("--json", *flag, "je suis etudiant"))[0] for flag in ((), ("--no-accents",))]
    # the model's words (with or without the period the line lacks: the models have done both)
    assert on["sentences"][0]["model_input"] == "je suis étudiant" and on["translation"].rstrip(".") == "I am a student"
    assert off["sentences"][0]["model_input"] == "je suis etudiant" and off["translation"] != on["translation"]


def test_an_inline_element_keeps_its_closing_tag():
    # (models leave a short word after the element out now and then — the model of 2026-11-27 23:00 "maintenant" in
    # the tu-form, session 45's in "Cliquez sur <b>Envoyer</b> maintenant.": the model, not the pipeline; README's
    # table shows such drops. A longer end after the element here.)
    out = ok("Cliquez sur <b>Envoyer</b> pour continuer.").stdout
    assert re.search(r"<b>\w[^<]*</b> to continue\.$", out.strip()), out  # the element, its words, the end after it


@pytest.mark.parametrize(
    ("line", "plain", "markup"),
    [
        (
            "Lisez le [guide](https://exemple.fr/guide) avant de commencer.",
            "Lisez le guide avant de commencer.",
            ["[", "](https://exemple.fr/guide)"],
        ),
        (
            'Le texte est <a href="https://exemple.fr">ici</a>.',
            "Le texte est ici.",
            ['<a href="https://exemple.fr">', "</a>"],
        ),
    ],
)
def test_a_link_of_plain_words_is_translated_in_its_sentence(line, plain, markup):
    # Its text was a placeholder translated alone ("guide" → "a guide", "Read on the [a guide](…)"); the model now
    # reads the sentence as it would without the link, and the link's markup goes round the words aligned to its text.
    [obj] = records(ok("--json", line))
    [sentence] = obj["sentences"]
    assert sentence["model_input"] == plain and all(s["kind"] not in ("link", "element") for s in sentence["protected"])
    out = obj["translation"]
    assert all(out.count(m) == 1 for m in markup) and out.index(markup[0]) < out.index(markup[1]), out
    inside = out[out.index(markup[0]) + len(markup[0]) : out.index(markup[1])]
    assert inside.strip() and inside == inside.strip(), out  # words between the markup, none of its spaces
    without = out.replace(markup[0], "", 1).replace(markup[1], "", 1)
    assert without == ok(plain).stdout.strip()  # the same words as the sentence without its link


def test_a_link_holding_digits_or_a_capitalised_label_is_still_translated_alone():
    # "Envoyer" read inside "Cliquez sur Envoyer maintenant." is copied as a name; alone it is translated.
    for line in ("Voir [la page 3](https://exemple.fr) maintenant.", "Cliquez sur <b>Envoyer</b> pour continuer."):
        [obj] = records(ok("--json", line))
        [sentence] = obj["sentences"]
        assert [s["kind"] for s in sentence["protected"]] in (["link"], ["element"]), sentence


# ------------------------------------------------------------------------------------- glossary
def test_glossary_terms_are_forced_and_reported(tmp_path):
    terms = tmp_path / "terms.tsv"
    # A house term the model would never choose itself (it says "European Parliament").
    terms.write_text("# French\tEnglish\nParlement européen\tStrasbourg Assembly\n", encoding="utf-8")
    line = "Le Parlement européen vote demain."
    assert "Strasbourg Assembly" not in ok(line).stdout
    [obj] = records(ok("--json", "--glossary", str(terms), line))
    assert "Strasbourg Assembly" in obj["translation"]
    [span] = obj["sentences"][0]["protected"]
    assert (span["kind"], span["source"], span["output"]) == ("term", "Parlement européen", "Strasbourg Assembly")


def test_a_glossary_term_is_placed_by_constrained_decoding_where_the_model_puts_it(tmp_path):
    """The French stays in the model's input and the English is forced into its output: it lands after its
    article and inflects (a plural source, a plural term), where a placeholder left "bill a" or "I'm learner"."""
    terms = tmp_path / "terms.tsv"
    terms.write_text("projet de loi\tbill\nétudiant\tlearner\nmédecin\tphysician\n", encoding="utf-8")
    lines = [
        "Le gouvernement a présenté un projet de loi sur les retraites.",
        "Je suis étudiant.",
        "Les médecins dorent.",
    ]
    bill, learner, plural = records(ok("--json", "--glossary", str(terms), *lines))
    for obj, term in ((bill, "bill"), (learner, "learner")):
        sentence = obj["sentences"][0]
        assert sentence["model_input"] == sentence["source"] and obj["warnings"] == []  # no placeholder
        assert f"a {term}" in obj["translation"]  # with its article, as English places it
    assert "physicians" in plural["translation"] and plural["warnings"] == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("chat\tcat\nchien\n", "terms.tsv:2: expected 'French<TAB>English', got 1 tab-separated field(s)"),
        ("chat\tcat\nChat\tkitty\n", "terms.tsv:2: 'Chat' is already defined on line 1"),
        (b"chat\tcat\n\xff\tx\n", "terms.tsv:2: invalid UTF-8 (byte 0xff)"),
    ],
)
def test_a_bad_glossary_is_one_line_with_file_and_line_and_nothing_written(tmp_path, content, message):
    terms, out = tmp_path / "terms.tsv", tmp_path / "en.txt"
    terms.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = tt("--glossary", str(terms), "-o", str(out), "Le chat dort.")
    assert result.exit_code == 1
    assert result.stderr == f"tt: error: {terms.parent}/{message}\n"
    assert not out.exists()


# ------------------------------------------------------------------------------------- confidence
def test_flag_below_names_the_low_confidence_lines_on_stderr():
    lines = "Je suis étudiant.\n\nQwpx zzkt vvrn hjjk ?\n"  # nonsense: 0.46 with session 45's model
    flagged = ok("--flag-below", "0.6", input=lines)
    assert len(flagged.stdout.split("\n")) == 4  # stdout is untouched: one line per line
    named = re.findall(r"tt: low confidence: line (\d+): (0\.\d\d) < 0.6: ", flagged.stderr)
    assert [n for n, _ in named] == ["3"] and float(named[0][1]) < 0.6
    assert "low confidence" not in ok("--flag-below", "0.01", input=lines).stderr
    assert "low confidence" not in ok(input=lines).stderr


def test_json_confidences_sentence_words_and_coverage():
    [obj] = records(ok("--json", "Le chat dort. Il fait froid."))
    first, second = obj["sentences"]
    assert obj["confidence"] == min(first["confidence"], second["confidence"])
    assert obj["coverage"] == min(first["coverage"], second["coverage"]) and 0 < obj["coverage"] <= 1
    assert [w for w, _ in first["word_confidences"]] == first["translation"].split()
    assert all(0 < c <= 1 for _, c in first["word_confidences"])


# ------------------------------------------------------------------------------------- documents
SRT = (
    "1\r\n00:00:01,000 --> 00:00:02,500\r\nJe suis\r\nétudiant.\r\n\r\n"
    "2\r\n00:00:03,000 --> 00:00:04,000\r\n- Tu viens ?\r\n- Oui.\r\n\r\n"
    "3\r\n00:00:05,000 --> 00:00:06,000\r\nElle est née en 1987. Il fait froid.\r\n"
)
MARKDOWN = (
    "# Le chat dort\n\nLe chat dort. Voir [la page](https://exemple.fr/a_(b)) et `ls -l`.\n\n"
    "```sh\necho 'Le chat dort.'\n```\n\n- Il fait froid.\n"
)


def _skeleton(text: str, fmt: str) -> str:
    """The document with each translatable region replaced by a mark: what must survive byte for byte."""
    from core.text.documents import parse_document

    doc = parse_document(text, fmt)
    return doc.render([f"@{i}@" for i in range(len(doc.segments))])


def test_an_srt_file_round_trips_byte_identical_outside_the_text(tmp_path):
    src, out = tmp_path / "film.srt", tmp_path / "film.en.srt"
    src.write_bytes(SRT.encode())
    assert ok("--input", str(src), "--output", str(out)).stdout == ""
    translated = out.read_bytes().decode()
    assert translated.splitlines()[:4] == ["1", "00:00:01,000 --> 00:00:02,500", "I am a", "student."]
    come, yes = ok("Tu viens ?", "Oui.").stdout.splitlines()  # each dialogue line is a segment of its own
    assert f"- {come}\r\n- {yes}\r\n" in translated and "born in 1987. It's cold." in translated
    # Everything but the cues' text is the file's own: numbers, timestamps, dashes, CRLF, blank lines.
    from core.text.documents import parse_document

    doc, back = parse_document(SRT, "srt"), parse_document(translated, "srt")
    assert back.render([f"@{i}@" for i in range(len(back.segments))]) == _skeleton(SRT, "srt")
    assert len(back.segments) == len(doc.segments)


def test_a_markdown_file_round_trips_and_keeps_code_urls_and_link_targets(tmp_path):
    src = tmp_path / "notes.md"
    src.write_text(MARKDOWN, encoding="utf-8")
    out = ok("--input", str(src)).stdout
    title, sentence, item = ok("Le chat dort", "Le chat dort.", "Il fait froid.").stdout.splitlines()
    assert out.startswith(f"# {title.rstrip('.')}\n\n{sentence}") and title.startswith(
        "The cat"
    )  # as plain lines come out
    assert "](https://exemple.fr/a_(b))" in out and "`ls -l`" in out and "[la page]" not in out
    assert "```sh\necho 'Le chat dort.'\n```\n\n- " in out  # the code block untouched
    assert out.endswith(f"- {item}\n")


def test_format_overrides_the_extension_and_text_keeps_lines(tmp_path):
    src = tmp_path / "film.txt"
    src.write_bytes(SRT.encode())
    as_srt = ok("--input", str(src), "--format", "srt").stdout_bytes  # .stdout would turn CRLF into LF
    assert as_srt.startswith(b"1\r\n00:00:01,000 --> 00:00:02,500\r\nI am a\r\nstudent.")
    as_text = ok("--input", str(src)).stdout  # .txt: one output line per input line
    timing = SRT.splitlines()[1]  # 00:00:01,000 --> 00:00:02,500: as text, a line like any other
    assert as_text.count("\n") == SRT.count("\n") and as_text.splitlines()[1] == ok(timing).stdout.strip()
    from_stdin = ok("--format", "srt", input=SRT.encode())
    assert from_stdin.stdout_bytes == as_srt


def test_json_for_a_document_is_one_object_per_segment(tmp_path):
    src = tmp_path / "film.srt"
    src.write_bytes(SRT.encode())
    objs = records(ok("--input", str(src), "--json"))
    assert [o["source"] for o in objs] == [
        "Je suis étudiant.",
        "Tu viens ?",
        "Oui.",
        "Elle est née en 1987. Il fait froid.",
    ]
    assert [o["index"] for o in objs] == [0, 1, 2, 3] and len(objs[3]["sentences"]) == 2


def test_a_bad_srt_file_is_one_line_with_file_and_line_and_nothing_written(tmp_path):
    src, out = tmp_path / "bad.srt", tmp_path / "out.srt"
    src.write_bytes("1\n00:00:01,000 --> 00:00:02,000\nSalut.\n\n2\n00:00:0x --> 00:00:03,000\nÇa va ?\n".encode())
    result = tt("--input", str(src), "-o", str(out))
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"tt: error: {src}:5: not a subtitle block")
    assert not out.exists()


# ------------------------------------------------------------------------------------- usage
@pytest.mark.parametrize(
    "args",
    [
        ["--n-best", "2", "--glossary", "terms.tsv", "x"],
        ["--json", "--attention", "cross", "--flag-below", "0.5", "x"],
        ["--format", "srt", "Le chat."],
    ],
)
def test_options_that_do_not_mix_are_usage_errors(args):
    result = tt(*args)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and result.stderr.startswith("tt: error: ")


# ------------------------------------------------------------------------------------- one pipeline
def test_the_python_api_gives_what_the_cli_gives():
    """In the same precision: the API's default is the exact fp32 model, the CLI's the card's; both precisions."""
    from core import Translator
    from tt_cli.options import default_mode

    lines = [THREE, "", "Elle est née en 1987 🙂", "J'AIME LE CHOCOLAT."]
    card = default_mode(ROOT / "weights", "auto")  # the CLI's default (None: fp32)
    other = "int8" if card is None else None
    for quantize, precision in [(card, None), (other, other or "fp32")]:
        api = Translator(quantize=quantize).translate_text(lines, coverage=True)
        cli = records(ok("--json", *(["--precision", precision] if precision else []), input="\n".join(lines) + "\n"))
        assert [r.to_dict() for r in api] == cli


def test_the_readme_documents_every_json_key_the_cli_writes():
    """The README's JSON table names each key of the line object and of a sentence, and no other."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### `tt translate --json`") :]
    section = section[: section.index("\n## ")]
    documented = set(re.findall(r"^\| `([\w.\[\]]+)` \|", section, re.MULTILINE))
    [obj] = records(ok("--json", "Voir https://exemple.fr. Il fait froid."))
    written = set(obj) | {f"sentences[].{k}" for s in obj["sentences"] for k in s}
    written |= {f"sentences[].protected[].{k}" for s in obj["sentences"] for p in s["protected"] for k in p}
    assert documented == written | {"sentences[].lost[].kind", "sentences[].lost[].source"}


# ------------------------------------------------------------------------------------- entities
# The shipped model learned Multi30k's `&amp;`: alone it writes "A man in front of a bar &amp; grill."
AMPERSAND = "Un homme devant un bar & grill."


@pytest.mark.parametrize("options", [[], ["--raw"], ["--json"], ["--format", "md"], ["--format", "srt"]])
def test_no_entity_the_source_did_not_contain(options):
    text = AMPERSAND if "srt" not in options else f"1\n00:00:01,000 --> 00:00:02,000\n{AMPERSAND}\n"
    out = ok(*options, input=text + "\n").stdout
    assert "&" in out and "&amp" not in out, out
