"""The output line of tt inspect is coloured by the model's confidence in each word."""

from __future__ import annotations

import math

from core.decode.trace import StepTrace
from tt_cli.tui.widgets.sentence import DOUBTFUL, UNLIKELY, confident_words


def segments(text) -> list[tuple[str, str]]:
    """What a rich Text draws: (characters, style) runs."""
    from rich.console import Console

    return [(seg.text, str(seg.style)) for seg in text.render(Console(width=200)) if seg.text != "\n"]


def steps(*pieces: tuple[str, float]) -> list[StepTrace]:
    return [StepTrace(i, i, piece, math.log(p), []) for i, (piece, p) in enumerate(pieces)]


def styles(text) -> dict[str, str]:
    return {text.plain[s.start : s.end]: str(s.style) for s in text.spans}


def test_each_word_takes_the_colour_of_its_confidence():
    line = steps(("▁The", 0.9), ("▁ca", 0.4), ("t", 0.4), ("▁sle", 0.1), ("eps", 0.1), (".", 0.1), ("</s>", 0.01))
    text = confident_words("The cat sleeps.", line, "italic green")
    assert text.plain == "“The cat sleeps.”"
    seen = styles(text)
    assert seen["The"] == "italic green"  # sure: the line's own style
    assert 0.4 < DOUBTFUL and seen["cat"] == "italic yellow"
    assert 0.1 < UNLIKELY and seen["sleeps."] == "italic bold red"


def test_a_text_that_is_not_its_pieces_is_shown_plain():
    text = confident_words("The dog", steps(("▁The", 0.01), ("▁cat", 0.01)), "italic")
    assert text.plain == "“The dog”" and "red" not in str(text.spans)


def test_tt_inspect_draws_its_output_line_with_these_colours(tiny_loaded):
    from tests.tui.test_tui import drive, keys
    from tt_cli.tui.widgets.sentence import SentenceView

    async def script(app, pilot):
        await keys(pilot, "r")  # decode to the end
        line = app.decoding.original
        group = app.query_one(SentenceView).content
        [summary] = [t for t in group.renderables if "“" in t.plain]
        want = segments(confident_words(line.text, line.steps, "italic green"))
        assert segments(summary)[1 : 1 + len(want)] == want  # after the 9-space indent
        assert len(want) > 3  # one segment per word and space, not the line in one style

    drive(tiny_loaded, script, "Le chat dort sur le canapé.")
