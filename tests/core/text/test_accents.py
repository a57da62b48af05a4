"""Accents given back to French typed without any (core/text/accents.py), from the shipped model's vocabulary."""

from __future__ import annotations

import pytest

from core.text.accents import AccentTable, accent_table, restore_accents, strip_accents
from core.text.pipeline import TextOptions, translate_text, translator_batch


@pytest.fixture(scope="module")
def translator():
    from core import Translator

    return Translator()


@pytest.fixture(scope="module")
def table(translator):
    return accent_table(translator.loaded.tokenizer)


def test_strip_accents_keeps_letters_that_are_not_accents():
    assert strip_accents("Élève à l'école, où ça ? cœur") == "Eleve a l'ecole, ou ca ? cœur"


def test_the_table_reads_whole_word_pieces_and_their_scores():
    pieces = [
        ("▁étudiant", -9.0),
        ("▁ou", -5.0),  # both "ou" and "où" are words: "ou" stays
        ("▁où", -6.0),
        ("▁accepté", -9.0),  # "accepte" may be the verb's own -e: only after avoir/être
        ("▁côte", -10.0),
        ("▁côté", -8.0),  # two forms: the -e one outside a participle's place, the better score in it
        ("▁coté", -12.0),
        ("▁très", -7.0),
        ("▁Très", -6.0),  # case variants are one word
        ("étudiant", -3.0),  # not after "▁": not a whole word
        ("▁vôtre", -11.0),  # "votre" is a word the vocabulary may lack
    ]
    table = AccentTable.from_pieces(pieces)
    assert table.plain == {"etudiant": "étudiant", "cote": "côte", "tres": "très"}
    assert table.participle == {"accepte": "accepté", "cote": "côté"}


def test_a_sentence_typed_without_accents_gets_them_back(table):
    assert restore_accents("je suis etudiant", table) == "je suis étudiant"
    assert restore_accents("Etudiant", table) == "Étudiant"
    assert restore_accents("ETUDIANT", table) == "ÉTUDIANT"
    assert restore_accents("ca va tres bien", table) == "ça va très bien"
    # the verb's -e stays; after avoir or être (adverbs between) it is the participle
    assert restore_accents("il accepte la decision", table) == "il accepte la decision"
    assert restore_accents("il a accepte", table) == "il a accepté"
    assert restore_accents("elle n'a pas encore mange", table) == "elle n'a pas encore mangé"
    assert restore_accents("Il etait deja arrive", table) == "Il était déjà arrivé"
    assert restore_accents("il est ne en 1990", table) == "il est né en 1990"
    # "a" is avoir or à: left to the model, but for a few prepositions; "a X de" is not avoir
    assert restore_accents("il a de la chance", table) == "il a de la chance"
    assert restore_accents("je vais a cote de la gare", table) == "je vais à côté de la gare"
    assert restore_accents("c'est a cause de lui", table) == "c'est à cause de lui"
    # words the vocabulary knows bare stay bare
    assert restore_accents("Ou est la bibliotheque ?", table) == "Ou est la bibliothèque ?"
    assert restore_accents("votre pere", table) == "votre père"


def test_a_sentence_with_any_accent_and_the_protected_words_stay(table):
    assert restore_accents("Je suis étudiant et tres fatigue", table) == "Je suis étudiant et tres fatigue"
    assert restore_accents("etudiant ecole", table, keep=frozenset({"etudiant"})) == "etudiant école"


def test_the_pipeline_gives_the_accents_back_before_the_model_unless_asked_not_to(translator, table):
    batch = translator_batch(translator)
    [on] = translate_text(["je suis etudiant"], batch, None, None, table)
    [off] = translate_text(["je suis etudiant"], batch, TextOptions(accents=False), None, table)
    [none] = translate_text(["je suis etudiant"], batch, None, None, None)
    # the model's words, with or without the period the line lacks (the shipped models have done both)
    assert on.sentences[0].model_input == "je suis étudiant" and on.text.rstrip(".") == "I am a student"
    assert off.sentences[0].model_input == none.sentences[0].model_input == "je suis etudiant"
    assert off.text != on.text  # the shipped model reads "etudiant" as something else
    # capitals first, then accents: a shouted accent-free line reads as the sentence it is
    [shout] = translate_text(["JE SUIS ETUDIANT"], batch, None, None, table)
    assert shout.sentences[0].model_input == "Je suis étudiant" and shout.text == "I AM A STUDENT."


def test_the_python_api_takes_accents_as_a_keyword(translator):
    [on] = translator.translate_text(["je suis etudiant"])
    [off] = translator.translate_text(["je suis etudiant"], accents=False)
    assert on.text.rstrip(".") == "I am a student" and on.sentences[0].model_input == "je suis étudiant"
    assert off.sentences[0].model_input == "je suis etudiant"


def test_the_table_is_made_only_when_a_sentence_needs_it(translator):
    calls = []

    def pieces():
        calls.append(1)
        return translator.loaded.tokenizer.scored_pieces()

    table, batch = AccentTable(pieces), translator_batch(translator)
    translate_text(["Je suis étudiant."], batch, None, None, table)  # accented: nothing to give back
    assert calls == []
    translate_text(["je suis etudiant", "il fait tres froid"], batch, None, None, table)
    assert calls == [1]  # made once, then kept
