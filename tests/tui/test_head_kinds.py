"""The heads grid of `tt inspect` marks each self-attention head with its pattern kind
(core/analysis/patterns.py): the mark drawn on screen is the kind core computes for that family,
layer and head, live and in a replayed trace, asked for once per sentence."""

from __future__ import annotations

import re

import pytest

from core.analysis.patterns import KIND_LEGEND, KIND_MARKS, head_patterns, sentence_kinds
from core.analysis.tracefile import load_trace, save_trace
from core.model.attention import Head
from tests.conftest import FIXTURES
from tests.core.analysis.planted_heads import PLANTED, TRANSLATION, planted_trace
from tests.tui.test_tui import drive, keys, settle, text_of
from tt_cli.tui.app import make_app
from tt_cli.tui.widgets.heatmap import LABEL_WIDTH, Heatmap

PARKING_SENTENCE = "Le chat dort."  # the fixed model parks encoder layer 2's head 1 on it; the rest are mixed


def drawn_marks(app) -> dict[Head, str]:
    """(family, layer, head) → the character drawn right after each row label of the grid on screen."""
    marks = {}
    for line in text_of(app.query_one(Heatmap)).splitlines():
        found = re.match(r"\s*L(\d+)H(\d+)", line[: LABEL_WIDTH - 1])
        if found:
            marks[Head(app.view.family, int(found[1]) - 1, int(found[2]) - 1)] = line[LABEL_WIDTH - 1]
    return marks


def expected_marks(kinds, family: str) -> dict[Head, str]:
    return {head: KIND_MARKS[k.kind] for head, k in kinds.items() if head.family == family}


@pytest.fixture
def planted(tmp_path):
    """The planted 3 + 1-layer sentence, through a trace file as `tt translate --trace` writes one."""
    source, steps = planted_trace()
    return load_trace(save_trace(tmp_path / "planted.trace", source, steps, translation=TRANSLATION, model="planted"))


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_a_replayed_trace_draws_each_heads_kind_as_core_reads_it(planted, size):
    """No model: the kinds come from the weights the trace holds. Every encoder head of the planted
    trace has a kind of its own, and the decoder's differ from the encoder's first layer, so marks
    drawn shuffled, missing, or read from another layer or family fail here, wide and at 80×24."""
    kinds = sentence_kinds(planted.source, planted.steps)
    assert {head: k.kind for head, k in kinds.items()} == PLANTED  # core, the control

    async def script(app, pilot):
        await keys(pilot, "g")  # cross-attention first: its keys are the other sentence, no kinds
        data = app.query_one(Heatmap).data
        assert set(drawn_marks(app).values()) == {" "} and not data.row_marks and "kind" not in data.title
        for family in ("decoder_self", "encoder_self"):
            await keys(pilot, "f")
            assert app.view.family == family
            assert drawn_marks(app) == expected_marks(kinds, family)
            assert KIND_LEGEND in app.query_one(Heatmap).data.title

    drive(None, script, text=None, trace=planted, size=size)


def test_the_live_grid_marks_the_kinds_of_the_whole_output_asked_once_per_sentence(fixed_loaded):
    """Live, the kinds are read off the sentence's whole greedy decoding (not the steps on screen),
    once: stepping, changing layer or family and coming back redraw the marks without asking again."""
    from core.decode.stepper import Stepper

    greedy = Stepper(fixed_loaded, PARKING_SENTENCE)
    greedy.run()
    kinds = sentence_kinds(greedy.source, greedy.steps)
    assert kinds[Head("encoder_self", 1, 0)].kind == "parked"  # one head not mixed: a shuffle moves it

    async def script(app, pilot):
        asked = []
        ask = app.session.kinds
        app.session.kinds = lambda ref: asked.append(ref) or ask(ref)
        await keys(pilot, "g", "f")  # the decoder's grid, at the first step
        assert drawn_marks(app) == expected_marks(kinds, "decoder_self")
        await keys(pilot, "n", "n", "f", "l")
        assert app.view.family == "encoder_self" and drawn_marks(app) == expected_marks(kinds, "encoder_self")
        await keys(pilot, "f", "f", "f", "n")  # cross (no marks), decoder, encoder again, a step on
        assert drawn_marks(app) == expected_marks(kinds, "encoder_self")
        assert asked == [None]

    drive(fixed_loaded, script, text=PARKING_SENTENCE)


def test_with_a_reference_the_kinds_are_those_of_the_reference_teacher_forced(fixed_loaded):
    from tt_cli.tui.session import Session

    reference = "The cat sleeps."
    session = Session(fixed_loaded)
    session.start(PARKING_SENTENCE)
    kinds = session.kinds(reference)
    for p in head_patterns(fixed_loaded, [(PARKING_SENTENCE, reference)]).heads:
        got = kinds[p.family, p.layer, p.head]
        assert got.kind == p.kind and got.shares == pytest.approx(p.shares, abs=1e-5)


def test_snapshot_grid_with_kind_marks(planted, snap_compare):
    assert snap_grid(planted, snap_compare, (120, 40))


def test_snapshot_grid_with_kind_marks_at_80x24(planted, snap_compare):
    assert snap_grid(planted, snap_compare, (80, 24))


def snap_grid(trace, snap_compare, size: tuple[int, int]) -> bool:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await keys(pilot, "f", "f", "g")  # the encoder's grid: a head of every kind

    return snap_compare(
        make_app(None, None, trace=trace, trace_name="planted"), terminal_size=size, run_before=run_before
    )


@pytest.fixture(scope="module")
def fixed_loaded():
    from core.checkpoint import load_model

    return load_model(FIXTURES / "tiny_model")
