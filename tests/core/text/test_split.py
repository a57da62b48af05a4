"""Sentence splitting: the French test list, and join(split(line)) == line for any line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.text.split import join_sentences, sentence_spans, split_sentences
from tests.core.text.split_cases import CASES, ODD_SPACING


@pytest.mark.parametrize("sentences", CASES, ids=lambda c: c[0][:30])
def test_french_test_list(sentences):
    assert split_sentences(" ".join(sentences)) == sentences


def test_the_issue_line_comes_out_as_three_sentences():
    line = "Je suis étudiant. Il fait froid ce matin. Le chat dort sur le canapé."
    assert split_sentences(line) == ["Je suis étudiant.", "Il fait froid ce matin.", "Le chat dort sur le canapé."]


def test_a_ten_sentence_paragraph_loses_none():
    paragraph = next(c for c in CASES if len(c) == 10)
    spans = sentence_spans(" ".join(paragraph))
    assert len(spans) == 10


@pytest.mark.parametrize("line", ODD_SPACING)
def test_the_line_own_spacing_is_kept(line):
    spans = sentence_spans(line)
    assert join_sentences(line, spans, [line[a:b] for a, b in spans]) == line
    assert all(line[a:b] == line[a:b].strip() and line[a:b] for a, b in spans)


def test_join_puts_translations_between_the_line_spacing():
    line = "  Bonjour.   Ça va ?\t"
    spans = sentence_spans(line)
    assert join_sentences(line, spans, ["Hello.", "How are you?"]) == "  Hello.   How are you?\t"
    with pytest.raises(ValueError):
        join_sentences(line, spans, ["Hello."])


@given(st.text(alphabet=st.sampled_from(list("abcAB .!?…«»\t\u00a0M1é")), max_size=60))
def test_round_trip_on_any_text(line):
    spans = sentence_spans(line)
    assert join_sentences(line, spans, [line[a:b] for a, b in spans]) == line
    assert all(a < b for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))


@pytest.mark.parametrize(
    "line",
    [
        "Il s'appelle Max. Il aime courir.",  # max. is an abbreviation only in lower case
        "Le chat est là où il est. Il dort.",  # est ends French sentences
        "On lit l'Art. Puis on dort.",
    ],
)
def test_words_that_look_like_abbreviations_still_end_sentences(line):
    assert len(split_sentences(line)) == 2


@pytest.mark.parametrize(
    "line",
    [
        'Ils disent toujours la même phrase: " Je veux mourir. "',  # newstest2013: a spaced straight quote
        "Il l'a dit (voir plus haut. )",
        "Elle a crié : « Au secours ! » ",
    ],
)
def test_a_closing_quote_after_a_space_stays_with_its_sentence(line):
    assert split_sentences(line) == [line.strip()]
