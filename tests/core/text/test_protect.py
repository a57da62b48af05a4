"""Protected spans: found, replaced, restored — and a lost or repeated placeholder never goes unseen."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.data.tokenizer import Tokenizer
from core.text.options import learned_scheme
from core.text.protect import SCHEMES, find_spans, protect, restore, unknown_characters

SPM = Path(__file__).resolve().parents[3] / "weights" / "spm.model"


@pytest.fixture(scope="module")
def unknown():
    return unknown_characters(Tokenizer.load(SPM))


@pytest.mark.parametrize(
    ("text", "kind", "original", "output"),
    [
        ("Elle est née en 1987.", "number", "1987", "1987"),
        ("Le train part à 14 h 35.", "time", "14 h 35", "14:35"),
        ("Départ 14h35 précises.", "time", "14h35", "14:35"),
        ("Il a payé 25,50 euros.", "amount", "25,50 euros", "25.50 euros"),
        ("Ils sont 1 000 000.", "number", "1 000 000", "1,000,000"),
        ("Voir https://exemple.fr/a?b=1, puis partir.", "url", "https://exemple.fr/a?b=1", None),
        ("Écris à jean.dupont@exemple.fr demain.", "email", "jean.dupont@exemple.fr", None),
        ("Le 12/03/2024 au matin.", "date", "12/03/2024", None),
        ("Tape `ls -l` ici.", "code", "`ls -l`", None),
        ("Clique <b>ici</b>.", "element", "<b>ici</b>", None),
        ('Voir <a href="x.html">la page</a>.', "element", '<a href="x.html">la page</a>', None),
        ("Une ligne<br/>puis <b>une <i>autre</i>.", "markup", "<br/>", None),
        ("Le bogue #4521 est corrigé.", "tag", "#4521", None),
        ("#MeToo a changé le monde.", "tag", "#MeToo", None),
    ],
)
def test_find_spans(text, kind, original, output):
    spans = find_spans(text)
    assert (spans[0].kind, spans[0].original, spans[0].output) == (kind, original, output or original)
    assert text[spans[0].start : spans[0].end] == original


@pytest.mark.parametrize("text", ["C# est un langage.", "# Titre", "Voir https://x.fr/page#suite ici.", "&#233;"])
def test_a_hash_inside_a_word_a_heading_or_a_url_is_no_tag(text):
    assert "tag" not in [s.kind for s in find_spans(text)]


def test_single_digits_are_left_to_the_model():
    assert find_spans("J'ai 3 chats.") == []


def test_unknown_characters_use_the_shipped_vocabulary(unknown):
    spans = find_spans("Il habite à Москва 🙂, voilà.", unknown=unknown)
    assert [(s.kind, s.original) for s in spans] == [("unknown", "Москва"), ("unknown", "🙂")]
    assert find_spans("Le chat dort.", unknown=unknown) == []


def test_glossary_terms_win_and_match_whole_words_case_insensitively():
    terms = [("Parlement européen", "European Parliament"), ("chat", "cat")]
    spans = find_spans("Le parlement européen aime les chats, le chaton et le chat.", terms=terms)
    assert [(s.kind, s.original, s.output) for s in spans] == [
        ("term", "parlement européen", "European Parliament"),
        ("term", "chats", "cat"),  # a plural is the term (constrained decoding may write "cats")
        ("term", "chat", "cat"),
    ]


def test_kinds_limits_what_is_found():
    text = "En 1987, voir https://exemple.fr."
    assert [s.kind for s in find_spans(text, kinds=["url"])] == ["url"]


def test_protect_and_restore_round_trip():
    text = "Elle est née en 1987 à Boston, voir https://exemple.fr."
    protected = protect(text, find_spans(text), SCHEMES["names"])
    assert "1987" not in protected.text and "https" not in protected.text
    assert "Boston" in protected.text  # a placeholder already in the text is not used
    assert restore(protected.text, protected).text == text


def test_emoji_at_the_edges_are_set_aside(unknown):
    text = "🙂 J'adore ce film 🎬 !"
    protected = protect(text, find_spans(text, unknown=unknown))
    assert protected.text == "J'adore ce film !" and protected.spans == []
    assert restore("I love this movie!", protected).text == "🙂 I love this movie 🎬!"


def test_a_dropped_placeholder_is_reported():
    text = "Elle est née en 1987."
    protected = protect(text, find_spans(text))
    restored = restore("She was born.", protected)
    assert restored.text == "She was born."
    assert [s.original for s in restored.lost] == ["1987"]
    assert "dropped number '1987'" in restored.warnings[0]


def test_a_learned_placeholder_standing_for_no_span_is_taken_out_and_named():
    """The model may write one of its placeholders where the source has none (it read "#4521" as one: "<ph0>21"):
    taken out, never shown, and named; the sentence's own placeholders are restored as ever."""
    learned = tuple(f"<ph{i}>" for i in range(10))
    text = "Le train 6543 part le 2024-05-17."
    protected = protect(text, find_spans(text), SCHEMES["copy"])  # the number copied, the date a word
    ph = protected.spans[1].placeholder
    restored = restore(f"<ph0> The train 6543 leaves on {ph} <ph3>.", protected, learned)
    assert restored.text == "The train 6543 leaves on 2024-05-17."
    assert restored.strays == ["<ph0>", "<ph3>"] and restored.lost == []
    assert "placeholder '<ph0>' where the source has no span" in restored.warnings[0]
    assert restore(f"<ph0> The train 6543 leaves on {ph}.", protected).text.startswith("<ph0>")  # not asked: kept
    own = protect(text, find_spans(text), learned_scheme(learned))  # <ph0> is the date's own here
    assert restore("The train 6543 leaves on <ph0>.", own, learned).text == "The train 6543 leaves on 2024-05-17."


def test_a_repeated_placeholder_is_put_back_once_and_reported():
    text = "Elle est née en 1987."
    protected = protect(text, find_spans(text), SCHEMES["names"])
    ph = protected.spans[0].placeholder
    restored = restore(f"She was born in {ph} {ph}.", protected)
    assert restored.text == "She was born in 1987."
    assert [s.original for s in restored.repeated] == ["1987"] and restored.lost == []


def test_the_default_leaves_numbers_for_the_model_to_copy():
    text = "Le 12/03/2024 à 14 h 35, 1 000 000 de visiteurs ont vu https://exemple.fr."
    protected = protect(text, find_spans(text))
    assert [(s.kind, s.copied) for s in protected.spans] == [
        ("date", False),  # dates and times keep placeholders: a model that copies 1987 writes 14 h 35 as "14"
        ("time", False),
        ("number", True),
        ("url", False),
    ]
    assert "1 000 000" in protected.text
    assert "12/03/2024" not in protected.text and "14 h 35" not in protected.text and "https" not in protected.text
    date, time, _, url = (s.placeholder for s in protected.spans)
    # Written as the source wrote it or the English way, a number comes out the English way.
    restored = restore(f"On {date} at {time}, 1 000 000 visitors saw {url}.", protected)
    assert restored.text == "On 12/03/2024 at 14:35, 1,000,000 visitors saw https://exemple.fr." and not restored.lost
    restored = restore(f"On {date} at {time}, 1,000,000 visitors saw {url}.", protected)
    assert restored.text == "On 12/03/2024 at 14:35, 1,000,000 visitors saw https://exemple.fr." and not restored.lost


def test_a_copied_number_is_lost_when_the_model_garbles_it():
    text = "Elle est née en 1987, il a 25 ans."
    protected = protect(text, find_spans(text))
    assert [s.copied for s in protected.spans] == [True, True]
    restored = restore("She was born in 198, he is 25.5 years old.", protected)  # neither is the number given
    assert [s.original for s in restored.lost] == ["1987", "25"]
    assert "dropped number '1987'" in restored.warnings[0]
    assert restore("She was born in 19870, he is 125.", protected).lost == protected.spans  # not inside another
    decades = protect("Dans les années 1990 et 60.", find_spans("Dans les années 1990 et 60."))  # numbers
    plural = restore("In the 1990s and 60s.", decades)  # an English plural after a number keeps it whole
    assert plural.text == "In the 1990s and 60s." and not plural.lost
    assert restore("In the 1990st and 60.", decades).lost == decades.spans[:1]


def test_a_number_after_an_abbreviations_point_is_copied_and_after_a_digits_point_is_not():
    protected = protect("Lot n°45 : 12 sacs.", find_spans("Lot n°45 : 12 sacs."))
    # the model's No.45: 45 is there, not lost (nor put back twice)
    restored = restore("Lot No.45: 12 bags.", protected)
    assert restored.text == "Lot No.45: 12 bags." and not restored.lost
    assert [s.original for s in restore("Lot 3.45: 12 bags.", protected).lost] == ["45"]  # 3.45 is another number


def test_each_copy_of_a_number_claims_its_own_occurrence():
    text = "En 2009 et en 2009."
    protected = protect(text, find_spans(text))
    assert [s.original for s in restore("In 2009 and in 2009.", protected).lost] == []
    assert [s.original for s in restore("In 2009.", protected).lost] == ["2009"]
    # One more in the output than in the source is the model's own, left as it wrote it.
    assert restore("In 2009, 2009 and 2009.", protected).text == "In 2009, 2009 and 2009."


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Hier, j'ai vu Angela Merkel à Berlin.", ["Angela Merkel"]),
        ("Le président Emmanuel Macron parle à Jean-Pierre Raffarin.", ["Emmanuel Macron", "Jean-Pierre Raffarin"]),
        ("Il a vu le Dr Balfour Mount et Mme Plamondon.", ["Dr Balfour Mount"]),  # Mme is translated: Ms
        ("Angela Merkel a dit non.", []),  # a sentence's first word is capitalised anyway
        ("Selon Le Monde, la Cour Suprême a parlé.", []),  # Le translated; an institution in French word order
        ("Il travaille au Centre Brennan.", []),
        ("Il a évité le Pacifique Sud et Star Alliance.", ["Star Alliance"]),  # a compass word: a place
    ],
)
def test_names_are_runs_of_capitalised_words(text, names):
    assert [s.original for s in find_spans(text, names=True) if s.kind == "name"] == names
    assert [s for s in find_spans(text) if s.kind == "name"] == []  # only when asked


def test_a_name_is_left_for_the_model_and_kept_as_it_wrote_it():
    text = "Hier, Gérald Tremblay a vu Carlo Ancelotti."
    protected = protect(text, find_spans(text, names=True))
    assert protected.text == text and [s.copied for s in protected.spans] == [True, True]
    restored = restore("Yesterday, Gerald Tremblay saw Carlo Ancelotti.", protected)  # accents dropped: fine
    assert restored.text == "Yesterday, Gerald Tremblay saw Carlo Ancelotti." and restored.lost == []
    restored = restore("Yesterday, Gérald Tremblay saw Carlo Anlo.", protected)
    assert [s.original for s in restored.lost] == ["Carlo Ancelotti"]
    # With placeholders a name gets a person's (Tom, Mary), not a city's: "a rencontré Chicago" reads as a place.
    protected = protect(text, find_spans(text, names=True), SCHEMES["names"])
    assert protected.text == "Hier, Tom a vu Mary."
    assert restore("Yesterday, Tom saw Mary.", protected).text == "Yesterday, Gérald Tremblay saw Carlo Ancelotti."


def test_placeholders_match_whole_tokens_only():
    text = "En 1987 et 2020."
    protected = protect(text, find_spans(text), SCHEMES["typed"])
    assert [s.placeholder for s in protected.spans] == ["99", "9"]
    restored = restore("In 1999, 99 and 9.", protected)
    assert restored.text == "In 1999, 1987 and 2020."


_PIECES = ["Elle", " ", "est", "née", "en", "1987", "14 h 35", "https://a.fr", "a@b.fr", "12/03/2024", ",", "."]


@given(st.lists(st.sampled_from(_PIECES), max_size=12))
def test_restore_inverts_protect_when_the_model_copies(parts):
    text = " ".join(parts)
    # a time or a length of time is rewritten on purpose (14:35; "en 14 h 35" is 14 hours 35 minutes)
    spans = [s for s in find_spans(text) if s.kind not in ("time", "duration")]
    protected = protect(text, spans)
    restored = restore(protected.text, protected)
    assert restored.text == text and not restored.lost
