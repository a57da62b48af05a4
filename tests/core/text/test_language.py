"""core.text.language: which of the languages asked about a text is in, and the wrong-direction warning."""

from __future__ import annotations

import pytest

from core.text.language import SURE, identify, wrong_language

FRENCH = ["Je suis étudiant.", "Il fait froid ce matin.", "Où est la gare, s'il vous plaît ?", "Bon appétit !"]
ENGLISH = ["I am a student.", "It is cold this morning.", "Where is the station, please?", "Thank you very much!"]


@pytest.mark.parametrize("text, code", [(t, "fr") for t in FRENCH] + [(t, "en") for t in ENGLISH])
def test_short_sentences_are_told_apart(text, code):
    guesses = identify(text, ("fr", "en"))
    assert guesses[0].language == code and guesses[0].confidence > 0.5
    assert sum(g.confidence for g in guesses) == pytest.approx(1.0)
    assert [g.language for g in identify(text, ("en", "fr"))] == [g.language for g in guesses]  # order asked: no matter


def test_a_third_language_when_asked_about_it():
    assert identify("Guten Morgen, wie geht es dir heute?", ("fr", "en", "de"))[0].language == "de"


def test_a_text_without_letters_says_nothing():
    assert [(g.language, g.confidence) for g in identify("12 345,67 %", ("fr", "en"))] == [("fr", 0.0), ("en", 0.0)]
    assert [g.language for g in identify("", ("en", "fr"))] == ["en", "fr"]


def test_an_unknown_language_code_is_a_clear_error():
    with pytest.raises(ValueError, match="no language model for xx"):
        identify("Bonjour", ("fr", "xx"))


def test_english_given_to_a_french_to_english_model_is_warned_of_and_french_is_not():
    warning = wrong_language("Hello, how are you doing today?", "fr", "en")
    assert warning is not None and warning.startswith("this reads as English, not French")
    assert "translates French to English" in warning
    assert [wrong_language(t, "fr", "en") for t in FRENCH] == [None] * len(FRENCH)
    # The control: a French sentence that reads as English to a weaker test (py3langid says en, below SURE).
    assert identify("Tu as tort.", ("fr", "en"))[0].confidence < SURE
    assert wrong_language("Tu as tort.", "fr", "en") is None


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("Je suis étudiant", "fr", True),
        ("Le chat dort", "fr", True),
        ("I am a student.", "en", True),
        ("I am a student.", "fr", False),
        ("Bonjour", "fr", False),  # no marker: says nothing
        ("La maison est grande, the house.", "fr", False),  # both: says nothing
    ],
)
def test_plainly_in_one_language(text, language, expected):
    from core.text.language import plainly

    assert plainly(text, language) is expected


def test_a_plainly_french_line_is_not_sent_to_the_identifier():
    """The warnings need py3langid's model (~0.35 s to read) only for a line that is not plainly what it should
    be; an English line given to the fr→en model is still named."""
    from core.text import language

    language._model.cache_clear()
    language._identifier.cache_clear()
    assert language.wrong_language("Je suis étudiant et j'aime le chocolat.", "fr", "en") is None
    assert language._model.cache_info().currsize == 0
    assert language.wrong_language("I am a student and I like chocolate.", "fr", "en") is not None
