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

from core.align.aer import SYMMETRIZATIONS, AlignmentScore, GoldPair, score_links, symmetrize
from core.errors import CheckpointError, ConfigError, DataError
from core.model.attention import layer_number

RULE_FILE = "alignment.json"
RULE_FORMAT = "tt.alignment"


@dataclass(frozen=True)
class AlignRule:
    """Indices are 0-based, as stored in alignment.json; `describe` shows them counted from 1."""

    layer: int = -1  # decoder layer index; negative counts from the last
    head: int | None = None  # None = the mean of the layer's heads
    shift: bool = False  # read the step whose input is the target word (shift-att) instead of the one predicting it
    threshold: float = 0.0  # 0: each target word links to its best source word; > 0: every word pair scoring this much
    bidirectional: bool = False  # argmax both ways (also each source word's best target word), grow-diag-final
    full_context: bool = (
        False  # read a second pass without the look-ahead mask (a head trained with --align-full-context)
    )

    def describe(self, n_layers: int | None = None) -> str:
        """The rule in words, its layer and head counted from 1 as everywhere tt prints them ("layer 3, head 2");
        a layer counted from the last stays so ("last layer") unless `n_layers` says which it is."""
        if n_layers:
            layer = f"layer {layer_number(self.layer, n_layers)}"
        elif self.layer >= 0:
            layer = f"layer {self.layer + 1}"
        else:
            layer = "last layer" if self.layer == -1 else f"layer {self.layer} (from the last)"
        head = "mean of heads" if self.head is None else f"head {self.head + 1}"
        pick = (
            f"score ≥ {self.threshold:g}"
            if self.threshold > 0
            else "argmax both ways"
            if self.bidirectional
            else "argmax"
        )
        row = "full context" if self.full_context else "shift" if self.shift else "plain"
        return f"{layer}, {head}, {row}, {pick}"

    def check(self, n_layers: int, h: int) -> AlignRule:
        if not -n_layers <= self.layer < n_layers:
            raise ConfigError(
                f"alignment layer index {self.layer}: this model has {n_layers} decoder layers "
                f"(0..{n_layers - 1} in alignment.json, shown as 1..{n_layers})"
            )
        if self.head is not None and not 0 <= self.head < h:
            raise ConfigError(
                f"alignment head index {self.head}: this model has {h} heads (0..{h - 1} in alignment.json, shown as 1..{h})"
            )
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"alignment threshold must be in [0, 1], got {self.threshold}")
        if self.shift and self.full_context:
            raise ConfigError("an alignment rule reads shifted rows or the full-context pass, not both")
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
    full: torch.Tensor | None = None  # (n_layers, h, J, I): plain rows of the pass without look-ahead mask, when asked


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
    loaded,
    pairs: Sequence[tuple[str, str]],
    *,
    batch_size: int = 32,
    names: tuple[str, str] = ("source", "target"),
    full_context: bool = False,
) -> list[PairAttention]:
    """Word-pooled cross-attention of every pair, the target teacher-forced: one pass per batch.

    full_context adds a second decoder pass per batch without the look-ahead mask (`full`), for rules
    that read a head trained that way. A pair with an empty side gets empty matrices (no links). A
    line with more pieces than the model takes is a DataError naming `names[k]:line`.
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

    def empty(sw: list[str], tw: list[str]) -> torch.Tensor:
        return torch.zeros(n_layers, h, len(tw), len(sw))

    out: list[PairAttention | None] = [
        PairAttention(sw, tw, empty(sw, tw), empty(sw, tw), empty(sw, tw) if full_context else None)
        for sw, tw, *_ in prepared
    ]
    work = sorted(
        (k for k, p in enumerate(prepared) if p[2] and p[4]), key=lambda k: (len(prepared[k][2]), len(prepared[k][4]))
    )
    for start in range(0, len(work), batch_size):
        batch = work[start : start + batch_size]
        srcs = [prepared[k][2] + [cfg.eos_id] for k in batch]
        tgts = [[cfg.bos_id] + prepared[k][4] for k in batch]
        src = torch.full((len(batch), max(map(len, srcs))), cfg.pad_id, dtype=torch.long)  # (B, S)
        tgt_in = torch.full((len(batch), max(map(len, tgts))), cfg.pad_id, dtype=torch.long)  # (B, T+1)
        for b, (s, t) in enumerate(zip(srcs, tgts)):
            src[b, : len(s)], tgt_in[b, : len(t)] = torch.tensor(s), torch.tensor(t)
        enc = model.encode(src.to(device))
        cross = _cross(
            model.decode(tgt_in.to(device), enc, need_weights=True, skip_generator=True)
        )  # (B, n_layers, h, T+1, S)
        full = (
            _cross(model.decode(tgt_in.to(device), enc, need_weights=True, skip_generator=True, full_context=True))
            if full_context
            else None
        )
        for b, k in enumerate(batch):
            sw, tw, s_ids, s_groups, t_ids, t_groups = prepared[k]
            rows, cols = len(tgts[b]), len(srcs[b])
            to_src = _pool(s_groups, cols).T  # (S, I): sum over a source word's pieces (EOS left out)
            to_word = _pool(t_groups, rows, 0, mean=True)  # (J, T+1): the rows predicting a word's pieces
            plain = to_word @ cross[b, :, :, :rows, :cols] @ to_src  # (n_layers, h, J, I)
            shift = _pool(t_groups, rows, 1, mean=True) @ cross[b, :, :, :rows, :cols] @ to_src
            out[k] = PairAttention(
                sw, tw, plain, shift, None if full is None else to_word @ full[b, :, :, :rows, :cols] @ to_src
            )
    return out  # type: ignore[return-value]


def _cross(dec) -> torch.Tensor:
    return torch.stack([a.weights for a in dec.cross_attention], 1).float().cpu()  # (B, n_layers, h, T, S)


@torch.inference_mode()
def full_context_cross(model, src_ids: list[int], out_ids: list[int]) -> list[torch.Tensor]:
    """Each decoder layer's cross-attention (h, T, S) of one translation re-read without the look-ahead
    mask: src_ids with EOS, out_ids the produced pieces with EOS (one row each, as a trace's steps).

    What a full-context rule reads for `tt translate --align` and the TUI, where decoding itself is causal."""
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)
    tgt_in = torch.tensor([[model.cfg.bos_id, *out_ids[:-1]]], device=device)
    dec = model.decode(tgt_in, model.encode(src), need_weights=True, full_context=True, skip_generator=True)
    return list(_cross(dec)[0])


# --------------------------------------------------------------------------------------- rules
def rule_scores(att: PairAttention, rule: AlignRule) -> torch.Tensor:
    """(J, I) word scores of one pair under `rule`."""
    if rule.full_context and att.full is None:
        raise ConfigError("this rule reads the full-context pass: compute pair_attention(..., full_context=True)")
    m = (att.full if rule.full_context else att.shift if rule.shift else att.plain)[rule.layer]  # (h, J, I)
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
            back_scores, back = _reverse_links(reverse[k], reverse_rule)
            kept = symmetrize({(i, j) for i, j, _ in links}, back, symmetrization)
            links = [Link(i, j, float(scores[j, i] + back_scores[i, j]) / 2) for i, j in sorted(kept)]
        result.append(links)
    return result


def _reverse_links(reverse: PairAttention, rule: AlignRule) -> tuple[torch.Tensor, set[tuple[int, int]]]:
    """A target→source model's scores (I, J) for a pair, and its links as (source i, target j)."""
    scores = rule_scores(reverse, rule)  # the reverse model's rows are source words
    return scores, {(link.target, link.source) for link in extract_links(scores, rule.threshold, rule.bidirectional)}


def candidate_rules(n_layers: int, h: int, full_context: bool = False) -> list[AlignRule]:
    """Every (layer, head) and each layer's mean of heads; plain and shift (and, with `full_context`,
    the unmasked pass's rows); argmax one way and both ways."""
    rows = [(False, False), (True, False)] + ([(False, True)] if full_context else [])
    return [
        AlignRule(layer, head, shift, bidirectional=both, full_context=full)
        for layer in range(n_layers)
        for shift, full in rows
        for head in (None, *range(h))
        for both in (False, True)
    ]


def rank_rules(
    attentions: Sequence[PairAttention], gold: Sequence[GoldPair], rules: Sequence[AlignRule] | None = None
) -> list[tuple[AlignRule, AlignmentScore]]:
    """Every candidate rule scored against gold links, best (lowest AER) first; on equal AER, higher
    recall, then more attention on the gold links."""
    if not attentions:
        raise DataError("no sentence pairs to rank alignment rules on")
    n_layers, h = attentions[0].plain.shape[:2]
    rules = rules or candidate_rules(n_layers, h, full_context=attentions[0].full is not None)
    scored = []
    for rule in rules:
        matrices = [rule_scores(att, rule) for att in attentions]  # (J, I) each
        links = [{(i, j) for i, j, _ in extract_links(m, rule.threshold, rule.bidirectional)} for m in matrices]
        scored.append((rule, score_links(links, gold), _gold_mass(matrices, gold)))
    # A sharp head and the mean of its layer often pick the same links (equal AER and recall): then the
    # rule that puts more of its attention on the gold links wins, so the winner never rests on list
    # order or on float noise in near-equal scores; rules with identical scores keep candidate order.
    scored.sort(key=lambda r: (r[1].aer, -r[1].recall, -r[2]))
    return [(rule, score) for rule, score, _ in scored]


def _gold_mass(matrices: Sequence[torch.Tensor], gold: Sequence[GoldPair]) -> float:
    """The mean score a rule's (J, I) matrices give the gold links (sure and possible)."""
    total, count = 0.0, 0
    for m, g in zip(matrices, gold):
        for i, j in g.possible:
            if j < m.size(0) and i < m.size(1):
                total += float(m[j, i])
            count += 1
    return total / count if count else 0.0


# --------------------------------------------------------------------------------------- stored rule
@dataclass
class StoredAlignment:
    rule: AlignRule
    ranking: list[dict]  # what the head finder measured: rule fields + aer, precision, recall
    found_on: dict  # the gold set it was measured on
    # With the shipped model of the other direction: how the two directions' links combine, and what that
    # scored on the same gold ({"method", "reverse": [source, target], "aer", "precision", "recall"});
    # stored only where it scored a lower AER than the rule alone. None: the model aligns alone.
    symmetrize: dict | None = None


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
        if not all(isinstance(flag, bool) for flag in (rule.shift, rule.bidirectional, rule.full_context)):
            raise ValueError("shift, bidirectional and full_context must be true or false")
        both = data.get("symmetrize")
        if both is not None and (both.get("method") not in SYMMETRIZATIONS or len(both.get("reverse", ())) != 2):
            raise ValueError(f"symmetrize needs a method ({', '.join(SYMMETRIZATIONS)}) and a reverse language pair")
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CheckpointError(f"{path}: not a valid alignment rule ({exc})") from None
    return StoredAlignment(rule, list(data.get("ranking", [])), dict(data.get("found_on", {})), both)


def load_rule(model_dir: str | Path | None) -> AlignRule:
    """The rule stored with the model, else DEFAULT_RULE."""
    stored = read_alignment(model_dir) if model_dir is not None else None
    return stored.rule if stored else DEFAULT_RULE


def save_rule(
    model_dir: str | Path,
    ranking: list[tuple[AlignRule, AlignmentScore]],
    found_on: dict,
    symmetrize: dict | None = None,
) -> Path:
    """Store the best ranked rule (and the whole ranking, for views) as model_dir/alignment.json, with how
    the two directions combine where that was measured better (`symmetrize`)."""
    from core.files import atomic_write_bytes

    rows = [{**asdict(r), **{k: round(v, 4) for k, v in asdict(s).items() if isinstance(v, float)}} for r, s in ranking]
    data = {"format": RULE_FORMAT, "version": 1, "rule": asdict(ranking[0][0]), "found_on": found_on}
    if symmetrize is not None:
        data["symmetrize"] = symmetrize
    # One line per ranked rule: the file stays short enough to read.
    text = json.dumps(data, indent=1)[:-2] + ',\n "ranking": [\n  ' + ",\n  ".join(map(json.dumps, rows)) + "\n ]\n}\n"
    path = Path(model_dir) / RULE_FILE
    atomic_write_bytes(path, text.encode("utf-8"))
    return path


def rank_symmetrizations(
    forward: Sequence[PairAttention],
    rule: AlignRule,
    reverse: Sequence[PairAttention],
    reverse_rule: AlignRule,
    gold: Sequence[GoldPair],
) -> list[tuple[str, AlignmentScore]]:
    """Each way of combining the two directions' links (core.align.aer.SYMMETRIZATIONS), scored against
    gold links, best (lowest AER, then higher recall) first."""
    ahead = [{(i, j) for i, j, _ in links} for links in align(forward, rule)]
    back = [_reverse_links(att, reverse_rule)[1] for att in reverse]  # each direction's links, found once
    scored = []
    for method in SYMMETRIZATIONS:
        links = [symmetrize(f, b, method) for f, b in zip(ahead, back)]
        scored.append((method, score_links(links, gold)))
    return sorted(scored, key=lambda r: (r[1].aer, -r[1].recall))


# --------------------------------------------------------------------------------------- a translation
def align_words(
    source_pieces: list[str],
    target_pieces: list[str],
    cross: torch.Tensor,
    shift: bool = False,
    threshold: float = 0.0,
    bidirectional: bool = False,
) -> list[tuple[int, int]]:
    """(source word, target word) pairs for pieces grouped by `words`: each target word goes to the
    source word with the most attention mass in `cross` (T_out, S), one layer's head or mean of
    heads, rows = output steps (EOS's last). shift reads the row after each piece's own."""
    src_words, tgt_words = words(source_pieces), words(target_pieces)
    if not src_words or not tgt_words:
        return []
    scores = (
        _pool(tgt_words, cross.size(0), int(shift), mean=True) @ cross.float() @ _pool(src_words, cross.size(1)).T
    )  # (J, I)
    return [
        (i, j)
        for i, j, _ in sorted(
            extract_links(scores, threshold, bidirectional), key=lambda link: (link.target, link.source)
        )
    ]


def align_steps(
    source_pieces: list[str], steps, rule: AlignRule = DEFAULT_RULE, full_cross: Sequence[torch.Tensor] | None = None
) -> list[tuple[int, int]]:
    """Word links of one translation's trace (a list of core.decode.trace.StepTrace) under `rule`.

    The pure function views call: `tt translate --align` and the TUI's alignment marks. A full-context
    rule reads `full_cross` (`full_context_cross` of the same translation) instead of the trace."""
    if not steps:
        return []
    if rule.full_context:
        if full_cross is None:
            raise ConfigError("this alignment rule reads the full-context pass: give full_cross")
        stacked = full_cross[rule.layer][:, : len(steps), : len(source_pieces)]  # (h, T, S)
    else:
        stacked = torch.stack([s.cross[rule.layer] for s in steps], 1)  # (h, T, S)
    cross = stacked.mean(0) if rule.head is None else stacked[rule.head]  # (T, S)
    return align_words(source_pieces, [s.piece for s in steps], cross, rule.shift, rule.threshold, rule.bidirectional)


def head_ranking(model_dir: str | Path | None) -> list[dict]:
    """The head finder's ranking stored with the model (best first), [] when it was never run."""
    stored = read_alignment(model_dir) if model_dir is not None else None
    return stored.ranking if stored else []
