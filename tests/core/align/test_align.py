"""core.align.links and core.align.aer: the AER scorer against hand-computed cases, gold reading,
symmetrization, the word/piece mapping, the batched pass against a one-sentence trace, and the head
finder on a model with a planted alignment head."""

from __future__ import annotations

import copy
import random
from types import SimpleNamespace

import pytest
import torch

from core.align.aer import GoldPair, diagonal_links, pharaoh, read_gold, score_links, symmetrize
from core.align.links import (
    DEFAULT_RULE,
    AlignRule,
    PairAttention,
    align,
    align_steps,
    extract_links,
    full_context_cross,
    head_ranking,
    load_rule,
    pair_attention,
    rank_rules,
    read_alignment,
    rule_scores,
    save_rule,
    word_pieces,
)
from core.decode.source import prepare_source
from core.decode.trace import trace_steps
from core.errors import CheckpointError, ConfigError, DataError
from tests.conftest import SHARED_DATA

# Rests on the floats of a model trained or decoded here: .ci/run runs it again under a second CPU ISA.
pytestmark = pytest.mark.isa


# --------------------------------------------------------------------------------------- AER
def gold(sure, possible_only=()):
    return GoldPair(frozenset(sure), frozenset(sure) | frozenset(possible_only))


def test_aer_precision_recall_by_hand():
    # Pair 1: A = {0-0, 1-1, 2-1}; S = {0-0}; P = S + {1-1, 1-2}.
    #   |A∩S| = 1, |A∩P| = 2, |A| = 3, |S| = 1.
    # Pair 2: A = {0-0}; S = {0-1}; P = S.  |A∩S| = |A∩P| = 0, |A| = 1, |S| = 1.
    # Corpus: AER = 1 - (1 + 2) / (4 + 2) = 0.5; precision = 2/4; recall = 1/2.
    predicted = [{(0, 0), (1, 1), (2, 1)}, {(0, 0)}]
    golds = [gold({(0, 0)}, {(1, 1), (1, 2)}), gold({(0, 1)})]
    s = score_links(predicted, golds)
    assert (s.aer, s.precision, s.recall) == pytest.approx((0.5, 0.5, 0.5))
    assert (s.predicted, s.sure, s.possible) == (4, 2, 4)
    # Only pair 1: AER = 1 - 3/4.
    assert score_links(predicted[:1], golds[:1]).aer == pytest.approx(0.25)
    # Predicting exactly the sure links is perfect; predicting only possible ones is not.
    assert score_links([{(0, 0)}], golds[:1]).aer == 0.0
    assert score_links([{(1, 1)}], golds[:1]).aer == pytest.approx(1 - 1 / 2)
    assert score_links([set()], [gold(set())]).aer == 0.0


def test_read_gold_workshop_format(tmp_path):
    path = tmp_path / "g.wa"
    # SENTENCE ENGLISH(target) FRENCH(source) S|P, 1-based.
    path.write_text("1 1 1 S\n1 2 3 P\n\n2 2 1 S\n", encoding="utf-8")
    g = read_gold(path, [(3, 2), (1, 2)])
    assert g[0].sure == {(0, 0)} and g[0].possible == {(0, 0), (2, 1)}
    assert g[1].sure == {(0, 1)}
    flipped = read_gold(path, [(2, 3), (2, 1)], target_first=False)
    assert flipped[0].possible == {(0, 0), (1, 2)}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 1 x S\n", r"g\.wa:1: expected 'SENTENCE POS POS S\|P'"),
        ("1 1 1 S\n1 1 1 Q\n", r"g\.wa:2: expected"),
        ("3 1 1 S\n", r"g\.wa:1: sentence 3, but there are 1 sentence pairs"),
        ("1 4 1 S\n", r"g\.wa:1: link source 1 - target 4, but pair 1 has 2 source and 3 target words"),
        ("1 0 1 S\n", r"g\.wa:1: link source 1 - target 0"),
    ],
)
def test_bad_gold_lines_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "g.wa"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_gold(path, [(2, 3)])


def test_missing_gold_file(tmp_path):
    with pytest.raises(DataError, match="no such gold file"):
        read_gold(tmp_path / "none.wa", [])


# --------------------------------------------------------------------------------------- links
def test_symmetrization_by_hand():
    forward = {(0, 0), (1, 1), (3, 2)}
    reverse = {(0, 0), (1, 1), (2, 1), (2, 3)}
    assert symmetrize(forward, reverse, "intersection") == {(0, 0), (1, 1)}
    assert symmetrize(forward, reverse, "union") == forward | reverse
    # grow-diag: (2, 1) neighbours (1, 1) and source 2 is new -> added. (3, 2) neighbours (2, 1)
    # diagonally and covers new words -> added; so does (2, 3), diagonal to (3, 2), for target 3.
    assert symmetrize(forward, reverse) == {(0, 0), (1, 1), (2, 1), (3, 2), (2, 3)}
    # A union link whose words are both aligned already, not next to the grown set, stays out.
    assert symmetrize({(0, 0), (1, 1)}, {(0, 0), (1, 1), (0, 1)}, "grow-diag-final") == {(0, 0), (1, 1)}
    assert symmetrize(forward, reverse, "grow-diag") == symmetrize(forward, reverse)  # all grown, nothing final
    # grow-diag stops before the final step; final-and adds only links whose two words are both unaligned.
    far = ({(0, 0)}, {(0, 0), (3, 3), (0, 2)})  # (3, 3): both words unaligned; (0, 2): source 0 aligned
    assert symmetrize(*far, "grow-diag") == {(0, 0)}
    assert symmetrize(*far, "grow-diag-final-and") == {(0, 0), (3, 3)}
    assert symmetrize(*far, "grow-diag-final") == {(0, 0), (3, 3), (0, 2)}
    with pytest.raises(DataError, match="unknown symmetrization 'gdf'.*grow-diag-final-and"):
        symmetrize(*far, "gdf")


def test_diagonal_and_pharaoh():
    assert diagonal_links(4, 2) == {(1, 0), (3, 1)}
    assert diagonal_links(2, 4) == {(0, 0), (0, 1), (1, 2), (1, 3)}
    assert diagonal_links(0, 3) == set()
    assert pharaoh({(3, 1), (0, 0), (0, 2)}) == "0-0 0-2 3-1"


def test_extract_links_argmax_and_threshold():
    scores = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.45, 0.45], [0.0, 0.0, 0.0]])  # (J, I); word 2 has no pieces
    assert [(i, j) for i, j, _ in extract_links(scores)] == [(0, 0), (1, 1)]
    assert [(i, j) for i, j, _ in extract_links(scores, 0.4)] == [(0, 0), (1, 1), (2, 1)]
    assert extract_links(torch.zeros(0, 3)) == []
    # Both ways: source 2's best target word is 1 (0.45 > 0.1); 2-1 neighbours 1-1 and covers source 2.
    assert [(i, j) for i, j, _ in extract_links(scores, bidirectional=True)] == [(0, 0), (1, 1), (2, 1)]


def test_rule_checks_its_range():
    assert AlignRule(2, 3).check(3, 4).layer == 2
    with pytest.raises(ConfigError, match="3 decoder layers"):
        AlignRule(3).check(3, 4)
    with pytest.raises(ConfigError, match="4 heads"):
        AlignRule(0, 4).check(3, 4)
    # described counted from 1, as tt shows layers and heads; the file's indices stay 0-based
    assert AlignRule(2, 3).describe(3) == "layer 3, head 4, plain, argmax"
    assert AlignRule(-1).describe(3) == "layer 3, mean of heads, plain, argmax" and AlignRule(-1).describe() == (
        "last layer, mean of heads, plain, argmax"
    )


def test_guided_alignment_names_its_layer_and_head_from_one(tiny_loaded):
    from types import SimpleNamespace

    from core.train.align_loss import GuidedAlignment

    cfg = SimpleNamespace(align_layer=2, align_head=0, align_links="unused")  # index 2 of 2 layers
    with pytest.raises(ConfigError, match=r"--align-layer 3: the model has 2 decoder layers \(1\.\.2\)"):
        GuidedAlignment.build(cfg, tiny_loaded.tokenizer, 2, 4)
    cfg = SimpleNamespace(align_layer=-1, align_head=4, align_links="unused")
    with pytest.raises(ConfigError, match=r"--align-head 5: the model has 4 heads \(1\.\.4\)"):
        GuidedAlignment.build(cfg, tiny_loaded.tokenizer, 2, 4)


# --------------------------------------------------------------------------------------- the model
def test_word_pieces_concatenate_to_the_line(tiny_loaded):
    tok = tiny_loaded.tokenizer
    for line in ["Je suis étudiant.", "je suis un étudiant .", "Il  est\tmédecin", "l' homme de le conseil"]:
        ids, groups = word_pieces(tok, line.split())
        assert ids == tok.encode(" ".join(line.split()))  # pieces never cross a space
        assert len(groups) == len(line.split())
        assert [p for g in groups for p in g] == list(range(len(ids)))
    assert word_pieces(tok, []) == ([], [])


def test_batched_pass_matches_a_one_sentence_trace(tiny_loaded):
    """The batch (padded, length-sorted) gives each pair what a single teacher-forced trace gives."""
    pairs = [
        ("Je suis étudiant.", "I am a student."),
        ("", "x"),
        ("Il est médecin.", "He is a doctor."),
        ("Tu es professeur", "you are a teacher"),
    ]
    batched = pair_attention(tiny_loaded, pairs, batch_size=3)
    assert batched[1].plain.shape == (2, 4, 1, 0) and align([batched[1]]) == [[]]
    tok, cfg = tiny_loaded.tokenizer, tiny_loaded.cfg
    for (src, tgt), att in zip(pairs, batched):
        if not src:
            continue
        s_ids, s_groups = word_pieces(tok, src.split())
        t_ids, t_groups = word_pieces(tok, tgt.split())
        _, steps = trace_steps(tiny_loaded, s_ids + [cfg.eos_id], t_ids + [cfg.eos_id])
        for layer in range(cfg.n_decoder_layers):
            a = torch.stack([s.cross[layer] for s in steps], 1)  # (h, T+1, S)
            for j, tg in enumerate(t_groups):
                for i, sg in enumerate(s_groups):
                    plain = a[:, tg][:, :, sg].sum(-1).mean(-1)  # (h,)
                    shift = a[:, [p + 1 for p in tg]][:, :, sg].sum(-1).mean(-1)
                    torch.testing.assert_close(att.plain[layer, :, j, i], plain, atol=1e-5, rtol=1e-4)
                    torch.testing.assert_close(att.shift[layer, :, j, i], shift, atol=1e-5, rtol=1e-4)


def test_translation_alignment_reads_the_rule(tiny_loaded):
    src_ids = prepare_source(tiny_loaded.tokenizer, "Je suis étudiant.", tiny_loaded.cfg.max_len).ids
    out_ids = tiny_loaded.tokenizer.encode("I am a student.") + [tiny_loaded.cfg.eos_id]
    source, steps = trace_steps(tiny_loaded, src_ids, out_ids)
    pairs = align_steps(source.pieces, steps, AlignRule(0, 2, shift=True))
    att = pair_attention(tiny_loaded, [("Je suis étudiant.", "I am a student.")])[0]
    expected = [(i, j) for i, j, _ in extract_links(rule_scores(att, AlignRule(0, 2, shift=True)))]
    assert sorted(pairs) == sorted(expected) and len(pairs) == 4
    assert align_steps(source.pieces, [], DEFAULT_RULE) == []


def test_full_context_pass_sees_the_whole_target(tiny_loaded):
    """The second pass lifts the look-ahead mask: a later target word changes the first word's row,
    which the causal pass never lets happen; padding stays hidden (batched = one pair at a time)."""
    pairs = [
        ("Je suis étudiant.", "I am a student."),
        ("Je suis étudiant.", "I am a doctor."),
        ("Il est médecin.", "He is"),
    ]
    batched = pair_attention(tiny_loaded, pairs, batch_size=3, full_context=True)
    a, b = batched[0], batched[1]
    torch.testing.assert_close(a.plain[:, :, :3], b.plain[:, :, :3])  # "I am a" sees only its past
    assert not torch.allclose(a.full[:, :, 0], b.full[:, :, 0], atol=1e-4)  # ... unless the mask is lifted
    assert pair_attention(tiny_loaded, pairs[:1])[0].full is None  # asked for only
    tok, cfg = tiny_loaded.tokenizer, tiny_loaded.cfg
    for (src, tgt), att in zip(pairs, batched):
        (s_ids, s_groups), (t_ids, t_groups) = word_pieces(tok, src.split()), word_pieces(tok, tgt.split())
        cross = full_context_cross(
            tiny_loaded.model, s_ids + [cfg.eos_id], t_ids + [cfg.eos_id]
        )  # per layer (h, T+1, S)
        for layer, m in enumerate(cross):
            for j, tg in enumerate(t_groups):
                for i, sg in enumerate(s_groups):
                    torch.testing.assert_close(
                        att.full[layer, :, j, i], m[:, tg][:, :, sg].sum(-1).mean(-1), atol=1e-5, rtol=1e-4
                    )
    rule = AlignRule(1, 2, full_context=True)
    assert "full context" in rule.describe() and align([a], rule) != align([a], AlignRule(1, 2))
    with pytest.raises(ConfigError, match="full-context pass"):
        rule_scores(pair_attention(tiny_loaded, pairs[:1])[0], rule)
    with pytest.raises(ConfigError, match="not both"):
        AlignRule(0, shift=True, full_context=True).check(2, 4)
    # The head finder measures the full-context rows when they are there.
    golds = [gold({(0, 0), (1, 1), (2, 3)}), gold({(0, 0), (1, 1), (2, 3)}), gold({(0, 0), (1, 1)})]
    ranked = rank_rules(batched, golds)
    assert len(ranked) == 2 * 3 * 5 * 2 and any(r.full_context for r, _ in ranked)


def test_too_long_line_names_file_and_line(tiny_loaded):
    long = " ".join(["étudiant"] * 80)
    with pytest.raises(DataError, match=r"b\.en:2: \d+ pieces, longer than the model's 63"):
        pair_attention(tiny_loaded, [("a", "b"), ("Je", long)], names=("a.fr", "b.en"))


def planted_model(loaded, head: int):
    """A copy of the tiny model whose decoder layer 0, head `head`, attends from target position t to
    source position t. Token embeddings and the sub-layer outputs before it are zeroed and LayerNorms
    made plain, so the residual stream holds only positions; the position code is rewritten so that
    LayerNorm leaves it alone (zero mean, fixed norm) and its first d_k dimensions are cos/sin pairs,
    whose dot product PE(t)·PE(s) = Σ cos((t - s)θ) peaks at s = t. The head's W^Q, W^K read them.

    The layer's other heads are planted too, one position ahead (their W^Q rotates each cos/sin pair by
    θ, so they peak at s = t + 1): left as trained, they could be flat enough that the mean of the
    layer's heads picks the planted head's links, and which rule wins would rest on the trained floats."""
    model = copy.deepcopy(loaded.model)
    cfg, d_k = model.cfg, model.cfg.d_k
    theta = torch.linspace(1.0, 0.25, d_k // 2)
    pos = torch.arange(cfg.max_len).float()[:, None] * theta  # (max_len, d_k/2)
    code = torch.cat([pos.cos(), pos.sin()], dim=1)  # (max_len, d_k)
    table = torch.zeros(cfg.max_len, cfg.d_model)
    table[:, :d_k], table[:, d_k : 2 * d_k] = code, -code  # zero mean, the same norm everywhere
    with torch.no_grad():
        model.src_pos.table.copy_(table)
        model.tgt_pos.table.copy_(table)
        model.src_embed.table.weight.zero_()
        model.tgt_embed.table.weight.zero_()
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()
        for layer in model.encoder_layers:
            for lin in (layer.self_attn.w_o, layer.ffn.w_2):
                lin.weight.zero_()
                lin.bias.zero_()
        first = model.decoder_layers[0]
        first.self_attn.w_o.weight.zero_()
        first.self_attn.w_o.bias.zero_()
        half = d_k // 2
        ahead = torch.zeros(d_k, cfg.d_model)  # cos((t+1)θ), sin((t+1)θ) from cos(tθ), sin(tθ)
        ahead[:half, :half] = ahead[half:d_k, half:d_k] = torch.diag(theta.cos())
        ahead[:half, half:d_k], ahead[half:d_k, :half] = torch.diag(-theta.sin()), torch.diag(theta.sin())
        for h in range(cfg.h):
            rows = slice(h * d_k, (h + 1) * d_k)
            first.cross_attn.w_q.weight[rows] = 10.0 * (torch.eye(d_k, cfg.d_model) if h == head else ahead)
            first.cross_attn.w_q.bias[rows] = 0.0
            first.cross_attn.w_kv.weight[rows] = torch.eye(d_k, cfg.d_model)  # keys are the first d_model rows
            first.cross_attn.w_kv.bias[rows] = 0.0
    return SimpleNamespace(model=model.eval(), tokenizer=loaded.tokenizer, path=loaded.path, metadata={}, cfg=cfg)


def test_head_finder_finds_a_planted_head(tiny_loaded, tmp_path):
    tok = tiny_loaded.tokenizer
    single = [p[1:] for p in tok.pieces(range(tok.vocab_size)) if p.startswith("\u2581") and len(p) > 2]
    single = [w for w in single if len(tok.encode(w)) == 1]  # words that are one piece each
    rng = random.Random(0)
    pairs, golds = [], []
    for _ in range(12):
        n = rng.randint(3, 9)
        pairs.append((" ".join(rng.choices(single, k=n)), " ".join(rng.choices(single, k=n))))
        golds.append(gold({(j, j) for j in range(n)}))
    model = planted_model(tiny_loaded, head=2)
    ranking = rank_rules(pair_attention(model, pairs), golds)
    best, score = ranking[0]
    assert (best.layer, best.head, best.shift) == (0, 2, False) and score.aer < 0.05
    assert len(ranking) == 2 * 2 * 5 * 2  # layers × (plain, shift) × (mean + 4 heads) × (one way, both ways)
    assert ranking[-1][1].aer > 0.3  # the others do not align
    mean = next(score for rule, score in ranking if rule == AlignRule(0, None))
    assert mean.aer > score.aer + 0.3  # no tie for list order to settle
    # Stored beside the weights, it becomes the model's rule; a directory without the file keeps the default.
    assert load_rule(tmp_path) == DEFAULT_RULE and head_ranking(tmp_path) == []
    save_rule(tmp_path, ranking, {"gold": "planted", "pairs": len(pairs)})
    assert load_rule(tmp_path) == best and head_ranking(tmp_path)[0]["aer"] < 0.05
    assert read_alignment(tmp_path).found_on == {"gold": "planted", "pairs": 12}


def test_head_finder_breaks_ties_by_attention_on_the_gold_links():
    """A sharp head and a flat one with the same argmax (and so their mean) align alike, AER 0 all three:
    the sharp head wins whatever its place in the candidate list, then the mean, then the flat head."""
    eye = torch.eye(3)
    flat, sharp = 0.3 + 0.1 * eye, eye  # (J, I): diagonal 0.4 against 0.3; diagonal 1.0
    plain = torch.stack([flat, sharp])[None]  # (n_layers 1, h 2, J 3, I 3)
    att = PairAttention(["a", "b", "c"], ["x", "y", "z"], plain, torch.zeros_like(plain))
    ranking = rank_rules([att], [gold({(0, 0), (1, 1), (2, 2)})])
    assert [(rule.head, score.aer) for rule, score in ranking[:6]] == [
        (1, 0.0),
        (1, 0.0),
        (None, 0.0),
        (None, 0.0),
        (0, 0.0),
        (0, 0.0),
    ]
    assert [rule.bidirectional for rule, _ in ranking[:2]] == [False, True]  # identical scores: candidate order


def test_bad_alignment_json_is_a_checkpoint_error(tmp_path):
    (tmp_path / "alignment.json").write_text('{"format": "tt.alignment", "rule": {"layer": "x"}}', encoding="utf-8")
    with pytest.raises(CheckpointError, match=r"alignment\.json: not a valid alignment rule"):
        load_rule(tmp_path)
    (tmp_path / "alignment.json").write_text("{", encoding="utf-8")
    with pytest.raises(CheckpointError, match="not a valid alignment rule"):
        load_rule(tmp_path)
    (tmp_path / "alignment.json").write_text(
        '{"format": "tt.alignment", "rule": {"layer": 1, "full_context": 1}}', encoding="utf-8"
    )
    with pytest.raises(CheckpointError, match="full_context must be true or false"):
        load_rule(tmp_path)
    # Files written before full-context rules keep loading; the new field round-trips.
    (tmp_path / "alignment.json").write_text(
        '{"format": "tt.alignment", "rule": {"layer": 1, "head": 2}}', encoding="utf-8"
    )
    assert load_rule(tmp_path) == AlignRule(1, 2) and not load_rule(tmp_path).full_context
    score = score_links([{(0, 0)}], [gold({(0, 0)})])
    save_rule(tmp_path, [(AlignRule(1, 2, full_context=True), score)], {"gold": "test"})
    assert load_rule(tmp_path) == AlignRule(1, 2, full_context=True)


def test_a_stored_combination_of_both_directions_round_trips_and_a_bad_one_is_refused(tmp_path):
    rule, score = AlignRule(1, 2), score_links([{(0, 0)}], [gold({(0, 0)})])
    both = {"method": "intersection", "reverse": ["en", "fr"], "aer": 0.16, "precision": 0.92, "recall": 0.74}
    save_rule(tmp_path, [(rule, score)], {"gold": "test"}, both)
    stored = read_alignment(tmp_path)
    assert stored.rule == rule and stored.symmetrize == both
    save_rule(tmp_path, [(rule, score)], {"gold": "test"})  # measured no better: nothing stored
    assert read_alignment(tmp_path).rule == rule and read_alignment(tmp_path).symmetrize is None
    for bad in ({"method": "most", "reverse": ["en", "fr"]}, {"method": "union"}):
        save_rule(tmp_path, [(rule, score)], {"gold": "test"}, bad)
        with pytest.raises(CheckpointError, match="symmetrize needs a method"):
            read_alignment(tmp_path)


@pytest.mark.data
def test_shipped_rule_scores_on_the_trial_set():
    """The figures the model card (weights/card.json, weights/README.md) reports for the shipped model's
    stored rule alone, the earlier rule, and both shipped directions combined as alignment.json says,
    re-measured on the trial set (37 pairs)."""
    import json

    from core.checkpoint import load_model, shipped_models

    d = SHARED_DATA / "hansards-align"
    fr, en = (p.read_text(encoding="utf-8").splitlines() for p in (d / "trial.fr", d / "trial.en"))
    loaded = load_model()
    atts = pair_attention(loaded, list(zip(fr, en)))
    golds = read_gold(d / "trial.wa", [(len(a.source_words), len(a.target_words)) for a in atts])

    def scored(links):
        return score_links([{(i, j) for i, j, _ in pair} for pair in links], golds)

    default = scored(align(atts))
    stored = scored(align(atts, load_rule(loaded.path)))
    card = json.loads((loaded.path / "card.json").read_text(encoding="utf-8"))["alignment"]
    assert 100 * default.aer == pytest.approx(card["earlier_aer"], abs=0.06)
    assert 100 * stored.aer == pytest.approx(card["one_model"]["aer"], abs=0.06)
    assert 100 * stored.precision == pytest.approx(card["one_model"]["precision"], abs=0.06)
    assert stored.aer <= default.aer
    # What `tt align` does by default: the two shipped directions' links combined as alignment.json stores.
    combine = read_alignment(loaded.path).symmetrize
    reverse = load_model(shipped_models()[tuple(combine["reverse"])])
    back = pair_attention(reverse, list(zip(en, fr)))
    both = scored(align(atts, load_rule(loaded.path), back, load_rule(reverse.path), combine["method"]))
    assert 100 * both.aer == pytest.approx(card["aer"], abs=0.06) == pytest.approx(100 * combine["aer"], abs=0.06)
    assert both.aer < stored.aer  # stored only because it is lower


# --------------------------------------------------------------------------------------- guided alignment
def test_guided_alignment_pulls_a_head_onto_the_links(tmp_path):
    """A tiny run with diagonal links: the alignment loss falls and the guided head then aligns its own
    training pairs with a low AER (the same head of an unguided run does not)."""
    from core.checkpoint import load_model
    from core.data.readers import read_corpus
    from core.train.config import TrainConfig
    from core.train.trainer import Trainer
    from tests.conftest import TINY_TSV

    pairs = list(read_corpus(TINY_TSV))
    links = [diagonal_links(len(p.src.split()), len(p.tgt.split())) for p in pairs]
    (tmp_path / "links.txt").write_text("".join(pharaoh(ls) + "\n" for ls in links), encoding="utf-8")

    def run(name: str, guided: bool, full_context: bool = False):
        events = []
        cfg = TrainConfig(
            data=[str(TINY_TSV)],
            out=str(tmp_path / name),
            preset="tiny",
            vocab_size=120,
            max_steps=200,
            warmup=100,
            max_tokens=512,
            valid_every=0,
            save_every=0,
            bleu_sample=0,
            seed=1,
            log_every=1,
            model_overrides={"max_len": 64},
            align_links=str(tmp_path / "links.txt") if guided else None,
            align_layer=-1,
            align_head=1,
            align_weight=1.0,
            align_full_context=full_context,
        )
        Trainer(cfg, [events.append]).run()
        loaded = load_model(tmp_path / name)
        atts = pair_attention(loaded, [(p.src, p.tgt) for p in pairs], full_context=True)
        rule = AlignRule(layer=-1, head=1, full_context=full_context)
        aligned = [{(i, j) for i, j, _ in links} for links in align(atts, rule)]
        return [e.data.get("align_loss") for e in events if e.kind == "step"], score_links(
            aligned, [gold(ls) for ls in links]
        )

    curve, guided = run("guided", True)
    assert curve[0] is not None and sum(curve[-20:]) / 20 < 0.7 * sum(curve[:20]) / 20  # 2.6 -> 1.25 nats
    assert guided.aer < 0.15
    _, unguided = run("plain", False)
    assert unguided.aer > guided.aer + 0.2
    # Garg et al.'s full-context variant: the head is trained, and read, on the unmasked pass.
    curve, full = run("full", True, full_context=True)
    assert sum(curve[-20:]) / 20 < 0.7 * sum(curve[:20]) / 20
    assert full.aer < 0.15


def test_links_file_must_match_the_data(tmp_path):
    from core.train.config import TrainConfig
    from core.train.trainer import Trainer
    from tests.conftest import TINY_TSV

    (tmp_path / "links.txt").write_text("0-0\n", encoding="utf-8")
    cfg = TrainConfig(
        data=[str(TINY_TSV)],
        out=str(tmp_path / "run"),
        preset="tiny",
        vocab_size=120,
        max_steps=1,
        valid_every=0,
        save_every=0,
        bleu_sample=0,
        align_links=str(tmp_path / "links.txt"),
    )
    with pytest.raises(DataError, match=r"links\.txt has 1 lines but the training data has 40 pairs"):
        Trainer(cfg).run()
    lines = ["0-0"] * 40
    lines[3] = "0-9"
    (tmp_path / "links.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"links\.txt:4: link 0-9 is outside the pair \(3 source, 4 target words\)"):
        Trainer(cfg).run()


def test_a_joined_example_carries_its_parts_links():
    """--concat with --align-links: a joined example's links are its parts', moved past the pieces before them."""
    from core.data.readers import Example, join_examples
    from core.train.align_loss import GuidedAlignment

    a, b = Example([5, 6, 3], [2, 7, 8, 9, 3]), Example([10, 3], [2, 11, 3])  # EOS 3, BOS 2
    guide = GuidedAlignment({((5, 6), (7, 8, 9)): [(0, 0), (2, 1)], ((10,), (11,)): [(0, 0)]}, layer=0, head=0)
    joined = join_examples([a, b, a])
    assert joined.src == [5, 6, 10, 5, 6, 3] and joined.tgt == [2, 7, 8, 9, 11, 7, 8, 9, 3]
    assert guide.links(joined) == [(0, 0), (2, 1), (3, 2), (4, 3), (6, 4)]
    g = guide.targets([joined, Example([4, 3], [2, 4, 3])], (2, 8, 6))
    assert g[0, 3, 2] == 1.0 and g[0, 1].sum() == 0 and g[1].sum() == 0  # no links: zero rows
