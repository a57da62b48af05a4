"""Head pattern kinds, reach, saturation and head differences, on planted attention and real models."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from core.analysis.patterns import (
    KIND_LEGEND,
    KIND_MARKS,
    KINDS,
    MIXED,
    _accumulate,
    _key_masks,
    _Sums,
    head_patterns,
    label,
    sentence_kinds,
    word_ids,
)
from core.analysis.reference import encode_pairs
from core.model.attention import AttentionInternals, Head
from tests.core.analysis.planted_heads import PLANTED, planted_trace

PAIRS = [("Je suis étudiant.", "I am a student."), ("Le chat dort.", "The cat is sleeping.")]


def planted(weights: torch.Tensor) -> AttentionInternals:
    """Internals whose weights are the given (B, h, T, T) tensor; scores = log weights (so softmax gives them back)."""
    b, h, t, _ = weights.shape
    q = torch.zeros(b, h, t, 4)
    return AttentionInternals(q, q, q, weights.clamp(min=1e-30).log() / 2, weights, q)


def test_planted_heads_get_their_kind():
    t = 8
    prev = torch.zeros(t, t)
    prev[0, 0] = 1.0
    for i in range(1, t):
        prev[i, i - 1] = 1.0
    diag = torch.eye(t)
    nxt = torch.zeros(t, t)
    nxt[-1, -1] = 1.0
    for i in range(t - 1):
        nxt[i, i + 1] = 1.0
    eos = torch.zeros(t, t)
    eos[:, -1] = 1.0
    uniform = torch.full((t, t), 1 / t)
    w = torch.stack([prev, diag, nxt, eos, uniform])[None]  # (1, 5, T, T)
    tokens = torch.tensor([[10, 11, 12, 13, 14, 15, 16, 3]])  # EOS (3) last
    pieces = [["\u2581a", "b", "\u2581c", "\u2581d", "e", "f", "\u2581g", "</s>"]]
    real = torch.ones(1, t, dtype=torch.bool)
    visible = real[:, None, :].expand(-1, t, -1)
    s = _Sums(5)
    _accumulate(s, planted(w), real, visible, _key_masks(tokens, pieces))
    shares = [{k: float(s.shares[k][h]) / s.queries for k in KINDS} for h in range(5)]
    uniform_share = {k: s.uniform[k] / s.queries for k in KINDS}
    assert [label(sh, uniform_share) for sh in shares] == ["previous", "diagonal", "next", "parked", "mixed"]
    # Reach: the previous-token head reads 7 of 8 rows one piece back; uniform reads (Σ|i−j|)/T² farther.
    assert float(s.distance[0]) / s.queries == pytest.approx(7 / 8)
    assert float(s.distance[4]) / s.queries == pytest.approx(s.uniform_distance / s.queries)
    # Saturation: the one-hot heads saturate every row, the uniform head none.
    assert float(s.saturated[0]) == s.rows and float(s.saturated[4]) == 0
    # The same-word share: piece "b" shares its word with "▁a", "e" and "f" with "▁d".
    assert shares[0]["same word"] == pytest.approx(3 / 8)  # b→a, e→d, f→e


def test_the_kind_holding_the_most_mass_among_those_that_pass_wins():
    uniform = dict.fromkeys(KINDS, 0.1)
    shares = dict.fromkeys(KINDS, 0.0) | {"previous": 0.55, "parked": 0.9, "next": 0.25}
    assert label(shares, uniform) == "parked"
    assert label(shares | {"parked": 0.45}, uniform) == "previous"  # under half the mass: not parked
    assert label(shares, uniform | {"parked": 0.4}) == "previous"  # 0.9 is under 3 × uniform's 0.4
    assert label(shares | {"previous": 0.2, "parked": 0.2}, uniform) == MIXED


def test_word_ids():
    assert word_ids(["<s>", "\u2581Le", "\u2581ch", "at", "."]) == [0, 1, 2, 2, 2]


def test_heads_of_a_real_model(tiny_loaded):
    p = head_patterns(tiny_loaded, PAIRS)
    cfg = tiny_loaded.cfg
    assert len(p.heads) == (cfg.n_encoder_layers + cfg.n_decoder_layers) * cfg.h
    for h in p.heads:
        assert h.kind in (*KINDS, "mixed")
        assert 0 <= h.saturated_scaled <= 1 and 0 <= h.saturated_unscaled <= 1
        assert all(0 <= v <= 1 + 1e-6 for v in h.shares.values())
        if h.family == "decoder_self":
            assert h.shares["next"] == 0  # the look-ahead mask hides it
    assert all(0 <= layer.head_difference <= 1 for layer in p.layers)
    assert p.queries["encoder_self"] == sum(len(tiny_loaded.tokenizer.encode(s)) + 1 for s, _ in PAIRS)


def test_identical_heads_do_not_differ_and_blank_queries_attend_uniformly(tiny_model_dir):
    from core.checkpoint import load_model

    loaded = load_model(tiny_model_dir)
    cfg = loaded.cfg
    with torch.no_grad():
        for layer in loaded.model.encoder_layers:
            attn = layer.self_attn
            attn.w_q.weight.zero_()
            attn.w_q.bias.zero_()  # every score 0: uniform attention over the visible keys
    p = head_patterns(loaded, PAIRS)
    for h in (h for h in p.heads if h.family == "encoder_self"):
        assert h.distance == pytest.approx(h.uniform_distance, abs=1e-5)
        assert h.saturated_scaled == 0 and h.saturated_unscaled == 0
        assert h.kind == "mixed"
    enc_layers = [layer for layer in p.layers if layer.family == "encoder_self"]
    assert all(layer.head_difference == pytest.approx(0, abs=1e-6) for layer in enc_layers)
    assert cfg.h > 1


def test_one_sentences_planted_heads_get_their_kind_from_its_trace():
    """Every self-attention head of a planted 3 + 1-layer trace: each encoder head a different kind,
    the decoder's one-hot previous-token head and its uniform head (mixed); cross gets none."""
    source, steps = planted_trace()
    kinds = sentence_kinds(source, steps)
    assert {head: k.kind for head, k in kinds.items()} == PLANTED
    assert kinds["encoder_self", 0, 0].shares["previous"] == pytest.approx(6 / 7)  # row 0 has no key before
    assert kinds["decoder_self", 0, 1].shares == pytest.approx(kinds["decoder_self", 0, 1].uniform)
    assert kinds["encoder_self", 2, 1].uniform["parked"] == pytest.approx(2 / 7)  # the first piece and </s>
    # A trace without the decoder's weights: the encoder's kinds, and no guess at the decoder's.
    bare = [replace(st, decoder_self=[]) for st in steps]
    assert {head for head in sentence_kinds(source, bare)} == {h for h in PLANTED if h.family == "encoder_self"}


def test_one_sentence_read_off_its_decoding_agrees_with_head_patterns(tiny_loaded):
    """The greedy decoding's own weights (KV cache, step by step) give the shares that the teacher-forced
    pass of head_patterns gives on the sentence and that output: the two entry points, one rule."""
    from core.decode.stepper import Stepper

    greedy = Stepper(tiny_loaded, PAIRS[0][0])
    greedy.run()
    src_ids, ref_ids = encode_pairs(tiny_loaded, [(PAIRS[0][0], greedy.output_text)])[0]
    assert src_ids == greedy.source.tokens and ref_ids == [s.token for s in greedy.steps]  # the same pieces
    kinds = sentence_kinds(greedy.source, greedy.steps)
    patterns = head_patterns(tiny_loaded, [(PAIRS[0][0], greedy.output_text)])
    assert set(kinds) == {Head(p.family, p.layer, p.head) for p in patterns.heads}
    for p in patterns.heads:
        got = kinds[p.family, p.layer, p.head]
        assert got.kind == p.kind
        assert got.shares == pytest.approx(p.shares, abs=1e-5)
        assert got.uniform == pytest.approx(p.uniform, abs=1e-9)


def test_every_kind_has_a_mark_of_one_cell_named_in_the_legend():
    from rich.cells import cell_len

    assert set(KIND_MARKS) == {*KINDS, MIXED}
    assert len(set(KIND_MARKS.values())) == len(KIND_MARKS)  # no two kinds look alike
    assert all(cell_len(mark) == 1 for mark in KIND_MARKS.values())
    assert all(mark in KIND_LEGEND for mark in KIND_MARKS.values())
