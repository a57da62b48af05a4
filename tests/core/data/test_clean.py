"""The cleaning rules (core/data/clean.py): each drops what it names, and is counted."""

from collections import Counter

import pytest

from core.data.clean import RULES, CleanRules, clean_pairs, looks_like, restore_oe
from core.data.readers import Pair


def run(pairs, rules=CleanRules(), src="fr", tgt="en"):
    counts = Counter()
    kept = list(clean_pairs([Pair(s, t, f"x:{i}") for i, (s, t) in enumerate(pairs)], rules, counts, src, tgt))
    return [(p.src, p.tgt) for p in kept], counts


GOOD = ("Le chat dort sur le canapé.", "The cat is sleeping on the sofa.")


@pytest.mark.parametrize(
    "pair, rule",
    [
        (("", "Hello."), "empty"),
        (("Bonjour.", "   "), "empty"),
        (("Oui " * 400, "Yes " * 400), "too_long"),
        (("Merci.", "draftsman of the opinion of the Committee on the Environment."), "length_ratio"),
        (("Rapport Van den Berg (A5-0464/2001)", "rapport van den berg  (A5-0464/2001)"), "same_text"),
        (
            ("This is not what we have been told by the Council.", "Ce n'est pas ce que le Conseil nous a dit."),
            "wrong_language",
        ),
    ],
)
def test_each_rule_drops_its_pair_and_counts_it(pair, rule):
    kept, counts = run([GOOD, pair])
    assert kept == [GOOD]
    assert counts[rule] == 1 and sum(counts[r] for r in RULES) == 1


def test_the_rules_spare_ordinary_pairs():
    """Short identical pairs (names, "OK.") are real translations; a short line cannot be judged by language."""
    pairs = [GOOD, ("Tom.", "Tom."), ("OK.", "OK."), ("Oui.", "Yes, indeed."), ("Merci.", "Thank you.")]
    kept, counts = run(pairs)
    assert kept == pairs and not +counts


def test_duplicates_are_dropped_after_the_first_and_only_when_asked():
    kept, counts = run([GOOD, GOOD, GOOD])
    assert kept == [GOOD] and counts["duplicate"] == 2
    kept, counts = run([GOOD, GOOD], CleanRules(dedup=False))
    assert kept == [GOOD, GOOD] and counts["duplicate"] == 0


def test_the_language_check_can_be_turned_off_and_only_knows_french_and_english():
    wrong = ("This is not what we have been told by the Council.", "Ce n'est pas ce que le Conseil nous a dit.")
    assert run([wrong], CleanRules(language_check=False))[0] == [wrong]
    assert run([wrong], src="de", tgt="it")[0] == [wrong]
    assert looks_like("Il est vrai que nous avons été très patients avec eux.", "fr") is True
    assert looks_like("It is true that we have been very patient with them.", "fr") is False
    assert looks_like("Oui.", "fr") is None


@pytest.mark.parametrize(
    "broken, restored",
    [
        ("la mise en uvre du programme", "la mise en œuvre du programme"),
        ("un chef-d'uvre et la main-d’uvre", "un chef-d'œuvre et la main-d’œuvre"),
        ("Uvre commune. UVRE", "Œuvre commune. ŒUVRE"),
        ("mes meilleurs vux de tout cur", "mes meilleurs vœux de tout cœur"),
        ("une marge de manuvre, les manuvres", "une marge de manœuvre, les manœuvres"),
        ("le nud du problème, la viande de buf", "le nœud du problème, la viande de bœuf"),
    ],
)
def test_restore_oe_puts_the_ligature_back(broken, restored):
    text, n = restore_oe(broken)
    assert text == restored and n == restored.count("œ") + restored.count("Œ")


def test_restore_oe_leaves_ambiguous_and_ordinary_words_alone():
    """sur (sœur), vu (vœu), il (œil), murs (mœurs) are words of their own; "sécurité" holds "cur" inside a word."""
    text = "Il a vu sur les murs la sécurité, la procédure, un curé."
    assert restore_oe(text) == (text, 0)


def test_clean_pairs_restores_oe_on_the_french_side_only_and_counts_words():
    kept, counts = run([("La mise en uvre.", "The uvre.")])
    assert kept == [("La mise en œuvre.", "The uvre.")] and counts["oe_restored"] == 1
    kept, counts = run([("The uvre.", "La mise en uvre.")], src="en", tgt="fr")
    assert kept == [("The uvre.", "La mise en œuvre.")]
    kept, counts = run([("La mise en uvre.", "The work.")], CleanRules(restore_oe=False))
    assert kept == [("La mise en uvre.", "The work.")] and not counts["oe_restored"]
