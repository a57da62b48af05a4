"""Each claim of the notes, computed on tiny models where the right answer is known."""

from __future__ import annotations

import math

import pytest
import torch

from core.analysis import claims as C
from core.analysis import timing
from core.analysis.internals import source_walk
from core.analysis.patterns import head_patterns
from core.model.config import preset
from core.model.transformer import Transformer

PAIRS = [
    ("Je suis étudiant.", "I am a student."),
    ("Le chat dort.", "The cat is sleeping."),
    ("Tu es étudiant.", "You are a student."),
]


@pytest.fixture
def fresh(tiny_model_dir):
    """A private copy of the trained tiny model, for tests that change its weights."""
    from core.checkpoint import load_model

    return load_model(tiny_model_dir)


def test_permutation_test_tells_positions_apart(tiny_loaded):
    ids = source_walk(tiny_loaded, "Je suis étudiant et tu es professeur.").ids
    assert C.permutation_error(tiny_loaded.model, ids, positions=False) < 1e-5  # equivariant
    assert C.permutation_error(tiny_loaded.model, ids, positions=True) > 1e-2  # the model WITH positions is not
    claim = C.positions_matter(tiny_loaded, "Je suis étudiant et tu es professeur.")
    assert claim.verdict == C.HOLDS
    assert claim.values["pe_dot_spread"][0] < 1e-5


def test_learned_positions_break_the_pe_dot_property():
    torch.manual_seed(0)
    model = Transformer(preset("tiny", vocab_size=40, positional="learned")).eval()
    ids = [5, 9, 17, 4, 22, 3]
    assert C.permutation_error(model, ids, positions=False) < 1e-5
    assert C.permutation_error(model, ids, positions=True) > 1e-3


def test_saturation_with_and_without_the_division(tiny_loaded, fresh):
    claim = C.sqrt_dk_saturation(head_patterns(tiny_loaded, PAIRS))
    v = claim.values
    assert v["saturated_unscaled"] >= v["saturated_scaled"]  # a larger temperature can only sharpen
    assert claim.verdict in C.VERDICTS
    # Scores 100× larger: even the scaled softmax saturates, so the division no longer makes the difference.
    with torch.no_grad():
        for layer in fresh.model.encoder_layers:
            layer.self_attn.w_q.weight.mul_(100)
            layer.self_attn.w_q.bias.mul_(100)
    hot = C.sqrt_dk_saturation(head_patterns(fresh, PAIRS))
    assert hot.values["saturated_scaled"] > 0.8
    assert hot.verdict != C.HOLDS


def test_random_dot_variance_grows_linearly():
    var = C.random_dot_variance((4, 64, 256), n=20000)
    for d, v in var.items():
        assert v == pytest.approx(d, rel=0.05)
    assert C.slope(list(var), list(var.values())) == pytest.approx(1.0, abs=0.05)
    assert C.slope([1, 2, 4], [1, 4, 16]) == pytest.approx(2.0)


def test_real_head_variance_reads_the_heads(tiny_loaded):
    rows = C.real_head_variance(tiny_loaded, ["Je suis étudiant."])
    cfg = tiny_loaded.cfg
    assert len(rows) == cfg.n_encoder_layers * cfg.h
    walk = source_walk(tiny_loaded, "Je suis étudiant.")
    a = walk.layers[1].attention
    dots = (a.q[0, 2].double() @ a.k[0, 2].double().T).flatten()
    row = next(r for r in rows if (r["layer"], r["head"]) == (1, 2))
    assert row["var_dot"] == pytest.approx(float(dots.var()), rel=1e-6)
    assert row["var_scaled"] == pytest.approx(row["var_dot"] / cfg.d_k)
    assert C.variance_grows(tiny_loaded, ["Je suis étudiant."]).verdict == C.HOLDS


def test_heads_differ_fails_when_every_head_is_the_same(tiny_loaded, fresh):
    real = C.heads_differ(head_patterns(tiny_loaded, PAIRS))
    assert real.verdict in C.VERDICTS and real.values["per_layer"]
    h, d_k = fresh.cfg.h, fresh.cfg.d_k
    with torch.no_grad():  # copy head 0's query and key rows into every head, in every layer of every family
        for layer in [*fresh.model.encoder_layers, *fresh.model.decoder_layers]:
            attn = layer.self_attn
            d = attn.w_q.weight.size(1)
            for w in (attn.w_q.weight, attn.w_kv.weight[:d]):
                w.copy_(w[:d_k].repeat(h, 1))
            for b in (attn.w_q.bias, attn.w_kv.bias[:d]):
                b.copy_(b[:d_k].repeat(h))
    same = C.heads_differ(head_patterns(fresh, PAIRS))
    assert max(same.values["per_layer"].values()) < 1e-5
    assert same.verdict == C.FAILS


def test_attention_distance_against_uniform(fresh):
    with torch.no_grad():
        for layer in fresh.model.encoder_layers:
            layer.self_attn.w_q.weight.zero_()
            layer.self_attn.w_q.bias.zero_()
    claim = C.attention_distance(head_patterns(fresh, PAIRS))
    for distance, uniform in claim.values.values():
        assert distance == pytest.approx(uniform, abs=1e-5)
    assert claim.verdict == C.HOLDS  # uniform attention reaches exactly as far as uniform


def test_il_attends_animal_reads_the_encoder_weights(tiny_loaded):
    claim = C.il_attends_animal(tiny_loaded)
    walk = source_walk(tiny_loaded, C.ANIMAL)
    from core.analysis.internals import find_word

    il, animal = find_word(walk.pieces, "il"), find_word(walk.pieces, "animal")
    with torch.no_grad():
        enc = tiny_loaded.model.encode(torch.tensor([walk.ids]), need_weights=True)
    w = enc.attention[1].weights[0, 3][il].mean(0)  # layer 1, head 3, the rows of "il"
    assert claim.values["heads"]["1.3"][0] == pytest.approx(float(w[animal].sum()), abs=1e-6)
    assert claim.values["uniform"] == pytest.approx(len(animal) / len(walk.ids))
    assert claim.verdict in C.VERDICTS


def test_disambiguation_compares_senses(tiny_loaded):
    senses = (("chat", "Le chat dort.", "Le chat mange.", "Je suis étudiant et le chat dort."),)
    claim = C.disambiguates(tiny_loaded, senses)
    row = claim.values["chat"]
    assert row["same_sense"][0] == pytest.approx(1.0) and row["other_sense"][0] == pytest.approx(1.0)
    expected = C.HOLDS if row["other_sense"][-1] < row["same_sense"][-1] else C.FAILS
    assert claim.verdict == expected
    identical = C.disambiguates(tiny_loaded, (("chat", "Le chat dort.", "Le chat dort.", "Le chat dort."),))
    assert identical.verdict == C.FAILS  # no separation at all


def test_ffn_share_two_thirds_only_with_d_ff_four_times_d_model():
    wide = Transformer(preset("tiny", vocab_size=40, d_ff=128))  # d_ff = 4 · d_model, as in the paper
    claim = C.ffn_share(wide)
    enc = claim.values["encoder_layer"]
    assert enc["feed-forward"] / sum(enc.values()) == pytest.approx(2 / 3, abs=0.02)
    assert claim.verdict in (C.HOLDS, C.DEPENDS)
    narrow = C.ffn_share(Transformer(preset("tiny", vocab_size=40)))  # d_ff = 2 · d_model
    assert narrow.verdict == C.FAILS


def test_cost_claims_are_decided_by_counted_work_with_wall_clock_beside(monkeypatch):
    cfg = preset("tiny", vocab_size=40)
    cost = C.multihead_cost(cfg.d_model, cfg.h, length=16, repeats=2)
    assert cost.values["macs"]["1"] == cost.values["macs"][str(cfg.h)]  # the same work, however split
    assert cost.values["ratio"] == 1.0 and cost.verdict == C.FAILS
    assert set(cost.values["seconds"]) == {"1", str(cfg.h)} and cost.values["cpu"]
    torch.manual_seed(0)
    model = Transformer(cfg).eval()
    lengths = (16, 32, 64, 128)
    quad = C.attention_quadratic(model, lengths=lengths, repeats=1)
    for n in lengths:  # Q Kᵀ and the weights times V: 2 · h · N² · d_k; the matrix: h · N² floats
        assert quad.values["core_macs"][str(n)] == 2 * cfg.h * n * n * cfg.d_k
        assert quad.values["matrix_bytes"][str(n)] == cfg.h * n * n * 4
    assert quad.values["core_slope"] == pytest.approx(2.0) and quad.values["matrix_slope"] == pytest.approx(2.0)
    assert quad.values["crossover"] == pytest.approx(2 * cfg.d_model + cfg.d_ff)  # 2·N·d = 4·d² + 2·d·d_ff per token
    assert set(quad.values["core_seconds"]) == {str(n) for n in lengths}

    # The clock does not decide: times that fall as N grows leave every verdict and count as they were.
    ticks = iter(range(10**6, 0, -1))
    monkeypatch.setattr(timing, "_time", lambda fn, repeats: 1.0 / next(ticks))
    again = C.attention_quadratic(model, lengths=lengths, repeats=1)
    assert again.verdict == quad.verdict and again.values["core_macs"] == quad.values["core_macs"]
    assert again.values["layer_macs"] == quad.values["layer_macs"]
    assert C.multihead_cost(cfg.d_model, cfg.h, length=16, repeats=2).verdict == cost.verdict
    from core.model.fast import packed_model

    # As the CLI loads a model: its Linear layers on oneDNN kernels that the counter cannot see. The counts
    # come from the layer's shapes, so they do not change (a size where packing is used).
    wide = Transformer(preset("tiny", vocab_size=40, d_model=256, d_ff=1024, h=4)).eval()
    plain = C.attention_quadratic(wide, lengths=(64, 128, 256), timed=False)
    packed = C.attention_quadratic(packed_model(wide), lengths=(64, 128, 256), timed=False)
    assert packed.values["layer_macs"] == plain.values["layer_macs"] and packed.verdict == plain.verdict
    counted = C.attention_quadratic(model, lengths=lengths, timed=False)
    assert (
        counted.verdict == quad.verdict and counted.values["core_seconds"] == {} and "wall-clock" not in counted.figure
    )


def test_bleu_by_length_buckets():
    pairs = [
        ("a b", "the cat sat on the mat"),
        ("a b c", "a dog ran in the park"),
        (" ".join(["w"] * 12), "one two three four five"),
    ]
    perfect = C.bleu_by_length(pairs, [r for _, r in pairs])
    assert [r["words"] for r in perfect] == ["1-5", "11-15"]
    assert [r["sentences"] for r in perfect] == [2, 1]
    assert all(r["bleu"] == pytest.approx(100) for r in perfect)
    worse = C.bleu_by_length(pairs, [pairs[0][1], pairs[1][1], "nothing alike here at all"])
    assert worse[1]["bleu"] < 1
    short = [(f"mot {i}", f"the word number {i} here") for i in range(25)]
    long = [(" ".join(["mot"] * 12) + f" {i}", f"a long sentence number {i} here") for i in range(25)]
    hyps = [r for _, r in short] + ["nothing at all"] * 25
    assert C.quality_by_length(short + long, hyps, "toy").verdict == C.HOLDS
    assert C.quality_by_length(short + long, [r for _, r in short + long], "toy").verdict == C.FAILS


def test_beam_and_greedy_on_the_tiny_model(tiny_loaded):
    from core import Translator

    sources = [s for s, _ in PAIRS]
    greedy = C.translate_all(tiny_loaded, sources, beam=1)
    translator = Translator(tiny_loaded.path, method="greedy")
    assert greedy == [r.text for r in translator.translate(sources)]
    beam = C.translate_all(tiny_loaded, sources, beam=4)
    assert beam == [r.text for r in Translator(tiny_loaded.path, beam=4).translate(sources)]
    claim = C.beam_beats_greedy(PAIRS, beam, greedy, "toy")
    assert claim.values["changed"] == sum(a != b for a, b in zip(beam, greedy))
    assert C.beam_beats_greedy(PAIRS, [r for _, r in PAIRS], ["x"] * 3, "toy").verdict == C.HOLDS
    assert C.beam_beats_greedy(PAIRS, ["x"] * 3, [r for _, r in PAIRS], "toy").verdict == C.FAILS


def test_all_claims_report_every_claim(tiny_loaded):
    claims = C.all_claims(tiny_loaded, PAIRS, set_name="toy", timing=False)
    keys = [c.key for c in claims]
    assert keys == [
        "sqrt_dk_saturation",
        "variance_grows",
        "heads_differ",
        "attention_distance",
        "il_attends_animal",
        "disambiguates",
        "positions_matter",
        "ffn_share",
        "quality_by_length",
        "beam_beats_greedy",
    ]
    for c in claims:
        d = c.to_dict()
        assert d["verdict"] in C.VERDICTS and d["figure"] and d["claim"] and d["source"]
        assert not any(isinstance(v, float) and math.isnan(v) for v in d["values"].values())
