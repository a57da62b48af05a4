"""tt for programs: load a model once, translate lists of sentences, get plain results (and traces).

    from core import Translator

    translator = Translator()                       # $TT_MODEL, else the shipped model
    results = translator.translate(["Je suis étudiant."])
    results[0].text, results[0].to_dict()           # to_dict(): the keys of `tt translate --json`

This module is the stable surface; everything it returns is plain data. `import core` stays light
(torch loads on first use of `core.Translator`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from core.decode.trace import SourceTrace, StepTrace
from core.decode.translate import Translation


@dataclass(frozen=True)
class Alternative:
    """One hypothesis of an n-best list."""

    text: str
    pieces: list[str]
    token_logprobs: list[float]
    score: float


@dataclass(frozen=True)
class Result:
    """The translation of one sentence."""

    index: int  # its position in the list given to translate()
    source: str
    text: str  # "" for an empty or whitespace-only sentence
    pieces: list[str]  # SentencePiece pieces of `text` ("▁" marks a word start)
    token_ids: list[int]
    token_logprobs: list[float]  # one per piece, then EOS's when decoding stopped by itself
    score: float  # beam search: length-normalised; greedy and sampling: the log-probability
    truncated: bool  # the source was longer than the model's max_len and was cut
    warnings: list[str] = field(default_factory=list)
    n_best: list[Alternative] = field(default_factory=list)  # best first, when n_best > 1
    source_trace: SourceTrace | None = None  # with trace=True: the source pieces, encoder self-attention
    steps: list[StepTrace] | None = None  # with trace=True: per output piece, attention and candidates
    translation: Translation | None = field(default=None, repr=False, compare=False)  # core's own record

    @property
    def logprob(self) -> float:
        return sum(self.token_logprobs)

    def to_dict(self) -> dict:
        """JSON-ready, with the keys `tt translate --json` prints (without --attention / --align)."""
        return self.translation.to_dict()

    def attention(self, family: str = "cross", layer: int = -1, head: int | None = None) -> list[list[float]]:
        """One attention matrix as nested lists (rows = queries): cross (output × source pieces),
        decoder_self (output × output) or encoder_self (source × source); head None = the mean of the heads.
        Needs translate(..., trace=True)."""
        from core.decode.trace import attention_matrix
        from core.errors import TTError

        if self.source_trace is None or self.steps is None:
            raise TTError("no trace: translate with trace=True to get attention")
        return attention_matrix(self.source_trace, self.steps, family, layer, head).tolist()


class Translator:
    """A model loaded once; `translate` as many lists as you like.

    model: a model directory (what `tt train` writes); None = $TT_MODEL, else the shipped model.
    device: auto, cpu, cuda, cuda:N or mps. The decoding keywords are `tt translate`'s options and
    the paper's defaults (beam 4, α 0.6); each call to `translate` may override them.
    """

    def __init__(self, model: str | Path | None = None, *, device: str = "auto", **decoding) -> None:
        from core.checkpoint import load_model
        from core.decode.translate import TranslateOptions
        from core.device import resolve_device

        self.options = TranslateOptions(**decoding).validate()
        self.loaded = load_model(model, device=resolve_device(device), packed=True)

    @property
    def path(self) -> Path:
        """The model directory in use."""
        return self.loaded.path

    def translate(self, sentences: list[str], *, trace: bool = False, **decoding) -> list[Result]:
        """One Result per sentence, in order. trace=True also returns what the model attended to
        at every step (source_trace, steps; see Result.attention)."""
        from core.decode.translate import translate_lines

        if isinstance(sentences, str):
            raise TypeError("translate() takes a list of sentences; for one: translate([text])[0]")
        options = replace(self.options, with_attention=trace, **decoding).validate()
        return [_result(t) for t in translate_lines(self.loaded, list(sentences), options)]


def _result(t) -> Result:
    return Result(
        index=t.index,
        source=t.source,
        text=t.text,
        pieces=t.pieces,
        token_ids=t.tokens,
        token_logprobs=t.token_logprobs,
        score=t.score,
        truncated=t.truncated,
        warnings=t.warnings,
        n_best=[Alternative(a.text, a.pieces, a.token_logprobs, a.score) for a in t.alternatives],
        source_trace=t.source_trace,
        steps=t.steps,
        translation=t,
    )
