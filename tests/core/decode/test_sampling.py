"""Sampling draws from the distribution that temperature, top-k and top-p define, and nothing else.

The expected distributions are computed here from the model's own probabilities (a full forward
pass, not the decoding cache) with plain Python, following the definitions: temperature T gives
p^(1/T) renormalised; top-k keeps the k most probable pieces; top-p keeps the smallest set of most
probable pieces whose probability reaches p (of what top-k left), all renormalised. Frequencies are
checked against them with a binomial bound; the seeds are fixed, so the runs are reproducible.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from typer.testing import CliRunner

from core.decode.search import greedy, pad_batch, sample
from core.model.config import preset
from core.model.transformer import Transformer
from tests.conftest import TINY_TSV
from tt_cli.main import app

FIXTURE_FR = [line.split("\t")[0] for line in TINY_TSV.read_text("utf-8").splitlines()][:6]
N = 6000  # draws per distribution: one batch of N copies of one source, one piece each


@pytest.fixture(scope="module")
def spread_model() -> Transformer:
    """A random tiny model whose first-piece distribution is spread out (EOS .27, then .19, .15, .09, ...)."""
    torch.manual_seed(0)
    return Transformer(preset("tiny", vocab_size=16, share_embeddings=False)).eval()


SRC = torch.tensor([[7, 11, 4, 9, 5, 3]])  # five pieces and EOS


def allowed_probs(model: Transformer, src: torch.Tensor, prefix: list[int]) -> list[float]:
    """p(next piece | src, prefix) by a full forward pass; PAD and BOS, which decoding bans, get 0."""
    cfg = model.cfg
    with torch.no_grad():
        logits = model(src, torch.tensor([[cfg.bos_id, *prefix]]))[0, -1].double()
    logits[[cfg.pad_id, cfg.bos_id]] = -math.inf
    return logits.softmax(-1).tolist()


def shaped(p: list[float], temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> list[float]:
    """The sampling distribution the options define, from the definitions."""
    q = [x ** (1 / temperature) for x in p]
    order = sorted(range(len(q)), key=lambda i: -q[i])
    keep = [i for i in order if q[i] > 0]
    if top_k:
        keep = keep[:top_k]
    if top_p < 1:
        total, mass, nucleus = sum(q[i] for i in keep), 0.0, []
        for i in keep:
            if nucleus and mass >= top_p:  # the most probable piece always stays
                break
            nucleus.append(i)
            mass += q[i] / total
        keep = nucleus
    z = sum(q[i] for i in keep)
    return [q[i] / z if i in keep else 0.0 for i in range(len(q))]


def first_pieces(model: Transformer, **options) -> list[int]:
    """The first piece of N samples (EOS when the output is empty)."""
    hyps = sample(model, SRC.expand(N, -1), max_output=1, seed=1234, **options)
    return [h.tokens[0] if h.tokens else model.cfg.eos_id for h in hyps]


def assert_frequencies_match(pieces: list[int], expected: list[float]) -> None:
    for piece, q in enumerate(expected):
        observed = pieces.count(piece)
        if q == 0:
            assert observed == 0, f"piece {piece} is outside the allowed set but was drawn {observed} times"
        else:
            # 5 standard deviations of a binomial count (+1 for small q): a false alarm is ~1e-6 per piece.
            bound = 5 * math.sqrt(N * q * (1 - q)) + 1
            assert abs(observed - N * q) <= bound, (
                f"piece {piece}: drawn {observed} times, expected {N * q:.0f} ± {bound:.0f}"
            )


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"temperature": 2.0},
        {"temperature": 0.5},
        {"top_k": 3},
        {"top_p": 0.6},
        {"top_k": 5, "top_p": 0.8, "temperature": 1.5},
    ],
    ids=["plain", "T=2", "T=0.5", "top-k=3", "top-p=0.6", "k5-p0.8-T1.5"],
)
def test_frequencies_match_the_shaped_probabilities(spread_model, options):
    p = allowed_probs(spread_model, SRC, [])
    expected = shaped(p, **options)
    assert_frequencies_match(first_pieces(spread_model, **options), expected)
    if "top_k" in options or "top_p" in options:
        assert sum(q > 0 for q in expected) < sum(x > 0 for x in p) - 3  # the cut removed something real


def test_temperature_sharpens_and_flattens(spread_model):
    p = allowed_probs(spread_model, SRC, [])
    best = max(range(len(p)), key=p.__getitem__)
    share = {t: first_pieces(spread_model, temperature=t).count(best) / N for t in (3.0, 1.0, 0.5, 0.25, 0.1, 0.01)}
    assert list(share.values()) == sorted(share.values())  # colder, more often the most probable piece
    assert share[3.0] < p[best] < share[0.25]
    assert share[0.01] == 1.0  # temperature → 0 is greedy


def test_temperature_towards_zero_gives_greedy_outputs(tiny_loaded):
    model, tok = tiny_loaded.model, tiny_loaded.tokenizer
    src = pad_batch([tok.encode(s) + [model.cfg.eos_id] for s in FIXTURE_FR], model.cfg.pad_id)
    expected = [h.tokens for h in greedy(model, src)]
    assert [h.tokens for h in sample(model, src, temperature=0.01, seed=5)] == expected
    assert [h.tokens for h in sample(model, src, temperature=2.0, seed=5)] != expected  # and warm it is not


@pytest.mark.parametrize("options", [{"top_k": 3}, {"top_p": 0.5}], ids=["top-k=3", "top-p=0.5"])
def test_no_piece_of_a_whole_output_leaves_the_allowed_set(tiny_loaded, options):
    """Hot sampling (T = 3) on the fixture model; every piece of every output, EOS included, is
    re-checked against the model's distribution at its step."""
    model, tok = tiny_loaded.model, tiny_loaded.tokenizer
    cfg = model.cfg
    sources = [tok.encode(s) + [cfg.eos_id] for s in FIXTURE_FR] * 10
    hyps = sample(model, pad_batch(sources, cfg.pad_id), temperature=3.0, seed=11, max_output=12, **options)
    assert len({tuple(h.tokens) for h in hyps}) > 30  # hot enough that the outputs vary
    checked = 0
    for source, h in zip(sources, hyps):
        pieces = h.tokens + ([cfg.eos_id] if len(h.token_logprobs) > len(h.tokens) else [])
        for t, piece in enumerate(pieces):
            q = shaped(allowed_probs(model, torch.tensor([source]), h.tokens[:t]), temperature=3.0, **options)
            assert q[piece] > 0, f"{tok.pieces(h.tokens)}: piece {t} is outside the allowed set"
            checked += 1
    assert checked > 300


# ------------------------------------------------------------------------------------ the CLI
@pytest.fixture(scope="module")
def tt(tiny_model_dir):
    def invoke(*args: str):
        result = CliRunner().invoke(app, ["translate", "--model", str(tiny_model_dir), *args])
        assert result.exit_code == 0, result.stderr
        return result.stdout

    return invoke


def test_cli_sampling_options_that_mean_greedy(tt):
    lines = FIXTURE_FR[:3]
    expected = tt("--greedy", *lines)
    assert tt("--sample", "--top-k", "1", "--temperature", "5", "--seed", "3", *lines) == expected
    assert tt("--sample", "--top-p", "0", "--temperature", "5", "--seed", "3", *lines) == expected
    assert tt("--sample", "--temperature", "0.01", "--seed", "3", *lines) == expected


def test_cli_sample_is_seeded_and_obeys_top_k(tt, tiny_loaded):
    lines = ["Je suis étudiant."] * 30
    args = ["--raw", "--sample", "--temperature", "3", "--top-k", "3", "--json"]  # the model's record
    out = tt(*args, "--seed", "1", *lines)
    assert tt(*args, "--seed", "1", *lines) == out  # same seed, same outputs
    assert tt(*args, "--seed", "2", *lines) != out
    objs = [json.loads(line) for line in out.splitlines()]
    assert len({o["translation"] for o in objs}) > 3  # the temperature reached the sampler
    model, tok = tiny_loaded.model, tiny_loaded.tokenizer
    src = torch.tensor([tok.encode(lines[0]) + [model.cfg.eos_id]])
    for o in objs:
        ids = [tok.piece_id(p) for p in o["tokens"]]
        for t, piece in enumerate(ids + [model.cfg.eos_id]):
            if t == len(ids) and len(o["token_logprobs"]) == len(ids):
                break  # cut at the length limit: no EOS was drawn
            q = shaped(allowed_probs(model, src, ids[:t]), top_k=3)
            assert q[piece] > 0, f"{o['translation']!r}: piece {t} is not among the 3 most probable"
