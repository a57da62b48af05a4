"""core.text.currency: a currency symbol written against a number reaches the model as its French word."""

from __future__ import annotations

import pytest

from core.text.currency import spell_currencies

CASES = [
    ("Il a payé 12,50 € pour deux cafés.", "Il a payé 12,50 euros pour deux cafés."),
    ("Ça coûte €5, pas plus.", "Ça coûte 5 euros, pas plus."),
    ("de 37 $ pour 24h à 188$ (Audi A6).", "de 37 dollars pour 24h à 188 dollars (Audi A6)."),
    ("Paye $5.", "Paye 5 dollars."),
    ("Il vaut 1 €.", "Il vaut 1 euro."),
    ("Le prix : 3 500 € !", "Le prix : 3 500 euros !"),
    ("Le prix : 3\u202f500\u00a0€ !", "Le prix : 3\u202f500 euros !"),
    ("Un budget de 3 M€ et de 2,5 Md$.", "Un budget de 3 millions d'euros et de 2,5 milliards de dollars."),
    ("20 £ et 300 ¥", "20 livres sterling et 300 yens"),
    ("en 2013, 500 € furent volés", "en 2013, 500 euros furent volés"),
]


@pytest.mark.parametrize("source,spelled", CASES)
def test_a_symbol_against_a_number_is_spelled(source, spelled):
    assert spell_currencies(source) == spelled


@pytest.mark.parametrize("text", ["echo $HOME", "Le signe € seul.", "A$B", "5€x", "x5 €"])
def test_a_symbol_without_a_number_against_it_stays(text):
    assert spell_currencies(text) == text


def test_kept_ranges_are_not_touched():
    text = "voir `a=5$` et 5 €"
    code = (text.index("`"), text.rindex("`") + 1)
    assert spell_currencies(text, [code]) == "voir `a=5$` et 5 euros"
    assert spell_currencies(text) == "voir `a=5 dollars` et 5 euros"  # what the kept range prevents
