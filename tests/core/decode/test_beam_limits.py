"""Beam search at its length limit, the limit itself, and the in-place cache that beams reorder."""

from __future__ import annotations

import pytest
import torch

from core.decode.beam import beam_search, length_penalty
from core.decode.search import greedy, pad_batch
from core.model.attention import KVCache
from core.model.config import preset
from core.model.transformer import Transformer

A, B = 5, 6  # two ordinary pieces of the 16-piece vocabulary (0-3 are PAD, UNK, BOS, EOS)


def constant_model(probs: dict[int, float], vocab_size: int = 16) -> Transformer:
    """A real tiny Transformer whose next-piece distribution is `probs` at every step, whatever the input.

    The last decoder LayerNorm gets weight 0 and bias e_0, so every decoder output is e_0; the
    output projection (the shared embedding table) then gives logit E[i, 0] to piece i.
    """
    torch.manual_seed(0)
    model = Transformer(preset("tiny", vocab_size=vocab_size)).eval()
    rest = (1.0 - sum(probs.values())) / (vocab_size - len(probs))
    logits = torch.tensor([probs.get(i, rest) for i in range(vocab_size)]).log()
    with torch.no_grad():
        norm = model.decoder_layers[-1].ffn_norm.norm
        norm.weight.zero_()
        norm.bias.zero_()
        norm.bias[0] = 1.0
        model.tgt_embed.table.weight[:, 0] = logits
    return model


def test_the_model_really_is_constant():
    model = constant_model({A: 0.9, 3: 0.05})
    (hyp,) = greedy(model, pad_batch([[7, 8, 3]], 0), max_output=3)
    assert hyp.tokens == [A, A, A]
    assert hyp.token_logprobs == pytest.approx([torch.tensor(0.9).log().item()] * 3, abs=1e-5)


def test_live_beams_finish_at_the_limit_even_when_the_last_hypotheses_finish_in_that_step():
    # p(A) = 0.9, p(EOS) = 0.05, every other piece less: with beam 2, one hypothesis ends per step
    # (the best beam + EOS ranks second), so at step 2 (= max_len) the second one finishes just as
    # the limit is reached. The live beam "A A" (log 0.81 / lp(2)) outranks both finished ones
    # ("" + EOS: log 0.05; "A" + EOS: log 0.045 / lp(2)) and must be kept, as the docstring says.
    model = constant_model({A: 0.9, 3: 0.05, B: 0.02})
    (hyps,) = beam_search(model, pad_batch([[7, 8, 3]], 0), beam_size=2, alpha=0.6, max_output=2, n_best=None)
    best = hyps[0]
    assert best.tokens == [A, A]
    assert len(best.token_logprobs) == 2  # no EOS: it stopped at the limit
    assert best.score == pytest.approx(2 * torch.tensor(0.9).log().item() / length_penalty(2, 0.6), abs=1e-5)
    finished_with_eos = [h.tokens for h in hyps if len(h.token_logprobs) > len(h.tokens)]
    assert sorted(finished_with_eos) == [[], [A]]


@pytest.mark.parametrize("rule", ["greedy", "beam"])
def test_the_limit_is_source_pieces_plus_extra_len(rule):
    # EOS is banned throughout (min_len), so every output runs to the limit: 5 source pieces + 50.
    torch.manual_seed(1)
    model = Transformer(preset("tiny", vocab_size=16, max_len=64)).eval()
    src = pad_batch([[4, 5, 6, 7, 8, 3], [9, 3]], 0)  # 5 and 1 source pieces, each with its EOS
    if rule == "greedy":
        hyps = greedy(model, src, min_len=100)
    else:
        hyps = [h[0] for h in beam_search(model, src, beam_size=3, min_len=100)]
    assert [len(h.tokens) for h in hyps] == [55, 51]
    assert [len(h.token_logprobs) for h in hyps] == [55, 51]


def test_a_reserved_cache_is_written_in_place_and_reordered_within_its_buffer():
    cache = KVCache(torch.zeros(3, 1, 0, 2), torch.zeros(3, 1, 0, 2))
    cache.reserve(8)
    buffer = cache._k.data_ptr()
    for t in range(4):
        step = torch.tensor([0.0, 1.0, 2.0])[:, None, None, None].expand(3, 1, 1, 2) + 10 * t
        cache.append(step, -step)
    assert cache.length == 4 and cache.capacity == 8 and cache._k.data_ptr() == buffer
    cache.select(torch.tensor([2, 2, 0]))  # beams reorder: row 2 twice, row 0 once
    assert cache._k.data_ptr() == buffer and cache.capacity == 8
    assert cache.k[:, 0, :, 0].tolist() == [[2, 12, 22, 32], [2, 12, 22, 32], [0, 10, 20, 30]]
    assert cache.v[:, 0, :, 1].tolist() == [[-2, -12, -22, -32], [-2, -12, -22, -32], [0, -10, -20, -30]]
    cache.select(torch.tensor([1]))  # a sentence leaves the batch: fewer rows, same buffer
    cache.append(torch.full((1, 1, 1, 2), 99.0), torch.full((1, 1, 1, 2), -99.0))
    assert cache._k.data_ptr() == buffer
    assert cache.k[0, 0, :, 0].tolist() == [2, 12, 22, 32, 99]
