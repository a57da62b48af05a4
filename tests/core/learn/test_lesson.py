"""The lesson's steps as data, their toys, the plain rendering and the live numbers (against core)."""

from __future__ import annotations

import math

import pytest
import torch

from core.learn import topic_toys, toys
from core.learn.lesson import Opening, Step, live_matrix, live_numbers, own_step, parse_pair
from core.learn.steps import STEPS, render_plain, step

NOTES_ORDER = [
    "pieces",
    "alignment",
    "contextual",
    "the_cat_sat",
    "attention_table",
    "coreference",
    "scaling",
    "multi_head",
    "cost",
    "positions",
    "embed_position",
    "add_norm",
    "residual_norm",
    "encoder_stack",
    "dropout",
    "masks",
    "cross_attention",
    "whole",
    "output",
    "generation",
    "training",
    "optimizer",
    "beam",
    "bleu",
]


def test_steps_follow_the_notes_and_are_complete():
    assert [s.key for s in STEPS] == NOTES_ORDER
    for s in STEPS:
        assert s.title and s.idea and s.formula and s.opens.name and s.sentences and all(s.sentences)
        assert callable(s.live), s.key  # every step has live numbers
        assert s.look.startswith("Look at "), s.key  # one line: what to look at, and what it should show


def test_a_step_is_checked_where_it_is_written():
    """A misspelt family, or sentences that do not fit what the step takes, fail when the step is made."""
    with pytest.raises(ValueError, match="unknown attention family 'encoder_selff'"):
        Opening("grid", family="encoder_selff", grid=True)
    with pytest.raises(ValueError, match="takes pair: 2 sentence"):
        Step(
            key="k",
            title="t",
            idea=("i",),
            formula="f",
            toy=None,
            toy_source="s",
            sentences=("Je suis.",),
            takes="pair",
            live=lambda loaded, src, ref: [],
            opens=Opening("reference"),
            look="Look at nothing.",
        )


def test_a_learners_sentence_is_read_in_one_place():
    assert parse_pair("Je suis. | I am.") == ("Je suis.", "I am.")
    assert parse_pair(" Je suis. ") == ("Je suis.", None) and parse_pair("Je suis. |") == ("Je suis.", None)
    for bad in (" | I am.", "a | b | c", ""):
        with pytest.raises(ValueError, match="give a French sentence"):
            parse_pair(bad)
    training, pieces, coreference = step("training"), step("pieces"), step("coreference")
    assert own_step(training, "Je suis. | I am.").sentences == ("Je suis.", "I am.")
    assert own_step(training, "Je suis. | I am.").reference == "I am."
    assert own_step(training, "Je suis.") is training  # no reference given: the step keeps its pair
    assert own_step(pieces, "Je suis. | I am.").sentences == ("Je suis.",) and pieces.reference is None
    assert own_step(coreference, "Je suis.") is coreference


def test_step_lookup():
    assert step(1) is STEPS[0] and step("7") is step("scaling")
    with pytest.raises(ValueError, match="1 to 24"):
        step(0)
    with pytest.raises(ValueError, match="no step 'nope'"):
        step("nope")


def test_the_four_slips_are_told():
    said = " ".join(f"{slip.says} {slip.right}" for s in STEPS for slip in s.slips)
    assert "after the softmax" in step("masks").slips[0].says
    assert "512" in step("scaling").slips[0].says
    assert "between 0 and 1" in step("add_norm").slips[0].says
    assert "extrapolation" in step("positions").slips[0].says and "longer" in step("positions").slips[0].says
    assert "0.000699" in said and "7.07" in said


def test_softmax_then_mask_softmaxes_first_then_zeroes():
    """The wrong order the slip names, done as it says: a softmax over every key (the future's included),
    then the masked weights set to 0 — the kept weights are the full softmax's, so rows fall short of 1."""
    x = toys.SEED_DECODER_INPUTS
    full = (x @ x.T / 2).softmax(-1)  # (4, 4): every key, the future and the pad included
    keep = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]], dtype=torch.float)
    masks = _toy(toys.masks)
    assert masks["softmax first, then masked: weights"] == toys._v(full * keep, 3)
    assert masks["softmax first, then masked: rows sum to"] == toys._v((full * keep).sum(-1), 3)


def test_the_reversed_cross_attention_of_003_is_a_slip():
    (slip,) = [s for s in step("cross_attention").slips if s.note.startswith("003")]
    assert "Query and the Key" in slip.says and "Value" in slip.says
    assert (
        "queries come from the decoder" in slip.right and "keys and the values both come from the encoder" in slip.right
    )
    text = render_plain(step("cross_attention"))
    assert "Where a note is wrong — 003 (Decoder):" in text and slip.right in text
    assert _toy(toys.cross_attention)["Q, K from the encoder, V from the decoder"].endswith("no product")


def _toy(fn) -> dict[str, str]:
    return dict(fn())


def test_toys_are_computed_by_tt():
    assert "[7.07, 22.63]" in _toy(toys.scaling)["money/bank [10, 32] / √2"]
    assert _toy(toys.scaling)["softmax([6, 4] / √4)"] == "[0.73, 0.27]"
    assert _toy(toys.add_and_norm)["LayerNorm"].startswith("[-1.34, -0.45, 0.45, 1.34]")
    masks = _toy(toys.masks)
    assert "1.74" in masks["Q Kᵀ (unscaled)"] and "4.46" in masks["Q Kᵀ (unscaled)"]
    assert masks["rows sum to"] == "[1.000, 1.000, 1.000, 1.000]"
    assert masks["softmax first, then masked: rows sum to"] == "[0.219, 0.431, 0.938, 0.750]"
    assert "0.000699" in _toy(topic_toys.adam)["peak lr, d_model 512, warm-up 4000"]
    assert _toy(toys.the_cat_sat)["Output(The)"].startswith("[0.8446, 0.5777, 0.8446, 0.5777]")
    assert _toy(toys.positional_by_hand)["PE d=4, pos 0"] == "[0.0000, 1.0000, 0.0000, 1.0000]"
    assert "same" in _toy(toys.multi_head_shapes)["Q Kᵀ multiply-adds, 1 head"]
    for s in STEPS:
        if s.toy is not None:
            assert all(label and value for label, value in s.toy())


def test_render_plain_shows_every_part():
    s = step("masks")
    text = render_plain(s, [("row 0", "[1.0]")])
    assert text.startswith("Step 16/24: Decoder masks and the masked softmax\n")
    assert s.formula in text and s.idea[0] in text
    assert "computed by tt:" in text and "1.74" in text
    assert f"On the live model ({s.sentence_line}):\n  {s.look}\n  row 0: [1.0]" in text
    assert "it says: the masking is a manipulation done after the softmax" in text
    assert "On the live model" not in render_plain(s)


def test_live_numbers_of_every_step_on_the_tiny_model(tiny_loaded):
    for s in STEPS:
        lines = live_numbers(s, tiny_loaded)
        assert lines and all(isinstance(a, str) and isinstance(b, str) for a, b in lines), s.key
        assert render_plain(s, lines).count("\n") > 5


def test_live_numbers_come_from_core(tiny_loaded):
    from core.analysis.internals import source_walk

    sentence = "Je suis étudiant."
    walk = source_walk(tiny_loaded, sentence)
    an = dict(live_numbers(step("add_norm"), tiny_loaded, sentence))
    t = walk.layers[0].attention_norm
    assert an["μ, σ"] == f"{float(t.mean[1]):.3f}, {float(t.std[1]):.3f}"
    shapes = dict(live_numbers(step("multi_head"), tiny_loaded, sentence))
    cfg = tiny_loaded.cfg
    assert shapes["Q = x W^Q, split into heads"] == f"1 × {cfg.h} × {len(walk.ids)} × {cfg.d_k}"
    pos = dict(live_numbers(step("positions"), tiny_loaded, sentence))
    assert float(pos["shuffled words, no positions: error"]) < 1e-5
    assert float(pos["shuffled words, with positions: error"]) > 1e-2
    out = live_numbers(step("output"), tiny_loaded, sentence)
    probs = [float(p) for _, p in out]
    assert probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-6
    masks = dict(live_numbers(step("masks"), tiny_loaded, sentence))
    assert masks["decoder: weight above the diagonal"] == "0.0"
    beam = dict(live_numbers(step("beam"), tiny_loaded, sentence))
    from core import Translator

    assert beam["greedy"] == Translator(tiny_loaded.path, method="greedy").translate([sentence])[0].text
    emb = dict(live_numbers(step("embed_position"), tiny_loaded, sentence))
    norm = float(walk.embeddings[1].norm())
    assert emb["‖E·√d‖, ‖PE‖"].startswith(f"{norm:.2f}")
    assert math.isclose(float(walk.positions[1].norm()), float(emb["‖E·√d‖, ‖PE‖"].split(", ")[1]), abs_tol=0.01)
    assert torch.is_tensor(walk.memory)


@pytest.mark.parametrize("overrides", [{"n_encoder_layers": 3, "n_decoder_layers": 1}, {"norm": "pre", "h": 2}])
def test_every_step_and_claim_on_other_shapes(tiny_loaded, overrides):
    """Unequal encoder/decoder depths, pre-norm, another head count: every view and claim still runs."""
    from core.analysis.claims import VERDICTS, all_claims
    from core.checkpoint import LoadedModel
    from core.model.config import preset
    from core.model.transformer import Transformer

    torch.manual_seed(0)
    cfg = preset("tiny", vocab_size=tiny_loaded.cfg.vocab_size, **overrides)
    loaded = LoadedModel(Transformer(cfg).eval(), tiny_loaded.tokenizer, tiny_loaded.path, {})
    for s in STEPS:
        assert live_numbers(s, loaded), s.key
    layers = dict(live_numbers(step("encoder_stack"), loaded))
    assert sum(k.startswith("layer ") for k in layers) == cfg.n_encoder_layers
    claims = all_claims(loaded, [("Je suis étudiant.", "I am a student.")], timing=False)
    assert all(c.verdict in VERDICTS for c in claims)


def test_live_matrices_come_from_the_model(tiny_loaded):
    from core.analysis.internals import source_walk

    sentence = "Je suis étudiant."
    drawn = {"alignment", "attention_table", "coreference", "masks", "cross_attention", "generation"}
    assert {s.key for s in STEPS if live_matrix(s, tiny_loaded) is not None} == drawn
    assert {s.key for s in STEPS if s.matrix is not None} == drawn
    walk = source_walk(tiny_loaded, sentence)
    table = live_matrix(step("attention_table"), tiny_loaded, sentence)
    assert table.rows == table.cols == walk.pieces
    expected = walk.layers[0].attention.weights[0].mean(0)
    assert torch.allclose(torch.tensor(table.weights), expected, atol=1e-6)
    masks = live_matrix(step("masks"), tiny_loaded, sentence)
    w = torch.tensor(masks.weights)
    assert masks.rows[0] == "<s>" and torch.allclose(w.sum(-1), torch.ones(len(w)), atol=1e-5)
    assert float(w.triu(1).sum()) == 0.0 and masks.hidden[0][1] and not masks.hidden[1][0]
    cross = live_matrix(step("cross_attention"), tiny_loaded, sentence)
    assert cross.cols == walk.pieces and cross.rows[-1] == "</s>"
    from core import Translator

    greedy = Translator(tiny_loaded.path, method="greedy").translate([sentence])[0].pieces
    assert cross.rows[:-1] == list(greedy)


# ------------------------------------------------------------------------------- on the shipped model
# What the shipped model must write for each sentence a live step opens on: a lesson that reads attention off a
# broken translation teaches nothing (a step whose point is a mistake would say so, and be listed apart).
RIGHT = {
    "L'accord sur la zone économique européenne a été signé en août 1992.": {
        "The agreement on the European economic zone was signed in August 1992.",
        "The agreement on the European Economic Area was signed in August 1992.",
        "The agreement on the European economic area was signed in August 1992.",
    },
    "L'animal n'a pas traversé la rue parce qu'il était fatigué.": {
        "The animal didn't cross the street because it was tired.",
        "The animal did not cross the street because it was tired.",
    },
    "Le chat dort sur le canapé.": {"The cat is sleeping on the couch.", "The cat is sleeping on the sofa."},
    "Je n'ai pas le temps de lire.": {"I don't have time to read.", "I have no time to read."},
    "Nous avons le temps de manger.": {"We have time to eat."},
    "Le temps est magnifique aujourd'hui.": {"The weather is beautiful today.", "The weather is lovely today."},
}


@pytest.fixture(scope="module")
def shipped():
    from core.checkpoint import load_model

    return load_model(None)


def test_every_live_step_opens_on_a_sentence_the_shipped_model_translates_right(shipped):
    from core.decode.translate import TranslateOptions, translate_lines

    sources = sorted({part for s in STEPS for part in s.sentences} - {"The cat is sleeping on the sofa."})
    assert set(sources) == set(RIGHT), "a step's sentence changed: check the shipped model translates it right"
    out = [t.text for t in translate_lines(shipped, sources, TranslateOptions())]
    wrong = [(s, t) for s, t in zip(sources, out) if t not in RIGHT[s]]
    assert not wrong, wrong


def test_the_contextual_step_separates_the_senses_where_the_control_does_not(shipped):
    """Step 2's proof: by the last layer the other sense of 'temps' is far further from the first sentence's
    than the same sense is (a claim that a same-sense pair would also show proves nothing)."""
    from core.learn.steps import CONTEXT_SENTENCES

    lines = live_numbers(step("contextual"), shipped)
    same, other = (float(x) for x in lines[-1][1].split(" · "))
    assert lines[-1][0] == f"layer {shipped.cfg.n_encoder_layers}"
    assert same - other >= 0.2, lines
    assert len(CONTEXT_SENTENCES) == 3
