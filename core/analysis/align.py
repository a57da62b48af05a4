"""Word alignment from the model's cross-attention: which source word each target word came from.

    pair (source line, target line) ──whitespace words──▶ pieces of each word ──one teacher-forced pass
    per batch──▶ cross-attention (n_layers, h, T+1, S) ──pool pieces into words──▶ (n_layers, h, J, I)
    ──a rule (layer, head or mean, plain or shift, argmax or threshold)──▶ links (i, j)

Words are the whitespace-separated tokens of the given lines, as fast_align and the gold sets define
them; a word's pieces are what its text encodes to (SentencePiece never lets a piece cross a space,
so the pieces of the words, in order, are the pieces of the line). A target word's score for a
source word is the attention its pieces' rows put on that word's pieces: summed over source pieces,
averaged over target pieces.

Plain rules read row t, the step that *predicts* target piece t; shift rules (Chen et al. 2020,
"Accurate Word Alignment Induction from Neural Machine Translation") read row t+1, the step whose
*input* is piece t, which has seen the word it aligns. The best rule for a model is found against
gold links (`rank_rules`) and stored beside its weights as alignment.json (`save_rule`); a model
directory without that file keeps loading and gets DEFAULT_RULE.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import torch

from core.analysis.aer import AlignmentScore, GoldPair, score_links, symmetrize
from core.errors import CheckpointError, ConfigError, DataError

RULE_FILE = "alignment.json"
RULE_FORMAT = "tt.alignment"


@dataclass(frozen=True)
class AlignRule:
    layer: int = -1  # decoder layer; negative counts from the last
    head: int | None = None  # None = the mean of the layer's heads
    shift: bool = False  # read the step whose input is the target word (shift-att) instead of the one predicting it
    threshold: float = 0.0  # 0: each target word links to its best source word; > 0: every word pair scoring this much
    bidirectional: bool = False  # argmax both ways (also each source word's best target word), grow-diag-final

    def describe(self) -> str:
        head = "mean of heads" if self.head is None else f"head {self.head}"
        pick = f"score ≥ {self.threshold:g}" if self.threshold > 0 else "argmax both ways" if self.bidirectional else "argmax"
        return f"layer {self.layer}, {head}, {'shift' if self.shift else 'plain'}, {pick}"

    def check(self, n_layers: int, h: int) -> AlignRule:
        if not -n_layers <= self.layer < n_layers:
            raise ConfigError(f"alignment layer {self.layer}: this model has {n_layers} decoder layers (0..{n_layers - 1}, or -1 for the last)")
        if self.head is not None and not 0 <= self.head < h:
            raise ConfigError(f"alignment head {self.head}: this model has {h} heads (0..{h - 1})")
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"alignment threshold must be in [0, 1], got {self.threshold}")
        return self


DEFAULT_RULE = AlignRule()  # tt's rule before the head finder: last layer, mean of heads, argmax


class Link(NamedTuple):
    source: int  # source word i
    target: int  # target word j
    score: float  # the rule's attention score for (i, j)


@dataclass
class PairAttention:
    """One sentence pair's cross-attention pooled into words, for every layer and head."""

    source_words: list[str]
    target_words: list[str]
    plain: torch.Tensor  # (n_layers, h, J, I): rows that predict each target word's pieces
    shift: torch.Tensor  # (n_layers, h, J, I): rows whose input is each target word's pieces


# --------------------------------------------------------------------------------------- words
def words(pieces: list[str]) -> list[list[int]]:
    """Piece positions grouped into words: SentencePiece marks a word's first piece with ▁.

    For text the model produced (tt translate --align), where no given word split exists."""
    groups: list[list[int]] = []
    for i, p in enumerate(pieces):
        if p in ("</s>", "<s>", "<pad>"):
            continue
        if not groups or p.startswith("\u2581"):
            groups.append([i])
        else:
            groups[-1].append(i)
    # A lone "▁" piece (space before punctuation that has its own piece) is not a word of its own.
    return [w for w in groups if any(pieces[i].strip("\u2581") for i in w)] or groups


def word_text(pieces: list[str], word: list[int]) -> str:
    return "".join(pieces[i] for i in word).replace("\u2581", "")


def word_pieces(tokenizer, line_words: list[str]) -> tuple[list[int], list[list[int]]]:
    """Piece ids of a line given as words, and each word's piece positions (a word may have none)."""
    from core.decode.source import clean_text

    ids: list[int] = []
    groups: list[list[int]] = []
    for w_ids in tokenizer.encode_batch([clean_text(w)[0] for w in line_words]) if line_words else []:
        groups.append(list(range(len(ids), len(ids) + len(w_ids))))
        ids.extend(w_ids)
    return ids, groups


def _pool(groups: list[list[int]], n: int, offset: int = 0, mean: bool = False) -> torch.Tensor:
    """(len(groups), n): row w selects word w's positions (+offset); averaged when `mean`."""
    m = torch.zeros(len(groups), n)
    for w, positions in enumerate(groups):
        for p in positions:
            if p + offset < n:
                m[w, p + offset] = 1.0 / len(positions) if mean else 1.0
    return m


# --------------------------------------------------------------------------------------- the pass
@torch.inference_mode()
def pair_attention(
    loaded, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32, names: tuple[str, str] = ("source", "target")
) -> list[PairAttention]:
    """Word-pooled cross-attention of every pair, the target teacher-forced: one pass per batch.

    A pair with an empty side gets empty matrices (no links). A line with more pieces than the model
    takes is a DataError naming `names[k]:line`.
    """
    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    device = next(model.parameters()).device
    n_layers, h = cfg.n_decoder_layers, cfg.h
    prepared = []
    for k, (src_line, tgt_line) in enumerate(pairs):
        sw, tw = src_line.split(), tgt_line.split()
        (s_ids, s_groups), (t_ids, t_groups) = word_pieces(tok, sw), word_pieces(tok, tw)
        for name, ids in ((names[0], s_ids), (names[1], t_ids)):
            if len(ids) + 1 > cfg.max_len:  # + EOS (source) or BOS (target)
                raise DataError(f"{name}:{k + 1}: {len(ids)} pieces, longer than the model's {cfg.max_len - 1}")
        prepared.append((sw, tw, s_ids, s_groups, t_ids, t_groups))
    out: list[PairAttention | None] = [
        PairAttention(sw, tw, torch.zeros(n_layers, h, len(tw), len(sw)), torch.zeros(n_layers, h, len(tw), len(sw)))
        for sw, tw, *_ in prepared
    ]
    work = sorted((k for k, p in enumerate(prepared) if p[2] and p[4]), key=lambda k: (len(prepared[k][2]), len(prepared[k][4])))
    for start in range(0, len(work), batch_size):
        batch = work[start : start + batch_size]
        srcs = [prepared[k][2] + [cfg.eos_id] for k in batch]
        tgts = [[cfg.bos_id] + prepared[k][4] for k in batch]
        src = torch.full((len(batch), max(map(len, srcs))), cfg.pad_id, dtype=torch.long)  # (B, S)
        tgt_in = torch.full((len(batch), max(map(len, tgts))), cfg.pad_id, dtype=torch.long)  # (B, T+1)
        for b, (s, t) in enumerate(zip(srcs, tgts)):
            src[b, : len(s)], tgt_in[b, : len(t)] = torch.tensor(s), torch.tensor(t)
        dec = model.decode(tgt_in.to(device), model.encode(src.to(device)), need_weights=True)
        cross = torch.stack([a.weights for a in dec.cross_attention], 1).float().cpu()  # (B, n_layers, h, T+1, S)
        for b, k in enumerate(batch):
            sw, tw, s_ids, s_groups, t_ids, t_groups = prepared[k]
            a = cross[b, :, :, : len(tgts[b]), : len(srcs[b])]  # (n_layers, h, T+1, S) of this pair
            to_src = _pool(s_groups, len(srcs[b])).T  # (S, I): sum over a source word's pieces (EOS left out)
            rows = len(tgts[b])
            plain = _pool(t_groups, rows, 0, mean=True) @ a @ to_src  # (n_layers, h, J, I)
            shift = _pool(t_groups, rows, 1, mean=True) @ a @ to_src
            out[k] = PairAttention(sw, tw, plain, shift)
    return out  # type: ignore[return-value]


# --------------------------------------------------------------------------------------- rules
def rule_scores(att: PairAttention, rule: AlignRule) -> torch.Tensor:
    """(J, I) word scores of one pair under `rule`."""
    m = (att.shift if rule.shift else att.plain)[rule.layer]  # (h, J, I)
    return m.mean(0) if rule.head is None else m[rule.head]


def extract_links(scores: torch.Tensor, threshold: float = 0.0, bidirectional: bool = False) -> list[Link]:
    """Links from a (J, I) score matrix: each target word's argmax, or every cell ≥ threshold.

    bidirectional: each target word's best source word and each source word's best target word,
    combined by grow-diag-final — the same matrix read both ways, as two aligners would be."""
    if scores.numel() == 0:
        return []
    if threshold > 0:
        return sorted(Link(i, j, float(scores[j, i])) for j, i in (scores >= threshold).nonzero().tolist())
    best, where = scores.max(dim=1)  # (J,)
    # A word with no pieces has an all-zero row or column: it gets no link.
    links = {(i, j) for j, (s, i) in enumerate(zip(best.tolist(), where.tolist())) if s > 0}
    if bidirectional:
        best, where = scores.max(dim=0)  # (I,)
        links = symmetrize(links, {(i, j) for i, (s, j) in enumerate(zip(best.tolist(), where.tolist())) if s > 0})
    return sorted(Link(i, j, float(scores[j, i])) for i, j in links)


def align(
    attentions: Sequence[PairAttention],
    rule: AlignRule = DEFAULT_RULE,
    reverse: Sequence[PairAttention] | None = None,
    reverse_rule: AlignRule = DEFAULT_RULE,
    symmetrization: str = "grow-diag-final",
) -> list[list[Link]]:
    """Links of each pair under `rule`; with `reverse` (a target→source model's attention over the
    same pairs, sides swapped), both directions symmetrized. A symmetrized link scores the mean of
    the two directions' scores."""
    result = []
    for k, att in enumerate(attentions):
        scores = rule_scores(att, rule)  # (J, I)
        links = extract_links(scores, rule.threshold, rule.bidirectional)
        if reverse is not None:
            back_scores = rule_scores(reverse[k], reverse_rule)  # (I, J): the reverse model's rows are source words
            back = {(link.target, link.source) for link in extract_links(back_scores, reverse_rule.threshold, reverse_rule.bidirectional)}
            kept = symmetrize({(i, j) for i, j, _ in links}, back, symmetrization)
            links = [Link(i, j, float(scores[j, i] + back_scores[i, j]) / 2) for i, j in sorted(kept)]
        result.append(links)
    return result


def candidate_rules(n_layers: int, h: int) -> list[AlignRule]:
    """Every (layer, head) and each layer's mean of heads; plain and shift; argmax one way and both ways."""
    return [
        AlignRule(layer, head, shift, bidirectional=both)
        for layer in range(n_layers)
        for shift in (False, True)
        for head in (None, *range(h))
        for both in (False, True)
    ]


def rank_rules(
    attentions: Sequence[PairAttention], gold: Sequence[GoldPair], rules: Sequence[AlignRule] | None = None
) -> list[tuple[AlignRule, AlignmentScore]]:
    """Every candidate rule scored against gold links, best (lowest AER) first."""
    if not attentions:
        raise DataError("no sentence pairs to rank alignment rules on")
    n_layers, h = attentions[0].plain.shape[:2]
    rules = rules or candidate_rules(n_layers, h)
    scored = []
    for rule in rules:
        links = [{(i, j) for i, j, _ in extract_links(rule_scores(att, rule), rule.threshold, rule.bidirectional)} for att in attentions]
        scored.append((rule, score_links(links, gold)))
    return sorted(scored, key=lambda rs: (rs[1].aer, -rs[1].recall))


# --------------------------------------------------------------------------------------- stored rule
@dataclass
class StoredAlignment:
    rule: AlignRule
    ranking: list[dict]  # what the head finder measured: rule fields + aer, precision, recall
    found_on: dict  # the gold set it was measured on


def read_alignment(model_dir: str | Path) -> StoredAlignment | None:
    """The model's alignment.json, or None when the directory has none (every model before it)."""
    path = Path(model_dir) / RULE_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != RULE_FORMAT:
            raise ValueError(f"format is not {RULE_FORMAT!r}")
        rule = AlignRule(**data["rule"])
        if not isinstance(rule.layer, int) or not (rule.head is None or isinstance(rule.head, int)):
            raise ValueError("layer and head must be integers")
        if not isinstance(rule.shift, bool) or not isinstance(rule.bidirectional, bool):
            raise ValueError("shift and bidirectional must be true or false")
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CheckpointError(f"{path}: not a valid alignment rule ({exc})") from None
    return StoredAlignment(rule, list(data.get("ranking", [])), dict(data.get("found_on", {})))


def load_rule(model_dir: str | Path | None) -> AlignRule:
    """The rule stored with the model, else DEFAULT_RULE."""
    stored = read_alignment(model_dir) if model_dir is not None else None
    return stored.rule if stored else DEFAULT_RULE


def save_rule(model_dir: str | Path, ranking: list[tuple[AlignRule, AlignmentScore]], found_on: dict) -> Path:
    """Store the best ranked rule (and the whole ranking, for views) as model_dir/alignment.json."""
    from core.files import atomic_write_bytes

    rows = [{**asdict(r), **{k: round(v, 4) for k, v in asdict(s).items() if isinstance(v, float)}} for r, s in ranking]
    data = {"format": RULE_FORMAT, "version": 1, "rule": asdict(ranking[0][0]), "found_on": found_on}
    # One line per ranked rule: the file stays short enough to read.
    text = json.dumps(data, indent=1)[:-2] + ',\n "ranking": [\n  ' + ",\n  ".join(map(json.dumps, rows)) + "\n ]\n}\n"
    path = Path(model_dir) / RULE_FILE
    atomic_write_bytes(path, text.encode("utf-8"))
    return path


# --------------------------------------------------------------------------------------- a translation
def align_words(
    source_pieces: list[str], target_pieces: list[str], cross: torch.Tensor, shift: bool = False,
    threshold: float = 0.0, bidirectional: bool = False,
) -> list[tuple[int, int]]:
    """(source word, target word) pairs for pieces grouped by `words`: each target word goes to the
    source word with the most attention mass in `cross` (T_out, S), one layer's head or mean of
    heads, rows = output steps (EOS's last). shift reads the row after each piece's own."""
    src_words, tgt_words = words(source_pieces), words(target_pieces)
    if not src_words or not tgt_words:
        return []
    scores = _pool(tgt_words, cross.size(0), int(shift), mean=True) @ cross.float() @ _pool(src_words, cross.size(1)).T  # (J, I)
    return [(i, j) for i, j, _ in sorted(extract_links(scores, threshold, bidirectional), key=lambda link: (link.target, link.source))]


def align_steps(source_pieces: list[str], steps, rule: AlignRule = DEFAULT_RULE) -> list[tuple[int, int]]:
    """Word links of one translation's trace (a list of core.analysis.trace.StepTrace) under `rule`.

    The pure function views call: `tt translate --align` and, later, the TUI's alignment marks."""
    if not steps:
        return []
    stacked = torch.stack([s.cross[rule.layer] for s in steps], 1)  # (h, T, S)
    cross = stacked.mean(0) if rule.head is None else stacked[rule.head]  # (T, S)
    return align_words(source_pieces, [s.piece for s in steps], cross, rule.shift, rule.threshold, rule.bidirectional)


def head_ranking(model_dir: str | Path | None) -> list[dict]:
    """The head finder's ranking stored with the model (best first), [] when it was never run."""
    stored = read_alignment(model_dir) if model_dir is not None else None
    return stored.ranking if stored else []
