"""Case and accent augmentation (core/data/augment.py)."""

from core.data.augment import augmented
from core.data.readers import Pair

PAIRS = [Pair(f"Élève numéro {i} à l'école.", f"Pupil number {i} at school.", f"x:{i}") for i in range(2000)]


def test_shares_and_kinds_of_copies():
    extra = augmented(PAIRS, 0.05, 0.1, seed=1)
    upper = [p for p in extra if p.src.isupper()]
    lower = [p for p in extra if p.src == p.src.lower() and p.tgt[0].isupper()]
    bare = [p for p in extra if "Eleve" in p.src]
    assert 50 <= len(upper) <= 150 and 50 <= len(lower) <= 150 and 130 <= len(bare) <= 270
    assert all(p.tgt.isupper() for p in upper)  # a shouted source, a shouted translation
    assert all(p.tgt == p.tgt.capitalize() for p in bare)  # the target keeps its case and accents


def test_the_draw_depends_on_the_text_and_seed_not_the_order():
    assert augmented(PAIRS, 0.05, 0.1, seed=1) == augmented(PAIRS, 0.05, 0.1, seed=1)
    assert augmented(PAIRS, 0.05, 0.1, seed=1) != augmented(PAIRS, 0.05, 0.1, seed=2)
    forward = {p.src for p in augmented(PAIRS, 0.05, 0.0, seed=1)}
    assert forward == {p.src for p in augmented(PAIRS[::-1], 0.05, 0.0, seed=1)}
    assert augmented(PAIRS, 0.0, 0.0, seed=1) == []
