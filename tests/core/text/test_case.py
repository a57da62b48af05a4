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
