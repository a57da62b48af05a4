"""One trace spine: `tt translate --json` (one teacher-forced pass) and the Stepper behind `tt inspect`
(step by step over the KV cache) must show the same pieces and the same attention, weight for weight."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from core.decode.stepper import Stepper
from core.decode.trace import attention_grid, attention_matrix, piece_label, trace_steps
from core.model.attention import HeadMask
from tt_cli.main import app

# Messy on purpose: a control character and blanks at the ends go through the one prepare_source rule.
SENTENCES = ["Je suis étudiant.", "  Il est\x00médecin. "]
ATOL = 1e-4  # the JSON rounds to 4 places


def as_tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_translate_json_and_the_stepper_agree(tiny_model_dir, tiny_loaded, sentence):
    result = CliRunner().invoke(
        app, ["translate", "--model", str(tiny_model_dir), "--greedy", "--json", "--attention", "all", sentence]
    )
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    att = obj["attention"]

    stepper = Stepper(tiny_loaded, sentence)
    stepper.run()
    source, steps, cfg = stepper.source, stepper.steps, tiny_loaded.cfg

    # Piece for piece: the same encoder input and the same output, EOS step included.
    assert att["source_pieces"] == source.pieces
    assert att["output_pieces"] == [s.piece for s in steps]
    assert obj["tokens"] == tiny_loaded.tokenizer.pieces(stepper.tokens)
    assert obj["token_logprobs"] == pytest.approx([s.logprob for s in steps], abs=ATOL)

    # Weight for weight, every family, layer and head.
    assert len(att["encoder_self"]) == cfg.n_encoder_layers and len(att["cross"]) == cfg.n_decoder_layers
    for layer in range(cfg.n_encoder_layers):
        for head in range(cfg.h):
            want = attention_matrix(source, steps, "encoder_self", layer, head)
            torch.testing.assert_close(as_tensor(att["encoder_self"][layer][head]), want, atol=ATOL, rtol=0)
    for layer in range(cfg.n_decoder_layers):
        for head in range(cfg.h):
            want = attention_matrix(source, steps, "cross", layer, head)
            torch.testing.assert_close(as_tensor(att["cross"][layer][head]), want, atol=ATOL, rtol=0)
            rows = att["decoder_self"][layer][head]
            assert [len(r) for r in rows] == [t + 1 for t in range(len(steps))]  # row t sees 0..t
            for t, row in enumerate(rows):
                torch.testing.assert_close(as_tensor(row), steps[t].decoder_self[layer][head], atol=ATOL, rtol=0)


def test_teacher_forced_steps_equal_stepped_ones(tiny_loaded):
    """The two builders behind those views agree exactly, candidates included."""
    stepper = Stepper(tiny_loaded, SENTENCES[0], top_k=5)
    stepper.run()
    source, steps = trace_steps(tiny_loaded, stepper.source.tokens, [s.token for s in stepper.steps], top_k=5)
    assert source.tokens == stepper.source.tokens and source.pieces == stepper.source.pieces
    for a, b in zip(steps, stepper.steps, strict=True):
        assert (a.index, a.token, a.piece) == (b.index, b.token, b.piece)
        assert [c.token for c in a.candidates] == [c.token for c in b.candidates]
        assert [c.prob for c in a.candidates] == pytest.approx([c.prob for c in b.candidates], abs=1e-5)
        torch.testing.assert_close(a.logits, b.logits, atol=1e-4, rtol=1e-4)
    for family in ("encoder_self", "decoder_self", "cross"):
        for head in (None, 1):
            torch.testing.assert_close(
                attention_matrix(source, steps, family, -1, head),
                attention_matrix(stepper.source, stepper.steps, family, -1, head),
                atol=1e-5,
                rtol=1e-4,
            )
        torch.testing.assert_close(
            attention_grid(source, steps, family, 1),
            attention_grid(stepper.source, stepper.steps, family, 1),
            atol=1e-5,
            rtol=1e-4,
        )


def test_piece_label():
    assert piece_label("\u2581étudiant", 10) == "·étudiant"
    assert piece_label("\u2581anticonstitutionnellement", 8) == "·antico…"
    assert piece_label("", 5) == "∅"


def test_a_head_mask_reaches_both_builders_alike(tiny_loaded):
    """Heads off in the Stepper (KV cache) and in the teacher-forced pass: the same steps, and not the plain ones."""
    mask = HeadMask.ones(tiny_loaded.cfg)
    for layer in range(tiny_loaded.cfg.n_decoder_layers):
        for head in range(tiny_loaded.cfg.h - 1):  # leave one cross-attention head per layer
            mask = mask.off("cross", layer, head)
    stepper = Stepper(tiny_loaded, SENTENCES[0], head_mask=mask)
    stepper.run()
    out_ids = [s.token for s in stepper.steps]
    _, steps = trace_steps(tiny_loaded, stepper.source.tokens, out_ids, head_mask=mask)
    for a, b in zip(steps, stepper.steps, strict=True):
        torch.testing.assert_close(a.logits, b.logits, atol=1e-4, rtol=1e-4)
    _, plain = trace_steps(tiny_loaded, stepper.source.tokens, out_ids)
    assert not torch.allclose(plain[0].logits, steps[0].logits, atol=1e-3)
