"""Casing: shapes found, lowered, and put back on a translation."""

from __future__ import annotations

import pytest

from core.text.case import NATURAL, TITLE, UPPER, apply_case, case_shape, natural_case


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("J'AIME LE CHOCOLAT.", UPPER),
        ("Le Chat Dort Sur Le Canapé", TITLE),
        ("Le chat dort sur le canapé.", NATURAL),
        ("Tom et Marie vont à Paris.", NATURAL),
        ("La NASA a lancé une fusée.", NATURAL),
        ("OK", NATURAL),  # one word: too little to call a shape
        ("Appeler Éric à 18h.", NATURAL),  # an opening capital and a name: no headline (Éric was lowered)
        ("Voir Paris", NATURAL),
        ("Été Chaud À Paris", TITLE),
    ],
)
def test_case_shape(text, shape):
    assert case_shape(text) == shape


def test_natural_case_lowers_and_capitalises_the_first_word_but_keeps_placeholders():
    assert natural_case("« J'AIME BOSTON ET LE CHOCOLAT »", frozenset({"BOSTON"})) == "« J'aime BOSTON et le chocolat »"


def test_apply_case_upper_keeps_placeholders():
    assert apply_case("I love Boston.", UPPER, frozenset({"Boston"})) == "I LOVE Boston."


def test_apply_case_title_leaves_small_words_lower():
    assert apply_case("The cat is sleeping on the couch", TITLE) == "The Cat Is Sleeping on the Couch"
    assert apply_case("the cat", NATURAL) == "the cat"


def test_natural_case_gives_names_their_capital_back_where_the_vocabulary_knows_them():
    """PARIS lowered is "paris" (bets), which the shipped model translates as such; its vocabulary has
    "▁Paris" whole, so the name keeps its capital, inside an elision too; a word both ways one piece stays lower."""
    from core.data.tokenizer import Tokenizer
    from core.text.case import names_by_pieces
    from weights import DIR

    tok = Tokenizer.load(DIR / "spm.model")
    proper = names_by_pieces(lambda word: len(tok.encode(word)))
    assert proper("paris") and proper("europe") and not proper("président") and not proper("chaud")
    text = "ÉTÉ CHAUD À PARIS ET DANS L'EUROPE DU PRÉSIDENT"
    assert natural_case(text, proper=proper) == "Été chaud à Paris et dans l'Europe du président"
    assert natural_case(text) == "Été chaud à paris et dans l'europe du président"  # without it: all lower
    assert natural_case("« PARIS »", frozenset({"PARIS"}), proper=lambda w: False) == "« PARIS »"  # kept as is


def test_a_learned_placeholder_is_one_unit_whatever_its_letters():
    """<ph0>'s letters are no word: the line stays ALL CAPS, is lowered around it, and it is not cased."""
    keep = frozenset({"<ph0>", "<ph1>"})
    assert case_shape("ÉCOLE FERMÉE LE <ph0>.", keep) == UPPER
    assert case_shape("ÉCOLE FERMÉE LE <ph0>.") == NATURAL  # without keep, "ph" is a lower-case word
    assert natural_case("ÉCOLE FERMÉE LE <ph0>.", keep) == "École fermée le <ph0>."
    assert natural_case("<ph0> EST FERMÉ", keep) == "<ph0> est fermé"  # nothing before it to capitalise
    assert apply_case("School closed on <ph0> and <ph1>.", UPPER, keep) == "SCHOOL CLOSED ON <ph0> AND <ph1>."
    assert apply_case("<ph0> is closed today", TITLE, keep) == "<ph0> Is Closed Today"


def _pieces(model: str = "weights"):
    from core.data.tokenizer import Tokenizer
    from tests.conftest import ROOT

    tok = Tokenizer.load(ROOT / model / "spm.model")
    return lambda word: len(tok.encode(word))


@pytest.mark.parametrize("model", ["weights", "weights/en-fr"])
def test_a_loud_word_is_one_piece_in_lower_case_and_an_acronym_is_not(model):
    """Each shipped vocabulary spells TRÈS, VERY, ÉTÉ letter by letter and has "▁très", "▁very", "▁été" (and
    "▁Paris") whole: those are words written loud. Acronyms stay: known ones are one piece as written (USA,
    TV), unknown ones are no word in lower case (SNCF, NASA); short ones are words in lower case (UN, EU, WHO)."""
    from core.text.case import loud_by_pieces

    loud = loud_by_pieces(_pieces(model))
    for word in ("TRÈS", "VRAIMENT", "JAMAIS", "ÉTÉ", "L'ÉTÉ", "PARIS", "VERY", "NEVER", "ATTENTION"):
        assert loud(word), word
    for word in ("SNCF", "NASA", "USA", "TV", "UN", "EU", "WHO", "PAS", "très", "Paris", "COVID-19", "X2"):
        assert not loud(word), word


def test_loud_words_are_lowered_and_counted_among_the_texts_words():
    from core.text.case import loud_words

    loud = {"TRÈS", "VRAIMENT", "ATTENTION", "PARIS", "L'ÉTÉ"}.__contains__
    proper = {"paris"}.__contains__
    text, shouted = loud_words("C'est TRÈS beau et VRAIMENT calme à PARIS, L'ÉTÉ.", frozenset(), loud, proper)
    assert (text, shouted) == ("C'est très beau et vraiment calme à Paris, l'été.", (1, 4, 7, 8))
    assert loud_words("ATTENTION : le sol", frozenset(), loud) == ("Attention : le sol", (0,))  # still a sentence
    assert loud_words("« TRÈS » <ph0> TRÈS", frozenset({"<ph0>"}), loud) == ("« Très » <ph0> très", (1, 4))
    assert loud_words("Rien de TRÈS", frozenset({"TRÈS"}), loud) == ("Rien de TRÈS", ())  # a placeholder is kept


def test_the_translation_of_a_loud_word_is_shouted_where_the_links_put_it():
    """One-model links are often a word off: the output word near the link that is a word of the loud word's
    own translation is the one shouted; where none is, nothing is (the emphasis lost, no wrong word loud)."""
    from core.text.case import shout_aligned

    links = [(0, 0), (1, 1), (2, 2), (2, 3)]  # très → "is": one word off
    assert shout_aligned("This is very important.", {1: "It's very much."}, links) == ("This is VERY important.", ())
    # where no word near its links is its translation, nothing is shouted and the word is named as one that found none
    assert shout_aligned("This is very important.", {1: "Well,"}, links) == ("This is very important.", (1,))
    assert shout_aligned("This is very important.", {1: "very"}, []) == ("This is very important.", (1,))  # no link
    assert shout_aligned("Be careful: it is", {0: "Be careful"}, [(0, 0)]) == ("BE CAREFUL: it is", ())
    assert shout_aligned("very <ph0>", {0: "very"}, [(0, 0), (0, 1)], frozenset({"<ph0>"})) == ("VERY <ph0>", ())
    # "Il fait TRÈS chaud." → "It's very hot.": "very" links to "chaud", TRÈS to nothing — read through its neighbours
    hot = [(1, 0), (3, 1), (3, 2)]
    assert shout_aligned("It's very hot.", {2: "Like Very"}, hot) == ("It's VERY hot.", ())
    assert shout_aligned("It's hot today.", {2: "Like Very"}, hot) == ("It's hot today.", (2,))
