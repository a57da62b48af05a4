"""`tt inspect` without Textual: each key action is a pure ViewState method; the Session returns snapshots."""

from __future__ import annotations

import pytest
import torch

from core.data.tokenizer import Tokenizer
from core.decode.trace import StepTrace, top_candidates
from core.model.config import preset
from tests.conftest import FIXTURES
from tt_cli.tui.session import find_piece
from tt_cli.tui.state import MAX_TEMPERATURE, MIN_TEMPERATURE, Cell, Dims, ViewState

CFG = preset("tiny", vocab_size=30, n_encoder_layers=3, n_decoder_layers=2, h=4)


def view(**fields) -> ViewState:
    from dataclasses import replace

    return replace(ViewState.for_model(CFG), **fields)


def test_for_model_takes_the_limits_and_bounds_top_k():
    v = ViewState.for_model(CFG, top_k=99)
    assert v.dims == Dims(3, 2, 4, 30) and v.top_k == 30  # never more candidates than pieces
    assert (v.family, v.layer, v.head, v.mode) == ("cross", 0, None, "dist")


def test_actions_return_a_new_state_and_leave_the_old_one():
    v = view()
    w = v.layer_by(1)
    assert (v.layer, w.layer) == (0, 1) and w != v
    assert v.layer_by(1).layer_by(-1) == v  # equal states: a reactive sees no change, nothing redraws


def test_families_cycle_and_keep_the_layer_within_the_family():
    v = view(layer=1)
    families = [v.family]
    for _ in range(2):
        v = v.next_family()
        families.append(v.family)
    assert families == ["cross", "decoder_self", "encoder_self"]
    v = v.layer_by(1)  # encoder layer 2 of 0..2
    assert v.layer == 2 and v.n_layers == 3
    v = v.next_family()  # back to cross: 2 decoder layers, so layer 2 does not exist
    assert v.family == "cross" and v.layer == 1


def test_layers_wrap_and_heads_cycle_through_the_mean():
    v = view()
    assert v.layer_by(-1).layer == 1 and v.layer_by(2).layer == 0
    heads = [v.head]
    for _ in range(5):
        v = v.head_by(1)
        heads.append(v.head)
    assert heads == [None, 0, 1, 2, 3, None]
    assert view().head_by(-1).head == 3


def test_temperature_and_top_k_are_clamped():
    v = view()
    assert v.temperature_by(1.25).temperature == pytest.approx(1.25)
    for _ in range(100):
        v = v.temperature_by(0.5)
    assert v.temperature == MIN_TEMPERATURE  # top_candidates refuses 0
    assert view(temperature=19.0).temperature_by(2).temperature == MAX_TEMPERATURE
    assert view(top_k=1).top_k_by(-1).top_k == 1 and view(top_k=30).top_k_by(1).top_k == 30


def test_a_mode_key_toggles_and_the_beam_index_stays_in_range():
    v = view().toggle_mode("beam")
    assert v.mode == "beam" and v.toggle_mode("beam").mode == "dist" and v.toggle_mode("explain").mode == "explain"
    assert v.beam_at(-1, 7).beam_index == 6 and v.beam_at(9, 7).beam_index == 6 and v.beam_at(-9, 7).beam_index == 0


def test_selected_cell_of_a_matrix_and_of_a_grid():
    v = view(head=2).select(3, 5)
    assert v.selected(n_steps=4, n_source=8) == Cell("cross", 0, 2, 3, 5)
    assert v.selected(n_steps=3, n_source=8) is None  # the row of a step since undone
    grid = view(grid=True).select(6, 1)  # layer-major rows: row 6 = layer 1, head 2
    assert grid.selected(n_steps=4, n_source=8) == Cell("cross", 1, 2, 3, 1)  # the query is the last step
    assert grid.selected(n_steps=0, n_source=8) is None
    enc = view(family="encoder_self").select(4, 2)
    assert enc.enc_query == 4  # the encoder grid then shows source position 4
    assert enc.toggle_grid().select(9, 0).selected(n_steps=0, n_source=8) == Cell("encoder_self", 2, 1, 4, 0)


def test_cell_note_says_which_query_and_head():
    assert Cell("encoder_self", 0, 1, 2, 0).note == ""
    assert "head 1" in Cell("encoder_self", 0, None, 2, 0).note  # head index 0, counted from 1 on screen
    assert Cell("cross", 0, 1, 2, 0).note == "the decoder input that produced step 3's piece"


def test_candidates_follow_the_view_not_the_step():
    tokenizer = Tokenizer.load(FIXTURES / "tiny_model" / "spm.model")
    logits = torch.linspace(3.0, -3.0, tokenizer.vocab_size)  # piece 0 most probable, then 1, 2, …
    step = StepTrace(
        index=0,
        token=0,
        piece="<pad>",
        logprob=float(logits.log_softmax(-1)[0]),
        candidates=top_candidates(logits, tokenizer, 10),
        logits=logits,
    )
    hot = view(top_k=3, temperature=2.0).candidates(step, tokenizer)
    assert [c.token for c in hot] == [0, 1, 2] and [c.piece for c in hot] == tokenizer.pieces([0, 1, 2])
    assert hot[0].prob == pytest.approx(float((logits / 2).softmax(-1)[0]))
    assert hot[0].logprob == pytest.approx(step.logprob)  # the model's own log p, whatever the view
    assert hot[0].prob < view(top_k=3).candidates(step, tokenizer)[0].prob  # hotter is flatter
    no_logits = StepTrace(index=0, token=0, piece="<pad>", logprob=0.0, candidates=step.candidates)
    assert view(top_k=2).candidates(no_logits, tokenizer) == step.candidates[:2]


def test_widgets_and_screens_get_data_never_the_model():
    """No widget or screen imports what would let it reach into the live model."""
    import ast
    from pathlib import Path

    import tt_cli.tui

    forbidden = {"core.checkpoint", "core.decode.stepper", "core.model.transformer", "tt_cli.tui.session"}
    allowed_from_session = {"Decoding"}  # the snapshot dataclass; Session itself stays with the App
    tui = Path(tt_cli.tui.__file__).parent
    files = sorted([*(tui / "widgets").glob("*.py"), *(tui / "screens").glob("*.py")])
    assert len(files) >= 10
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in forbidden:
                names = {a.name for a in node.names}
                assert node.module == "tt_cli.tui.session" and names <= allowed_from_session, f"{path.name}: {names}"
            if isinstance(node, ast.Import):
                assert not {a.name for a in node.names} & forbidden, path.name


# ------------------------------------------------------------------------------ the model side, without Textual
@pytest.fixture(scope="module")
def session():
    from core.checkpoint import load_model
    from tt_cli.tui.session import Session

    return Session(load_model(FIXTURES / "tiny_model"))


def test_a_decoding_snapshot_never_changes_after_it_is_made(session):
    first = session.start("Je suis étudiant.")
    second = session.step()
    session.back()
    third = session.run()
    assert (len(first.steps), len(second.steps)) == (1, 2)  # the step back and the run left them alone
    assert third.active.finished and third.active.text == "I am a student."
    assert third.target_inputs[0] == session.loaded.cfg.bos_id
    assert list(third.target_pieces) == session.loaded.tokenizer.pieces(third.target_inputs)
    # The length limit of greedy decoding: source length + 50, within the model's positions.
    assert third.limit == min(len(third.source.tokens) + 50, session.loaded.cfg.max_len - 1)


def test_what_if_branches_at_the_step_asked_and_runs_the_original_out(session):
    session.start("Je suis étudiant.")
    d = session.step()
    runner_up = d.steps[1].candidates[1].token
    session.step()  # a step queued after the reader chose: the branch still forks at step 1
    branched = session.what_if(1, runner_up)
    assert branched.active is branched.branch and branched.original.finished
    assert [s.token for s in branched.branch.steps] == [d.steps[0].token, runner_up]
    assert branched.branch.steps[1].forced
    assert session.drop_branch().branch is None


def test_find_piece_and_mask_inputs(session):
    tokenizer, unk = session.loaded.tokenizer, session.loaded.cfg.unk_id
    word = next(p for p in tokenizer.pieces(range(4, tokenizer.vocab_size)) if p.startswith("\u2581") and len(p) > 2)
    assert find_piece(tokenizer, word[1:], unk) == tokenizer.piece_id(word)  # typed without the word-start mark
    assert find_piece(tokenizer, "zzqx", unk) is None
    d = session.start("Je suis étudiant.")
    ids, pieces = d.mask_inputs()
    assert ids == [session.loaded.cfg.bos_id, d.steps[0].token] and pieces == tokenizer.pieces(ids)


def test_candidates_of_a_replayed_trace_are_rescored_from_its_logits():
    tokenizer = Tokenizer.load(FIXTURES / "tiny_model" / "spm.model")
    logits = torch.linspace(3.0, -3.0, tokenizer.vocab_size)  # (vocab,)
    step = StepTrace(
        index=0, token=0, piece="<pad>", logprob=0.0, candidates=top_candidates(logits, tokenizer, 10), logits=logits
    )
    hot = view(top_k=3, temperature=2.0)
    assert hot.candidates(step, None) == pytest.approx(hot.candidates(step, tokenizer))  # no tokenizer, same answer
    no_logits = StepTrace(index=0, token=0, piece="<pad>", logprob=0.0, candidates=step.candidates)
    assert hot.candidates(no_logits, None) == step.candidates[:3]


def test_a_trace_session_walks_the_stored_steps_and_refuses_model_work(session, tmp_path):
    from core.analysis.tracefile import load_trace, save_trace
    from core.errors import TTError
    from tt_cli.tui.session import TraceSession

    live = session.start("Je suis étudiant.")
    live = session.run()
    path = save_trace(tmp_path / "t.trace", live.source, list(live.steps), translation=live.active.text)
    replay = TraceSession(load_trace(path))
    assert replay.dims == Dims.of(session.loaded.cfg)  # read off the tensors, no config
    assert len(replay.start("ignored").steps) == 1 and len(replay.back().steps) == 1  # never below the first step
    d = replay.run()
    assert d.original.finished and d.original.text == live.active.text and d.limit == len(live.steps)
    assert list(d.target_pieces)[1:] == list(live.target_pieces)[1:] and len(d.target_pieces) == len(d.steps)
    assert len(replay.step().steps) == len(live.steps)  # never past the last
    assert [s.token for s in replay.back().steps] == [s.token for s in live.steps[:-1]]
    for ask in (lambda: replay.what_if(0, 5), lambda: replay.beam(4, 0.6), lambda: replay.positions(3)):
        with pytest.raises(TTError, match="needs the model"):
            ask()


def test_the_selected_head_toggles_off_and_on():
    v = view()
    assert v.selected_head() is None and v.toggle_head_off() is v  # the mean is not one head
    one = view(head=2, layer=1).toggle_head_off()
    assert one.heads_off == {("cross", 1, 2)} and one.toggle_head_off().heads_off == frozenset()
    grid = view(grid=True, family="decoder_self", cell=(5, 0))  # row 5 = layer 1, head 1 (h = 4)
    assert grid.selected_head() == ("decoder_self", 1, 1)
    assert grid.toggle_head_off().picture != grid.picture  # the heatmap redraws its marks


def test_the_ablated_output_diff_marks_only_what_changed():
    from tt_cli.tui.widgets.sentence import changed

    assert changed(["▁I", "▁am", "▁a", "▁student"], ["▁I", "▁am", "▁student"]) == set()
    assert changed(["▁I", "▁am", "▁a", "▁student"], ["▁I", "▁was", "▁a", "▁student", "."]) == {1, 4}


def test_a_session_with_heads_off_matches_a_masked_stepper(session):
    from core.decode.stepper import Stepper
    from core.model.attention import HeadMask

    session.start("Je suis étudiant.")
    d = session.heads_off(frozenset({("encoder_self", 0, 0), ("cross", 1, 0)}))
    masked = Stepper(
        session.loaded,
        "Je suis étudiant.",
        head_mask=HeadMask.ones(session.loaded.cfg).off("encoder_self", 0, 0).off("cross", 1, 0),
    )
    masked.run()
    assert [s.token for s in d.ablated.line.steps] == [s.token for s in masked.steps]
    assert d.ablated.intact.text == "I am a student." and len(d.steps) == 1
    assert session.heads_off(frozenset()).ablated is None


def test_links_toggle_and_the_head_finder_labels():
    from tt_cli.tui.picture import head_aer

    v = view()
    assert v.toggle_links().links and not v.toggle_links().toggle_links().links
    assert v.toggle_links().picture != v.picture  # the heatmap redraws
    ranking = [
        {"layer": -1, "head": 3, "aer": 0.5},
        {"layer": 1, "head": 3, "aer": 0.4},
        {"layer": 0, "head": None, "aer": 0.1},
        {"layer": 0, "head": 2, "aer": 0.7},
    ]
    assert head_aer(ranking, 2) == {(1, 3): 0.4, (0, 2): 0.7}  # best rule per head; the mean is no head


def test_i_cycles_attention_ixg_ig_and_changes_the_picture():
    v = view()
    seen = [v.attribution]
    for _ in range(3):
        nxt = v.next_attribution()
        assert nxt.picture != v.picture  # the heatmap redraws on each press
        v = nxt
        seen.append(v.attribution)
    assert seen == [None, "ixg", "ig", None]


def test_y_toggles_the_lens_panel():
    v = view().toggle_mode("lens")
    assert v.mode == "lens" and v.toggle_mode("lens").mode == "dist"


def test_a_grid_label_keeps_its_width_with_the_sink_mark():
    from tt_cli.tui.picture import SINK, grid_label

    assert grid_label(0, 1, "off", False) == "L1H2 off" and grid_label(0, 1, "", False) == "L1H2"
    assert grid_label(0, 1, "41%", True) == f"L1H2{SINK}41%" and grid_label(0, 1, "", True) == f"L1H2{SINK}"
