"""The records of a translated line: one per sentence (`SentenceResult`), one per line (`TextResult`).

What `tt translate --json`, the REPL, the API and a server write: `to_dict()` is the JSON of docs/text.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.text.confidence import Confidence
from core.text.spans import Span


@dataclass(frozen=True)
class Decoded:
    """One decoded sentence as the text pipeline reads it: what translate_batch returns for each sentence,
    and each hypothesis of its beam. `of` makes one of a core Translation (core.api.Result)."""

    text: str
    pieces: tuple[str, ...] = ()  # SentencePiece pieces of `text`
    token_logprobs: tuple[float, ...] = ()  # one per piece, EOS's last when produced
    token_ids: tuple[int, ...] = ()
    score: float = 0.0
    warnings: tuple[str, ...] = ()  # messages about the sentence (truncation); the writer says which line
    cross: list[list[float]] | None = None  # output steps × source pieces: the coverage signal's attention
    n_best: tuple[Decoded, ...] = ()  # the beam's hypotheses, best first (each without warnings or attention)

    @classmethod
    def of(cls, t, cross: list[list[float]] | None = None) -> Decoded:
        """The record of a core Translation (or anything with its fields), with `cross` when the coverage
        signal is wanted."""
        n_best = tuple(
            cls(a.text, tuple(a.pieces), tuple(a.token_logprobs), tuple(a.token_ids), a.score) for a in t.n_best
        )
        return cls(
            t.text,
            tuple(t.pieces),
            tuple(t.token_logprobs),
            tuple(t.token_ids),
            t.score,
            tuple(t.warnings),
            cross,
            n_best,
        )

    def taking(self, hypothesis: Decoded) -> Decoded:
        """This sentence with another of its hypotheses as its output: its warnings and n-best kept, no
        attention (the decoder traced only its best hypothesis)."""
        return replace(hypothesis, warnings=self.warnings, n_best=self.n_best, cross=None)


@dataclass
class SentenceResult:
    source: str  # the sentence as it stands in the line
    text: str  # its translation, spans restored, case applied
    model_input: str  # what the model translated (placeholders, natural case)
    model_output: str  # what the model wrote
    spans: list[Span] = field(default_factory=list)
    lost: list[Span] = field(default_factory=list)  # spans (terms included) missing from the output
    placed: list[Span] = field(default_factory=list)  # spans the model dropped, put back where the alignment says
    confidence: Confidence | None = None
    warnings: list[str] = field(default_factory=list)
    decoded: Decoded | None = None  # what translate_batch returned for it (the hypothesis taken)

    def to_dict(self) -> dict:
        obj = {
            "source": self.source,
            "translation": self.text,
            "model_input": self.model_input,
            "model_output": self.model_output,
            "protected": [{"kind": s.kind, "source": s.original, "output": s.output} for s in self.spans],
            "lost": [{"kind": s.kind, "source": s.original} for s in self.lost],
            "placed": [{"kind": s.kind, "source": s.original} for s in self.placed],
        }
        if self.confidence is not None:
            obj.update(self.confidence.to_dict())
        if self.decoded is not None:
            obj["tokens"] = list(self.decoded.pieces)
            obj["token_logprobs"] = [round(x, 4) for x in self.decoded.token_logprobs]
        return obj


@dataclass
class TextResult:
    index: int
    source: str  # the line as given
    text: str  # its translation: one line
    sentences: list[SentenceResult] = field(default_factory=list)
    line_warnings: list[str] = field(default_factory=list)  # about the line as a whole (control characters)

    @property
    def confidence(self) -> float | None:
        """The line's confidence: its least confident sentence's (None for an empty line)."""
        values = [s.confidence.sentence for s in self.sentences if s.confidence is not None]
        return min(values) if values else None

    @property
    def coverage(self) -> float | None:
        """The line's source coverage: its least covered sentence's (None without attention)."""
        values = [s.confidence.coverage for s in self.sentences if s.confidence and s.confidence.coverage is not None]
        return min(values) if values else None

    @property
    def warnings(self) -> list[str]:
        return self.line_warnings + [w for s in self.sentences for w in s.warnings]

    def to_dict(self) -> dict:
        def rounded(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        return {
            "index": self.index,
            "source": self.source,
            "translation": self.text,
            "confidence": rounded(self.confidence),
            "coverage": rounded(self.coverage),
            "sentences": [s.to_dict() for s in self.sentences],
            "warnings": self.warnings,
        }
