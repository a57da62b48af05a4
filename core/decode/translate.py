"""Translate text: the one high-level API that `tt translate`, `tt eval` and the TUI call.

    lines ──prepare_source──▶ pieces (+EOS, cut to fit) ──length-sorted batches──▶ greedy / beam / sample
          ──restore input order──▶ Translation (text, pieces, log-probs; attention trace when asked)

`translate_lines` streams: it reads a chunk of lines, translates it and yields before reading on,
so memory stays flat on a file of any length. Core never prints; warnings come back on each
Translation and the caller decides how to show them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from core.checkpoint import LoadedModel
from core.decode.lines import chunks as _chunks
from core.decode.lines import read_lines  # noqa: F401 - the commands read their input from here
from core.decode.method import TranslateOptions  # noqa: F401 - the decoding record, beside the function it drives
from core.decode.records import Alternative
from core.decode.source import prepare_source
from core.decode.trace import SourceTrace, StepTrace, attention_matrix, trace_steps
from core.errors import ConfigError, TTError
from core.text.entities import keep_source_entities

Stop = Callable[[], bool] | None  # asked between decoding steps: True stops the decode (core.errors.Stopped)

# Characters that would split one output line into several for a reader using str.splitlines().
_LINE_BREAKS = dict.fromkeys(map(ord, "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), " ")


@dataclass
class Translation:
    """One translated sentence: the one record behind `translate_lines`, the Python API (core.Translator),
    `tt translate` (plain, --json, n-best), the REPL, a trace file and the TUI."""

    index: int  # position of the line in the input (0-based)
    source: str  # the line as given
    text: str  # the translation; "" for an empty or whitespace-only line
    token_ids: list[int] = field(default_factory=list)  # output piece ids, without BOS/EOS
    pieces: list[str] = field(default_factory=list)  # SentencePiece pieces of `text` ("▁" marks a word start)
    token_logprobs: list[float] = field(default_factory=list)  # one per piece, EOS's last when produced
    score: float = 0.0  # beam search: length-normalised; greedy and sampling: the log-probability
    source_tokens: list[int] = field(default_factory=list)  # encoder input, EOS last
    truncated: bool = False  # the source was cut to the model's max_len
    warnings: list[str] = field(default_factory=list)  # messages about the line; the writer says which line
    n_best: list[Alternative] = field(default_factory=list)  # best first, when options.n_best > 1
    source_trace: SourceTrace | None = None  # when options.with_attention: source pieces, encoder self-attention
    steps: list[StepTrace] | None = None  # ... and per output piece, attention and candidates

    @property
    def logprob(self) -> float:
        return sum(self.token_logprobs)

    @property
    def eos_produced(self) -> bool:
        """Decoding stopped by itself (EOS scored) rather than at the length limit."""
        return len(self.token_logprobs) > len(self.token_ids)

    def attention(self, family: str = "cross", layer: int = -1, head: int | None = None) -> list[list[float]]:
        """One attention matrix as nested lists (rows = queries): cross (output × source pieces),
        decoder_self (output × output) or encoder_self (source × source); head None = the mean of the heads.
        Needs the trace (translate(..., trace=True), or options.with_attention)."""
        if self.source_trace is None or self.steps is None:
            raise TTError("no trace: translate with trace=True to get attention")
        return attention_matrix(self.source_trace, self.steps, family, layer, head).tolist()

    def to_dict(self) -> dict:
        """The keys of `tt translate --json` before --attention/--align (the Python API's to_dict too)."""
        obj: dict = {
            "index": self.index,
            "source": self.source,
            "translation": self.text,
            "tokens": self.pieces,  # pieces, under the key users of --json read
            "token_ids": self.token_ids,
            "token_logprobs": [round(x, 4) for x in self.token_logprobs],
            "score": round(self.score, 4),  # beam search: length-normalised; greedy/sampling: = logprob
            "logprob": round(sum(self.token_logprobs), 4),
            "truncated": self.truncated,
        }
        if self.n_best:
            obj["n_best"] = [
                {
                    "translation": a.text,
                    "tokens": a.pieces,
                    "token_logprobs": [round(x, 4) for x in a.token_logprobs],
                    "score": round(a.score, 4),
                }
                for a in self.n_best
            ]
        return obj


# --------------------------------------------------------------------------------------- input
def one_line(text: str) -> str:
    """Text with every line-break character turned into a space."""
    return text.translate(_LINE_BREAKS)


# --------------------------------------------------------------------------------------- decoding
def _decode_batch(
    loaded: LoadedModel, sources: list[list[int]], options: TranslateOptions, batch_no: int, stop: Stop = None
):
    """Hypothesis lists (best first) for each source, in the order given."""
    from core.decode import search as decoding
    from core.decode.beam import beam_search

    model, cfg = loaded.model, loaded.cfg
    device = next(model.parameters()).device
    src = decoding.pad_batch(sources, cfg.pad_id, device)  # (B, S)
    method = options.search
    if method == "greedy":
        return [[h] for h in decoding.greedy(model, src, extra_len=options.extra_len, stop=stop)]
    if method == "sample":
        # A different seed per batch, so equal lines in different batches need not sample alike;
        # the same input with the same --seed still gives the same output.
        seed = None if options.seed is None else options.seed + batch_no
        hyps = decoding.sample(
            model,
            src,
            temperature=options.temperature,
            top_k=options.top_k,
            top_p=options.top_p,
            seed=seed,
            extra_len=options.extra_len,
            stop=stop,
        )
        return [[h] for h in hyps]
    reranking = options.rerank > 0
    if reranking and loaded.reverse is None:
        raise ConfigError("--rerank needs the reverse direction's model loaded (core.decode.rerank.with_reverse)")
    found = beam_search(
        model,
        src,
        beam_size=options.beam,
        alpha=options.alpha,
        extra_len=options.extra_len,
        n_best=None if reranking else options.n_best,  # reranking chooses among every finished hypothesis
        stop=stop,
    )
    return _reranked(loaded, sources, found, options) if reranking else found


def _reranked(loaded: LoadedModel, sources: list[list[int]], found: list, options: TranslateOptions) -> list:
    """The best RERANK_TOP of beam search's finished hypotheses `found` of each source (more when n_best asks),
    reranked with the reverse model (core.decode.rerank), n_best of them kept."""
    from core.decode.rerank import RERANK_TOP, rerank

    tok = loaded.tokenizer
    found = [hyps[: max(RERANK_TOP, options.n_best)] for hyps in found]  # the best by beam search's own score
    texts = [tok.decode(ids[:-1]) for ids in sources]  # the model inputs, EOS off
    outputs = [[tok.decode(h.tokens) for h in hyps] for hyps in found]
    ranked = rerank(found, texts, outputs, loaded.reverse, options.alpha, options.rerank)
    return [hyps[: options.n_best] for hyps in ranked]


def translate_lines(
    loaded: LoadedModel, lines: Iterable[str], options: TranslateOptions | None = None, stop: Stop = None
) -> Iterator[Translation]:
    """One Translation per line of `lines`, in order, streamed.

    Lines are read a chunk at a time (up to 4 batches: what is available, see `_chunks`), sorted by
    length inside the chunk so each batch pads little, translated, and handed back in input order
    before the next chunk is taken; a slow producer gets each line answered as soon as it arrives.
    `stop` is asked before every decoding step: True raises core.errors.Stopped (a server whose client
    hung up spends no more on its lines).
    """
    options = (options or TranslateOptions()).validate()
    tok, cfg = loaded.tokenizer, loaded.cfg
    index = batch_no = 0
    for chunk in _chunks(lines, options.batch_size * 4):
        results: list[Translation] = []
        work: list[int] = []  # positions in `results` that need the model
        for line in chunk:
            prepared = prepare_source(tok, line, cfg.max_len)
            t = Translation(index=index, source=line, text="", source_tokens=prepared.ids, truncated=prepared.truncated)
            t.warnings = list(prepared.warnings)
            index += 1
            if prepared.ids:
                work.append(len(results))
            results.append(t)
        work.sort(key=lambda i: len(results[i].source_tokens))
        for start in range(0, len(work), options.batch_size):
            batch = work[start : start + options.batch_size]
            nbest = _decode_batch(loaded, [results[i].source_tokens for i in batch], options, batch_no, stop)
            batch_no += 1
            for i, hyps in zip(batch, nbest):
                _fill(loaded, results[i], hyps, options)
        yield from results


def _fill(loaded: LoadedModel, t: Translation, hyps: list, options: TranslateOptions) -> None:
    tok = loaded.tokenizer
    alts = [
        Alternative(
            keep_source_entities(t.source, one_line(tok.decode(h.tokens))),
            list(h.tokens),
            tok.pieces(h.tokens),
            list(h.token_logprobs),
            float(h.score),
        )
        for h in hyps
    ]
    best = alts[0]
    t.text, t.token_ids, t.pieces, t.token_logprobs, t.score = (
        best.text,
        best.token_ids,
        best.pieces,
        best.token_logprobs,
        best.score,
    )
    t.n_best = alts if options.n_best > 1 else []
    if options.with_attention:
        out = t.token_ids + ([loaded.cfg.eos_id] if t.eos_produced else [])
        t.source_trace, t.steps = trace_steps(loaded, t.source_tokens, out, top_k=options.n_candidates, text=t.source)


def translate_constrained(
    loaded: LoadedModel, sentences: list[str], terms: list[list[str]], options: TranslateOptions | None = None
) -> list[Translation]:
    """One Translation per sentence whose output holds each of its `terms` (English phrases), placed by
    lexically constrained beam search (core.decode.constrained): a glossary's terms where the model finds
    them most probable, inflected (a plural) where it can. A term that cannot be placed (the length limit)
    is missing from the best hypothesis; the caller checks for it. The beam and α are `options`'s."""
    import torch

    from core.decode.constrained import constrained_beam_search
    from core.text.glossary import plural

    options = (options or TranslateOptions()).validate()
    tok, cfg = loaded.tokenizer, loaded.cfg
    device = next(loaded.model.parameters()).device
    out = []
    for index, (line, phrases) in enumerate(zip(sentences, terms)):
        prepared = prepare_source(tok, line, cfg.max_len)
        t = Translation(index=index, source=line, text="", source_tokens=prepared.ids, truncated=prepared.truncated)
        t.warnings = list(prepared.warnings)
        if prepared.ids:
            constraints = [[tok.encode(p), tok.encode(plural(p))] for p in phrases]
            found = constrained_beam_search(
                loaded.model,
                torch.tensor([prepared.ids], device=device),
                constraints,
                beam_size=max(options.beam, 1),
                alpha=options.alpha,
                extra_len=options.extra_len,
                n_best=max(options.n_best, 1),
            )
            _fill(loaded, t, found.hypotheses, options)
        out.append(t)
    return out
