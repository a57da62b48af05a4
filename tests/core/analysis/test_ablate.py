"""Head ablation on the tiny real model: the batched evaluation against one-mask-at-a-time passes."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from typer.testing import CliRunner

from core.analysis.ablate import (
    Head,
    ablate_heads,
    all_heads,
    evaluate,
    head_mask,
    prune_curve,
    reference_logprob,
)
from core.analysis.reference import compare_pairs
from core.errors import ConfigError
from tt_cli.main import app

PAIRS = [
    ("Je suis étudiant.", "I am a student."),
    ("Le chat dort.", "The cat is sleeping."),
    ("Il fait froid.", "It is cold."),
    ("La voiture est rouge.", "The car is red."),
]


def _one_pass(loaded, mask) -> float:
    """Mean log p(reference) under `mask`, one sentence at a time, no batching, no repetition."""
    model, tok, cfg = loaded.model, loaded.tokenizer, loaded.cfg
    total = 0.0
    with torch.inference_mode():
        for src, ref in PAIRS:
            s = torch.tensor([tok.encode(src) + [cfg.eos_id]])
            r = tok.encode(ref) + [cfg.eos_id]
            logits = model.decode(
                torch.tensor([[cfg.bos_id] + r[:-1]]), model.encode(s, head_mask=mask), head_mask=mask
            ).logits[0]
            total += float(logits.log_softmax(-1)[torch.arange(len(r)), r].sum())
    return total / len(PAIRS)


def test_intact_value_is_the_reference_logprob(tiny_loaded):
    [value] = reference_logprob(tiny_loaded, PAIRS, [head_mask(tiny_loaded.cfg, [])])
    expected = sum(c.ref_logprob for c in compare_pairs(tiny_loaded, PAIRS)) / len(PAIRS)
    assert value == pytest.approx(expected, abs=1e-4)


def test_batched_ablations_equal_single_passes(tiny_loaded):
    cfg = tiny_loaded.cfg
    heads = [Head("encoder_self", 0, 1), Head("decoder_self", 1, 0), Head("cross", 0, 2), Head("cross", 1, 3)]
    masks = [head_mask(cfg, [])] + [head_mask(cfg, [h]) for h in heads] + [head_mask(cfg, heads)]
    # A tiny row budget forces several decoder passes and several encoder groups per batch.
    batched = reference_logprob(tiny_loaded, PAIRS, masks, max_tokens=30, max_rows_tokens=40)
    single = [_one_pass(tiny_loaded, m) for m in masks]
    assert batched == pytest.approx(single, abs=1e-4)
    assert len({round(v, 4) for v in batched}) == len(masks)  # every head changes something


def test_ablate_all_heads_and_prune_curve(tiny_loaded):
    cfg = tiny_loaded.cfg
    ablation = ablate_heads(tiny_loaded, PAIRS)
    assert [e.head for e in ablation.effects] == all_heads(cfg)
    assert len(ablation.effects) == (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers) * cfg.h
    for e in ablation.effects:
        assert e.delta == pytest.approx(e.value - ablation.intact)
    curve = prune_curve(tiny_loaded, PAIRS, ablation=ablation)
    assert [p.removed for p in curve] == list(range(len(ablation.effects) + 1))
    least = max(ablation.effects, key=lambda e: e.delta)
    assert curve[1].head == least.head and curve[1].value == pytest.approx(least.value, abs=1e-4)
    assert curve[-1].value < ablation.intact - 1.0  # no head left: the references become improbable


def test_bleu_metric_of_the_intact_model_is_its_greedy_bleu(tiny_loaded):
    from core.decode.translate import TranslateOptions, translate_lines
    from core.evaluate import corpus_scores

    ablation = ablate_heads(tiny_loaded, PAIRS, metric="bleu", heads=[Head("cross", 1, 0)])
    hyps = [t.text for t in translate_lines(tiny_loaded, [p[0] for p in PAIRS], TranslateOptions(method="greedy"))]
    assert ablation.intact == corpus_scores(hyps, [[p[1] for p in PAIRS]]).bleu


@pytest.mark.isa
def test_bleu_metric_decodes_under_the_head_mask(tiny_loaded):
    from core.decode.search import greedy
    from core.evaluate import corpus_scores

    cfg, tok, model = tiny_loaded.cfg, tiny_loaded.tokenizer, tiny_loaded.model
    cross = [h for h in all_heads(cfg) if h.family == "cross"]
    # Every cross head off: greedy decoding one sentence at a time under that mask, scored alone.
    mask = head_mask(cfg, cross)
    intact, blind = evaluate(tiny_loaded, PAIRS, [head_mask(cfg, []), mask], "bleu")
    with torch.inference_mode():
        hyps = [
            tok.decode(greedy(model, torch.tensor([tok.encode(s) + [cfg.eos_id]]), head_mask=mask)[0].tokens)
            for s, _ in PAIRS
        ]
    assert blind == corpus_scores(hyps, [[r for _, r in PAIRS]]).bleu
    # Without the source the translations fall apart: a mask left out of the decode would show here.
    assert blind < intact


def test_cli_heads_json_table_and_prune(tiny_model_dir, tmp_path):
    src, ref = tmp_path / "s.fr", tmp_path / "r.en"
    src.write_text("".join(p[0] + "\n" for p in PAIRS), encoding="utf-8")
    ref.write_text("".join(p[1] + "\n" for p in PAIRS), encoding="utf-8")
    args = ["analyze", "heads", "--model", str(tiny_model_dir), "--src", str(src), "--ref", str(ref)]
    result = CliRunner().invoke(app, [*args, "--json", "--prune"])
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["metric"] == "logprob" and obj["sentences"] == 4
    assert {"family", "layer", "head", "delta", "sink_share", "parks_on"} <= set(obj["heads"][0])
    assert obj["prune_order"] == "once" and len(obj["prune"]) == len(obj["heads"]) + 1
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.stderr
    assert "most needed:" in table.stdout and "cross L1 " in table.stdout and "cross L0" not in table.stdout
    worst = min(obj["heads"], key=lambda h: h["delta"])  # layers and heads count from 1, in JSON too
    assert worst["name"] == f"{worst['family']} L{worst['layer']}H{worst['head']}"
    assert " ".join(table.stdout.split()).split("most needed: ")[1].startswith(worst["name"] + " (")


def test_restarting_from_a_changed_layer_equals_full_passes_on_top_of_a_base(tiny_loaded):
    # masks[0] is the base the others restart from: here it already has a head off, and the others
    # differ from it at every depth (encoder, decoder layer 0 and 1, none at all).
    cfg = tiny_loaded.cfg
    base = [Head("cross", 1, 1)]
    extra = [[], [Head("encoder_self", 1, 2)], [Head("decoder_self", 0, 3)], [Head("cross", 1, 0)]]
    masks = [head_mask(cfg, base)] + [head_mask(cfg, [*base, *e]) for e in extra] + [head_mask(cfg, [])]
    restarted = reference_logprob(tiny_loaded, PAIRS, masks, max_tokens=30, max_rows_tokens=40)
    assert restarted == pytest.approx([_one_pass(tiny_loaded, m) for m in masks], abs=1e-4)


def test_greedy_prune_curve_removes_at_each_step_the_head_that_hurts_least(tiny_loaded):
    cfg = tiny_loaded.cfg
    ablation = ablate_heads(tiny_loaded, PAIRS)
    greedy = prune_curve(tiny_loaded, PAIRS, order="greedy", ablation=ablation)
    once = prune_curve(tiny_loaded, PAIRS, ablation=ablation)
    heads = [p.head for p in greedy[1:]]
    assert greedy[0] == once[0] and greedy[0].value == ablation.intact
    assert [p.removed for p in greedy] == list(range(len(all_heads(cfg)) + 1))
    assert len(set(heads)) == len(heads) and set(heads) == set(all_heads(cfg))  # one new head a step
    # Each value is the metric with that prefix of heads off, as a plain one-mask pass measures it.
    assert [p.value for p in greedy] == pytest.approx(
        [_one_pass(tiny_loaded, head_mask(cfg, heads[:k])) for k in range(len(greedy))], abs=1e-4
    )
    # Step 1 is the best single head; step 2 the best of every pair that includes it, so no worse than
    # once's second head (the best pair is not always reachable this way: later steps may go either way).
    best = max(ablation.effects, key=lambda e: e.value)
    assert greedy[1].head == once[1].head == best.head and greedy[1].value == best.value
    first = greedy[1].head
    pairs_with_first = reference_logprob(
        tiny_loaded,
        PAIRS,
        [head_mask(cfg, [first])] + [head_mask(cfg, [first, h]) for h in all_heads(cfg) if h != first],
    )
    assert greedy[2].value == pytest.approx(max(pairs_with_first[1:]), abs=1e-6)
    assert greedy[2].value >= once[2].value - 1e-6
    assert greedy[-1].value == pytest.approx(once[-1].value, abs=1e-6)  # every head off, either way


def _with_twin(loaded, family: str, layer: int, head: int, twin: int):
    """A copy of the model where head `twin` of that layer is replaced by a copy of `head`: the same
    W_i^Q, W_i^K, W_i^V and W^O columns, so the pair adds `head`'s output twice."""
    doubled = copy.deepcopy(loaded)
    layers = doubled.model.encoder_layers if family == "encoder_self" else doubled.model.decoder_layers
    attn = getattr(layers[layer], "cross_attn" if family == "cross" else "self_attn")
    d, d_k = doubled.cfg.d_model, attn.d_k
    src, dst = slice(head * d_k, (head + 1) * d_k), slice(twin * d_k, (twin + 1) * d_k)
    with torch.no_grad():
        attn.w_q.weight[dst], attn.w_q.bias[dst] = attn.w_q.weight[src], attn.w_q.bias[src]
        for offset in (0, d):  # w_kv stacks W^K over W^V: (2·d_model, d_model)
            s, t = slice(offset + src.start, offset + src.stop), slice(offset + dst.start, offset + dst.stop)
            attn.w_kv.weight[t], attn.w_kv.bias[t] = attn.w_kv.weight[s], attn.w_kv.bias[s]
        attn.w_o.weight[:, dst] = attn.w_o.weight[:, src]
    return doubled


def test_greedy_and_once_part_ways_on_redundant_twin_heads(tiny_loaded):
    # The model's most needed head, copied into a neighbour: with both on its output counts twice, so
    # removing either twin alone helps and the twins top the single-head ranking. Once then removes
    # both in its first two steps and loses the head; greedy, re-ranking after the first twin, keeps
    # the second (it is now the most needed head again) and removes a cheap one instead.
    cfg = tiny_loaded.cfg
    needed = min(ablate_heads(tiny_loaded, PAIRS).effects, key=lambda e: e.delta).head
    a, b = needed, Head(needed.family, needed.layer, (needed.head + 1) % cfg.h)
    doubled = _with_twin(tiny_loaded, a.family, a.layer, a.head, b.head)
    ablation = ablate_heads(doubled, PAIRS)
    ranked = sorted(ablation.effects, key=lambda e: -e.delta)
    assert {ranked[0].head, ranked[1].head} == {a, b} and ranked[0].delta > 0  # the construction's premise
    once = prune_curve(doubled, PAIRS, order="once", max_removed=3, ablation=ablation)
    greedy = prune_curve(doubled, PAIRS, order="greedy", max_removed=3, ablation=ablation)
    assert {p.head for p in once[1:3]} == {a, b}
    twin = b if greedy[1].head == a else a  # the twins' values are equal but for rounding
    assert greedy[1].head in (a, b) and twin not in [p.head for p in greedy]
    assert greedy[2].value > once[2].value + 0.5  # losing the needed head costs far more
    assert len(once) == len(greedy) == 4


def test_prune_curve_stops_after_max_removed(tiny_loaded):
    ablation = ablate_heads(tiny_loaded, PAIRS)
    full = prune_curve(tiny_loaded, PAIRS, ablation=ablation)
    short = prune_curve(tiny_loaded, PAIRS, max_removed=5, ablation=ablation)
    assert [p.head for p in short] == [p.head for p in full[:6]]
    assert [p.value for p in short] == pytest.approx([p.value for p in full[:6]], abs=1e-5)
    with pytest.raises(ConfigError, match="pruning order"):
        prune_curve(tiny_loaded, PAIRS, order="random", ablation=ablation)


def test_cli_heads_greedy_prune_json_and_table(tiny_model_dir, tmp_path):
    src, ref = tmp_path / "s.fr", tmp_path / "r.en"
    src.write_text("".join(p[0] + "\n" for p in PAIRS), encoding="utf-8")
    ref.write_text("".join(p[1] + "\n" for p in PAIRS), encoding="utf-8")
    args = ["analyze", "heads", "--model", str(tiny_model_dir), "--src", str(src), "--ref", str(ref)]
    result = CliRunner().invoke(app, [*args, "--json", "--prune", "--prune-order", "greedy", "--prune-max", "3"])
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["prune_order"] == "greedy"
    assert [p["removed"] for p in obj["prune"]] == [0, 1, 2, 3]
    assert obj["prune"][0] == {"removed": 0, "head": None, "value": obj["intact"]}
    named = [p["head"] for p in obj["prune"][1:]]
    assert len(set(named)) == 3 and all(isinstance(p["value"], float) for p in obj["prune"])
    best = max(obj["heads"], key=lambda h: h["value"])
    assert named[0] == f"{best['family']} L{best['layer']}H{best['head']}"
    table = CliRunner().invoke(app, [*args, "--prune", "--prune-order", "greedy", "--prune-max", "2"])
    assert table.exit_code == 0, table.stderr
    assert "order greedy" in table.stdout and named[1] in table.stdout
    lone = CliRunner().invoke(app, [*args, "--prune-order", "greedy"])
    assert lone.exit_code == 2 and "add --prune" in lone.stderr
