"""Decoding rules: greedy, beam search, sampling and the beam trace, on real (tiny) models."""

from __future__ import annotations

import itertools

import pytest
import torch

from core.analysis.beam import beam_steps
from core.decode.beam import beam_search, length_penalty
from core.decode.search import filter_logits, greedy, pad_batch, sample
from core.model.attention import KVCache
from core.model.config import preset
from core.model.transformer import Transformer
from tests.conftest import TINY_TSV

# Rests on the floats of a model trained or decoded here: .ci/run runs it again under a second CPU ISA.
pytestmark = pytest.mark.isa

FIXTURE_FR = [line.split("\t")[0] for line in TINY_TSV.read_text("utf-8").splitlines()][:6]


def random_model(vocab_size: int = 16, seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", vocab_size=vocab_size, **overrides)).eval()


def random_src(vocab_size: int, lengths: list[int], seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return pad_batch([torch.randint(4, vocab_size, (n,), generator=g).tolist() + [3] for n in lengths], pad_id=0)


@pytest.fixture(scope="module")
def fixture_src(tiny_loaded) -> torch.Tensor:
    tok = tiny_loaded.tokenizer
    return pad_batch([tok.encode(s) + [tiny_loaded.model.cfg.eos_id] for s in FIXTURE_FR], tiny_loaded.model.cfg.pad_id)


@torch.inference_mode()
def full_logprob(model: Transformer, src: torch.Tensor, tokens: list[int], eos: bool) -> list[float]:
    """Token log-probs of one output by a teacher-forced pass: no cache, no search."""
    cfg = model.cfg
    out = tokens + ([cfg.eos_id] if eos else [])
    tgt_in = torch.tensor([[cfg.bos_id] + out[:-1]])
    logprobs = model(src, tgt_in).float().log_softmax(-1)[0]  # (T, vocab)
    return [float(logprobs[t, tok]) for t, tok in enumerate(out)]


# ------------------------------------------------------------------------------------- greedy
def test_greedy_translates_a_training_sentence(tiny_loaded, fixture_src):
    (hyp,) = greedy(tiny_loaded.model, fixture_src[:1])
    assert tiny_loaded.tokenizer.decode(hyp.tokens) == "I am a student."
    assert len(hyp.token_logprobs) == len(hyp.tokens) + 1  # EOS is scored
    assert hyp.score == pytest.approx(sum(hyp.token_logprobs))


@pytest.mark.parametrize("alone", [False, True], ids=["batch", "alone"])  # a batch of one has its own loop
@pytest.mark.parametrize("max_output, min_len", [(8, 0), (40, 40)])  # 40 steps: a long cache
def test_greedy_with_the_cache_equals_full_recomputation(max_output, min_len, alone):
    model, lengths = random_model(), [5, 3, 7]
    src, cfg = random_src(16, lengths), model.cfg
    if alone:  # each sentence by itself, unpadded
        hyps = [
            greedy(model, src[i : i + 1, : n + 1], max_output=max_output, min_len=min_len)[0]
            for i, n in enumerate(lengths)
        ]
    else:
        hyps = greedy(model, src, max_output=max_output, min_len=min_len)
    for i, hyp in enumerate(hyps):
        # The tutorial way: re-run the decoder over the whole prefix every step.
        out = [cfg.bos_id]
        with torch.inference_mode():
            for step in range(max_output):
                logp = model(src[i : i + 1], torch.tensor([out])).float().log_softmax(-1)[0, -1]
                logp[[cfg.pad_id, cfg.bos_id] + ([cfg.eos_id] if step < min_len else [])] = float("-inf")
                out.append(int(logp.argmax()))
                if out[-1] == cfg.eos_id:
                    break
        assert hyp.tokens == [t for t in out[1:] if t != cfg.eos_id]
        expected = full_logprob(model, src[i : i + 1], hyp.tokens, eos=out[-1] == cfg.eos_id)
        torch.testing.assert_close(torch.tensor(hyp.token_logprobs), torch.tensor(expected))


def test_kv_cache_appends_trims_and_selects():
    cache = KVCache(torch.zeros(2, 1, 0, 3), torch.zeros(2, 1, 0, 3))
    steps = [torch.randn(2, 1, 1, 3) for _ in range(40)]
    for t, x in enumerate(steps):
        cache.append(x, -x)
        assert cache.length == t + 1
    torch.testing.assert_close(cache.k, torch.cat(steps, dim=2))
    torch.testing.assert_close(cache.v, -torch.cat(steps, dim=2))
    cache.k, cache.v = cache.k[:, :, :5], cache.v[:, :, :5]  # the stepper's undo
    cache.append(steps[0], steps[0])
    assert cache.length == 6
    torch.testing.assert_close(cache.k, torch.cat(steps[:5] + steps[:1], dim=2))
    cache.select(torch.tensor([1, 1]))
    torch.testing.assert_close(cache.v[0], cache.v[1])


def test_kv_cache_moves_rows_into_finished_ones_and_keeps_a_prefix():
    """A batch drops its finished rows by moving the live rows past the survivors' count into their places: rows 0
    and 2 of 4 finish, row 3 moves into row 0; with keys and values in one buffer (the fused step's) and apart."""
    pair = torch.arange(2 * 4 * 1 * 5 * 2, dtype=torch.float32).view(2, 4, 1, 5, 2)  # (2, B, h, capacity, d_k)
    for cache in (KVCache.empty(pair.clone()), KVCache(pair[0, :, :, :3].clone(), pair[1, :, :, :3].clone())):
        if cache.length == 0:
            cache.append(pair[0, :, :, :3], pair[1, :, :, :3])
        before_k, before_v = cache.k.clone(), cache.v.clone()
        cache.move_rows(torch.tensor([0]), torch.tensor([3]), 2)
        assert cache.k.shape == (2, 1, 3, 2) and cache.length == 3
        torch.testing.assert_close(cache.k, before_k[[3, 1]])
        torch.testing.assert_close(cache.v, before_v[[3, 1]])
        cache.append(pair[0, :2, :, :1], pair[1, :2, :, :1])  # the kept rows go on growing
        torch.testing.assert_close(cache.k[:, :, 3], pair[0, :2, :, 0])


def test_a_batch_whose_rows_finish_apart_gives_each_row_its_own_output():
    """Rows run to their own limits (source length + 2, EOS banned), the shortest first: each finished row's place
    is taken by a live row from past the survivors' count, and every row still gets the output and log-probs of its
    own decoding by full recomputation."""
    model, lengths = random_model(), [3, 7, 2, 5, 6, 4]
    src, cfg = random_src(16, lengths), model.cfg
    hyps = greedy(model, src, extra_len=2, min_len=40)
    assert [len(h.tokens) for h in hyps] == [n + 2 for n in lengths]  # each row stopped at its own limit
    for i, hyp in enumerate(hyps):
        out = [cfg.bos_id]
        with torch.inference_mode():
            for _ in range(len(hyp.tokens)):
                logp = model(src[i : i + 1], torch.tensor([out])).float().log_softmax(-1)[0, -1]
                logp[[cfg.pad_id, cfg.bos_id, cfg.eos_id]] = float("-inf")
                out.append(int(logp.argmax()))
        assert hyp.tokens == out[1:], i
        torch.testing.assert_close(
            torch.tensor(hyp.token_logprobs), torch.tensor(full_logprob(model, src[i : i + 1], hyp.tokens, eos=False))
        )


def test_min_len_bans_eos_and_never_emits_pad_or_bos():
    model, src = random_model(), random_src(16, [4, 6])
    for hyp in greedy(model, src, max_output=9, min_len=9):
        assert len(hyp.tokens) == 9 and len(hyp.token_logprobs) == 9
        assert not {0, 2, 3} & set(hyp.tokens)


def test_max_length_is_respected():
    model = random_model(max_len=20)
    src = random_src(16, [2, 5])
    lengths = [2, 5]  # source pieces, without the EOS
    for rule in (greedy, beam_search, sample):
        out = rule(model, src, extra_len=2, min_len=50)
        hyps = [h[0] if isinstance(h, list) else h for h in out]
        assert [len(h.tokens) for h in hyps] == [n + 2 for n in lengths]
        hyps = [h[0] if isinstance(h, list) else h for h in rule(model, src, max_output=4, min_len=50)]
        assert [len(h.tokens) for h in hyps] == [4, 4]
        # The positional table caps everything: the decoder reads BOS + limit - 1 pieces.
        hyps = [h[0] if isinstance(h, list) else h for h in rule(model, src, extra_len=500, min_len=500)]
        assert [len(h.tokens) for h in hyps] == [19, 19]


# -------------------------------------------------------------------------------- beam search
def test_beam_of_one_is_greedy(tiny_loaded, fixture_src):
    model = tiny_loaded.model
    for g, (b,) in zip(greedy(model, fixture_src), beam_search(model, fixture_src, beam_size=1)):
        assert b.tokens == g.tokens
        assert b.token_logprobs == pytest.approx(g.token_logprobs, abs=1e-5)
        assert b.score == pytest.approx(g.score / length_penalty(len(g.token_logprobs), 0.6), abs=1e-5)
    model, src = random_model(), random_src(16, [5, 2, 8])
    for g, (b,) in zip(greedy(model, src, max_output=7), beam_search(model, src, beam_size=1, max_output=7)):
        assert b.tokens == g.tokens


def test_beam_search_is_exact_when_the_beam_holds_every_prefix():
    """Vocabulary 8 (5 pieces + EOS may be emitted), outputs ≤ 3 pieces: 156 outputs in all."""
    model = random_model(vocab_size=8, seed=3)
    src = random_src(8, [4], seed=3)
    cfg = model.cfg
    pieces = [t for t in range(8) if t not in (cfg.pad_id, cfg.bos_id, cfg.eos_id)]
    outputs = [(list(p), True) for n in range(3) for p in itertools.product(pieces, repeat=n)]
    outputs += [(list(p), False) for p in itertools.product(pieces, repeat=3)]
    assert len(outputs) == 156
    alpha = 0.6
    brute = []
    for tokens, eos in outputs:
        lps = full_logprob(model, src, tokens, eos)
        brute.append((sum(lps) / length_penalty(len(lps), alpha), tokens))
    brute.sort(key=lambda x: -x[0])
    (found,) = beam_search(model, src, beam_size=256, alpha=alpha, max_output=3, n_best=None)
    assert len(found) == 156
    assert [h.tokens for h in found[:20]] == [tokens for _, tokens in brute[:20]]
    assert [h.score for h in found] == pytest.approx([score for score, _ in brute], abs=1e-4)


def test_beam_scores_at_least_greedy_under_the_same_normalisation(tiny_loaded, fixture_src):
    model, alpha = tiny_loaded.model, 0.6
    for g, (b,) in zip(greedy(model, fixture_src), beam_search(model, fixture_src, beam_size=4, alpha=alpha)):
        assert b.score >= g.score / length_penalty(len(g.token_logprobs), alpha) - 1e-5


def test_n_best_is_sorted_distinct_and_scored_as_reported():
    model, src = random_model(seed=1), random_src(16, [6, 3])
    for i, hyps in enumerate(beam_search(model, src, beam_size=5, n_best=5, max_output=6)):
        assert len(hyps) == 5
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        assert len({tuple(h.tokens) for h in hyps}) == 5
        row = src[i : i + 1, : int((src[i] != 0).sum())]
        for h in hyps:
            eos = len(h.token_logprobs) == len(h.tokens) + 1
            expected = full_logprob(model, row, h.tokens, eos)
            torch.testing.assert_close(torch.tensor(h.token_logprobs), torch.tensor(expected))
            assert h.score == pytest.approx(h.logprob / length_penalty(len(h.token_logprobs), 0.6))


def test_batched_beam_equals_one_sentence_at_a_time():
    model = random_model(seed=2)
    lengths = [7, 2, 4, 9]
    src = random_src(16, lengths, seed=2)
    batched = beam_search(model, src, beam_size=3, n_best=3, extra_len=3)
    for i, n in enumerate(lengths):
        (alone,) = beam_search(model, src[i : i + 1, : n + 1], beam_size=3, n_best=3, extra_len=3)
        assert [h.tokens for h in batched[i]] == [h.tokens for h in alone]
        assert [h.score for h in batched[i]] == pytest.approx([h.score for h in alone], abs=1e-5)


def test_beam_search_rejects_an_impossible_n_best():
    with pytest.raises(ValueError, match="n_best"):
        beam_search(random_model(), random_src(16, [3]), beam_size=2, n_best=3)


# ----------------------------------------------------------------------------------- sampling
def test_sampling_is_reproducible_with_a_seed():
    model, src = random_model(), random_src(16, [5, 3, 6])
    a = sample(model, src, seed=7, temperature=1.5, max_output=10)
    b = sample(model, src, seed=7, temperature=1.5, max_output=10)
    c = sample(model, src, seed=8, temperature=1.5, max_output=10)
    assert [h.tokens for h in a] == [h.tokens for h in b]
    assert [h.tokens for h in a] != [h.tokens for h in c]


def test_top_k_one_and_top_p_zero_are_greedy(tiny_loaded, fixture_src):
    model = tiny_loaded.model
    expected = [h.tokens for h in greedy(model, fixture_src)]
    assert [h.tokens for h in sample(model, fixture_src, top_k=1, temperature=3.0, seed=0)] == expected
    assert [h.tokens for h in sample(model, fixture_src, top_p=0.0, seed=0)] == expected


def test_filter_logits_keeps_the_nucleus():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]]).log_softmax(-1)  # p ≈ .64 .24 .09 .03
    kept = lambda out: (out > float("-inf")).squeeze(0).tolist()  # noqa: E731
    assert kept(filter_logits(logits, top_p=0.5)) == [True, False, False, False]
    assert kept(filter_logits(logits, top_p=0.8)) == [True, True, False, False]
    assert kept(filter_logits(logits, top_k=3)) == [True, True, True, False]
    assert kept(filter_logits(logits, top_k=3, top_p=0.95)) == [True, True, True, False]


# --------------------------------------------------------------------------------- beam trace
def test_beam_steps_agree_with_beam_search(tiny_loaded, fixture_src):
    model, tok = tiny_loaded.model, tiny_loaded.tokenizer
    src = fixture_src[1:2, : int((fixture_src[1] != 0).sum())]
    steps = beam_steps(model, src, beam_size=3, alpha=0.6, extra_len=50)
    (best,) = beam_search(model, src, beam_size=3, alpha=0.6)
    top = steps[-1].ranking[0]
    assert (top.tokens, top.rank) == (best[0].tokens, 0)
    assert top.normalised == pytest.approx(best[0].score)
    assert tok.decode(top.tokens) == "I am a teacher."
    ranking = steps[-1].ranking
    assert [r.normalised for r in ranking] == sorted((r.normalised for r in ranking), reverse=True)
    assert all(r.normalised == pytest.approx(r.raw_score / length_penalty(r.length, 0.6)) for r in ranking)
    finished = [c for s in steps for c in s.candidates if c.fate == "finished"]
    assert sorted(tuple(c.tokens[:-1]) for c in finished) == sorted(tuple(r.tokens) for r in ranking)
    previous_kept = [[]]
    for step in steps:
        assert step.index == len(previous_kept[0])
        assert [c.score for c in step.candidates] == sorted((c.score for c in step.candidates), reverse=True)
        for c in step.candidates:
            assert c.tokens == previous_kept[c.parent] + [c.token]  # extends a beam that was kept
        kept = [c.tokens for c in step.candidates if c.fate == "kept"]
        assert 1 <= len(kept) <= 3
        previous_kept = kept
    assert all(not s.ranking for s in steps[:-1])
