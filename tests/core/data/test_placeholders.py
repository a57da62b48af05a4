"""Placeholders learned in training (core/data/placeholders.py) and the vocabulary that holds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.data.placeholders import PLACEHOLDER_TOKENS, placeholder_pair, with_placeholders
from core.data.readers import Pair
from core.data.tokenizer import Tokenizer
from core.model.config import UNK_ID
from core.text.options import TextOptions
from core.text.protect import find_spans, spans_to_protect

WEIGHTS = Path(__file__).resolve().parents[3] / "weights"


def pair(src: str, tgt: str) -> Pair:
    return Pair(src, tgt, "test:1")


def test_each_span_in_both_sides_becomes_the_same_indexed_placeholder_in_source_order():
    p = placeholder_pair(
        pair("Voir https://x.fr ou écrire à lea@x.fr ce soir.", "Write to lea@x.fr or see https://x.fr.")
    )
    assert p.src == "Voir <ph0> ou écrire à <ph1> ce soir."
    assert p.tgt == "Write to <ph1> or see <ph0>."  # numbered in the source's order, wherever the target has them
    assert p.origin == "test:1"


def test_a_span_written_back_the_english_way_counts_as_in_the_target():
    # core/text restores 14 h 35 as 14:35: that is what the placeholder stands for in the target
    p = placeholder_pair(pair("Le train part à 14 h 35.", "The train leaves at 14:35."))
    assert (p.src, p.tgt) == ("Le train part à <ph0>.", "The train leaves at <ph0>.")


def test_an_english_source_pair_reads_its_spans_the_english_way_as_en_fr_translation_does():
    # en→fr: 2:30 PM is written 14 h 30 and $4.99/month 4,99 $ par mois; read as French, neither was a span
    p = pair("It ends at 2:30 PM and costs $4.99/month.", "Cela finit à 14 h 30 et coûte 4,99 $ par mois.")
    placed = placeholder_pair(p, languages=("en", "fr"))
    assert (placed.src, placed.tgt) == ("It ends at <ph0> and costs <ph1>.", "Cela finit à <ph0> et coûte <ph1>.")
    assert placeholder_pair(p) is p
    shares = with_placeholders([p], 1.0, 0, languages=("en", "fr"))
    assert shares == [placed]


def test_what_is_on_one_side_only_or_left_for_the_model_to_copy_stays():
    only_source = pair("Voir https://x.fr ce soir.", "See the site tonight.")
    assert placeholder_pair(only_source) is only_source
    other_url = pair("Voir https://x.fr ce soir.", "See https://x.fr/en tonight.")  # not the same URL
    assert placeholder_pair(other_url) is other_url
    # numbers and names stay as written (the learned scheme leaves them for the model to copy, as translation does)
    number = pair(
        "Elle est née en 1987 à Paris avec Angela Merkel.", "She was born in 1987 in Paris with Angela Merkel."
    )
    assert placeholder_pair(number) is number
    mixed = placeholder_pair(pair("En 1987, voir https://x.fr.", "In 1987, see https://x.fr."))
    assert (mixed.src, mixed.tgt) == ("En 1987, voir <ph0>.", "In 1987, see <ph0>.")


def test_a_placeholder_next_to_a_word_is_kept_apart_on_both_sides():
    p = placeholder_pair(pair("Une ligne<br/>puis --beam=4.", "One line<br/>then --beam=4."))
    assert (p.src, p.tgt) == ("Une ligne <ph0> puis <ph1>.", "One line <ph0> then <ph1>.")


def test_the_spans_are_those_translation_protects():
    text = "Voir https://x.fr et `ls -l` à 14 h 35 avec Angela Merkel."
    assert spans_to_protect(text, TextOptions()) == find_spans(text, names=True)
    assert [s.kind for s in spans_to_protect(text, TextOptions(protect=False))] == []


def test_no_more_spans_than_placeholders():
    urls = [f"https://x{i}.fr" for i in range(12)]
    p = placeholder_pair(pair("Voir " + " et ".join(urls) + ".", "See " + " and ".join(urls) + "."))
    assert p.src.count("<ph") == len(PLACEHOLDER_TOKENS) == 10 and "<ph9>" in p.tgt and urls[-1] in p.tgt


PAIRS = [pair(f"Voir https://site{i}.fr ce soir.", f"See https://site{i}.fr tonight.") for i in range(1000)]


def test_the_share_is_drawn_by_hash_and_zero_changes_nothing():
    assert with_placeholders(PAIRS, 0.0, seed=1) == PAIRS
    placed = with_placeholders(PAIRS, 0.15, seed=1)
    changed = [p for p in placed if "<ph0>" in p.src]
    assert 100 <= len(changed) <= 200 and all(p.tgt == "See <ph0> tonight." for p in changed)
    assert with_placeholders(PAIRS, 0.15, seed=1) == placed  # the same pairs every time, whatever the order
    assert {p.tgt for p in with_placeholders(PAIRS[::-1], 0.15, seed=1)} == {p.tgt for p in placed}
    assert with_placeholders(PAIRS, 0.15, seed=2) != placed
    assert all("<ph0>" in p.src for p in with_placeholders(PAIRS, 1.0, seed=1))


@pytest.fixture(scope="module")
def shipped() -> Tokenizer:
    return Tokenizer.load(WEIGHTS / "en-fr" / "spm.model")


def test_a_shipped_vocabulary_grows_by_new_pieces_as_single_pieces(shipped):
    """The shipped vocabulary already holds the placeholders (its model learned them); pieces it lacks are added
    the same way they were."""
    assert shipped.with_pieces(PLACEHOLDER_TOKENS) is shipped
    new_pieces = tuple(f"<new{i}>" for i in range(10))
    grown = shipped.with_pieces(new_pieces)
    assert grown.vocab_size == shipped.vocab_size + len(new_pieces)
    assert UNK_ID in shipped.encode("<new3>")  # the shipped vocabulary cannot write one
    for i, token in enumerate(new_pieces):
        assert grown.piece_id(token) == shipped.vocab_size + i
        assert grown.encode_pieces(f"Voir {token}.")[-2:] == [token, "."]  # one piece, whole
        assert grown.encode(f"Voir {token}.").count(grown.piece_id(token)) == 1
    # every old id keeps its piece, and text without placeholders encodes as before
    assert all(grown.sp.id_to_piece(i) == shipped.sp.id_to_piece(i) for i in range(shipped.vocab_size))
    text = "See you at the station tomorrow, <b>not</b> today."
    assert grown.encode(text) == shipped.encode(text)
    assert grown.decode(grown.encode("Voir <new0>, puis (<new1>).")) == "Voir <new0>, puis (<new1>)."
    assert grown.with_pieces(new_pieces) is grown  # nothing missing: the same vocabulary
    assert Tokenizer(grown.proto).vocab_size == grown.vocab_size  # it serialises whole


def test_a_trained_vocabulary_holds_them_from_the_start():
    sentences = [f"Voir la maison numéro {i} ce soir." for i in range(200)] + ["See the house tonight."] * 50
    trained = Tokenizer.train(sentences, 60, user_symbols=PLACEHOLDER_TOKENS)
    assert [trained.encode_pieces(t) for t in PLACEHOLDER_TOKENS] == [["▁", t] for t in PLACEHOLDER_TOKENS]
    assert trained.piece_id("<ph0>") == 4  # right after pad, unk, bos, eos
