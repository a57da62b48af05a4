"""Lexically constrained beam search (core.decode.constrained): every phrase in the output, placed by the model."""

from __future__ import annotations

import torch

from core.checkpoint import load_model
from core.decode.constrained import constrained_beam_search


def test_constrained_beam_search_holds_every_phrase_and_inflects():
    loaded = load_model(None)
    tok = loaded.tokenizer

    def search(french, phrases):
        src = torch.tensor([tok.encode(french) + [loaded.cfg.eos_id]])
        found = constrained_beam_search(loaded.model, src, [[tok.encode(p), tok.encode(p + "s")] for p in phrases])
        return tok.decode(found.hypotheses[0].tokens), found.met[0]

    text, met = search("Le médecin est arrivé à la gare.", ["physician", "railway station"])
    assert met and "physician" in text and "railway station" in text
    assert search("Je suis étudiant.", []) == ("I am a student.", True)  # no phrase: a plain beam search
