"""Real text in, real text out: the one function every view calls around the model.

    line ──sentence_spans──▶ sentences ──find_spans/protect──▶ placeholders ──natural_case, accents──▶ model input
         ◀──join_sentences── outputs ◀──restore── ◀──apply_case── ◀── translate_batch (one batch for all)

`translate_text(lines, translate_batch, options)` takes any callable that translates a list of
sentences (see `Decoded`), so the CLI, the REPL, the Python API and a server all share it; with
`translator_batch(translator)` it runs on `core.Translator`. One TextResult per input line, in order:
the pipe contract (one output line per input line) holds because sentences are joined back with the
line's own spacing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from core.text.accents import AccentTable, restore_accents
from core.text.case import NATURAL, apply_case, case_shape, natural_case
from core.text.confidence import Confidence, confidence
from core.text.currency import SYMBOLS, VERBATIM_KINDS, spell_currencies
from core.text.documents import Document
from core.text.options import TextOptions, hypotheses_wanted
from core.text.protect import ELEMENT_TEXT, Protected, Restored, Scheme, Span, find_spans, protect, restore
from core.text.split import join_sentences, sentence_spans


class Decoded(Protocol):
    """What translate_batch returns for each sentence (core.api.Result has these fields)."""

    text: str
    pieces: list[str]
    token_logprobs: list[float]


_STOPS = tuple(".!?…:;»\"')")


@dataclass
class SentenceResult:
    source: str  # the sentence as it stands in the line
    text: str  # its translation, spans restored, case applied
    model_input: str  # what the model translated (placeholders, natural case)
    model_output: str  # what the model wrote
    spans: list[Span] = field(default_factory=list)
    lost: list[Span] = field(default_factory=list)  # spans (terms included) missing from the output
    confidence: Confidence | None = None
    warnings: list[str] = field(default_factory=list)
    decoded: Decoded | None = None  # what translate_batch returned for it (core.Result in the CLI and API)

    def to_dict(self) -> dict:
        obj = {
            "source": self.source,
            "translation": self.text,
            "model_input": self.model_input,
            "model_output": self.model_output,
            "protected": [{"kind": s.kind, "source": s.original, "output": s.output} for s in self.spans],
            "lost": [{"kind": s.kind, "source": s.original} for s in self.lost],
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


@dataclass
class _Prepared:
    line: int
    source: str
    model_input: str
    shape: str
    protected: Protected
    placeholders: frozenset[str]


def _prepare(
    line_no: int, sentence: str, options: TextOptions, unknown, scheme: Scheme, accents: AccentTable | None
) -> _Prepared:
    kinds = None if options.protect else ("term",)
    names = options.protect and options.names and case_shape(sentence) == NATURAL  # a headline capitalises every word
    text = sentence
    if options.protect and SYMBOLS.intersection(sentence):  # 12,50 € → 12,50 euros, outside code, markup, URLs
        verbatim = find_spans(sentence, kinds=VERBATIM_KINDS)
        text = spell_currencies(sentence, [(s.start, s.end) for s in verbatim])
    found = find_spans(
        text, terms=options.terms, unknown=unknown if options.protect else None, kinds=kinds, names=names
    )
    protected = protect(text, found, scheme)
    # Placeholders, and the words of a name left for the model to copy, keep their case and accents.
    copied_words = {w for s in protected.spans if s.copied for w in s.placeholder.split()}
    keep = frozenset({s.placeholder for s in protected.spans} | copied_words)
    text, shape = protected.text, NATURAL
    if options.case:
        shape = case_shape(text, keep)
        if shape != NATURAL:
            text = natural_case(text, keep)
    if options.accents and accents is not None:
        text = restore_accents(text, accents, keep)
    return _Prepared(line_no, sentence, text, shape, protected, keep)


def _follow_final_stop(source: str, output: str) -> str:
    """The output without the period the model adds to a source that has none (a heading, a list
    item, a subtitle line cut mid-sentence): it learned from sentences that all end with one."""
    if output.endswith(".") and not output.endswith("..") and not source.rstrip().endswith(_STOPS):
        return output[:-1]
    return output


def _translate(prepared: list[_Prepared], translate_batch, options: TextOptions) -> list[SentenceResult]:
    """Every prepared sentence through the model in one call, then case and spans put back."""
    decoded = list(translate_batch([p.model_input for p in prepared])) if prepared else []
    if len(decoded) != len(prepared):
        raise ValueError(f"translate_batch returned {len(decoded)} translations for {len(prepared)} sentences")
    sentences = []
    for p, d in zip(prepared, decoded):
        d, restored = _most_complete(p, d, options)
        conf = confidence(d.pieces, d.token_logprobs, getattr(d, "cross", None), p.model_input)
        warnings = list(getattr(d, "warnings", [])) + restored.warnings  # the decoder's (truncation) first
        sentences.append(
            SentenceResult(
                p.source, restored.text, p.model_input, d.text, p.protected.spans, restored.lost, conf, warnings, d
            )
        )
    return sentences


def _restored(p: _Prepared, output: str, options: TextOptions) -> Restored:
    if options.follow_stop:
        output = _follow_final_stop(p.model_input, output)
    return restore(apply_case(output, p.shape, p.placeholders), p.protected)


def _most_complete(p: _Prepared, d: Decoded, options: TextOptions) -> tuple[Decoded, Restored]:
    """The model's best translation, or, where it lost a protected span, the most probable of the beam's other
    finished hypotheses (`n_best`, when translate_batch returns them) that loses fewer: a dropped date, number
    or name is a worse error than a less probable wording ("Rendez-vous le Kyoto à Osaka." → "Go to Osaka to
    Osaka." / "Make the Kyoto in Osaka."). The decoder traced only its best hypothesis, so one taken this way
    has no attention (its coverage is unknown; the REPL's :attention traces it again)."""
    restored = _restored(p, d.text, options)
    if not restored.lost:
        return d, restored
    best = None
    for alt in list(getattr(d, "n_best", None) or [])[1:]:
        again = _restored(p, alt.text, options)
        if len(again.lost) < len(restored.lost):
            best, restored = alt, again
            if not again.lost:
                break
    if best is None:
        return d, restored
    chosen = copy.copy(d)  # the record of the sentence, with the hypothesis taken as its output
    for name in ("text", "token_ids", "pieces", "token_logprobs", "score"):
        if hasattr(best, name):
            setattr(chosen, name, getattr(best, name))
    for name in ("cross", "steps"):  # the best hypothesis's attention: not this one's
        if hasattr(chosen, name):
            setattr(chosen, name, None)
    return chosen, restored


def _element_texts(
    prepared: list[_Prepared], translate_batch, options: TextOptions, unknown, accents: AccentTable | None
) -> dict[str, str]:
    """The translation of the text inside each inline element (`<b>Envoyer</b>` → Send), one batch for all:
    the element is one placeholder in its sentence, so neither tag can be lost on its own."""
    inner = {
        m.group(2).strip()
        for p in prepared
        for s in p.protected.spans
        if s.kind == "element" and (m := ELEMENT_TEXT.match(s.original)) and any(c.isalpha() for c in m.group(2))
    }
    texts = sorted(inner)
    # A fragment alone is far from the sentences the model learned from; with a period it reads as
    # one ("Envoyer" → "Sendery it", "Envoyer." → "Sending."), and the period goes again after.
    stopped = [t if t.endswith(_STOPS) else t + "." for t in texts]
    inside = [_prepare(-1, t, options, unknown, options.scheme, accents) for t in stopped]
    out = {}
    for text, full, r in zip(texts, stopped, _translate(inside, translate_batch, options)):
        out[text] = r.text[:-1] if full != text and r.text.endswith(".") else r.text
    return out


def _with_elements(p: _Prepared, translated: dict[str, str]) -> _Prepared:
    """`p` with each element span's output holding its text's translation between the original tags."""
    spans = []
    for s in p.protected.spans:
        m = ELEMENT_TEXT.match(s.original) if s.kind == "element" else None
        if m and m.group(2).strip() in translated:
            text = m.group(2)
            lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
            s = replace(s, output=m.group(1) + lead + translated[text.strip()] + trail + m.group(3))
        spans.append(s)
    p.protected = replace(p.protected, spans=spans)
    return p


def translate_text(
    lines: Sequence[str],
    translate_batch: Callable[[list[str]], Sequence[Decoded]],
    options: TextOptions | None = None,
    unknown: Callable[[str], bool] | None = None,
    accents: AccentTable | None = None,
) -> list[TextResult]:
    """One TextResult per line. translate_batch gets every sentence of every line in one list.

    unknown: the model's out-of-vocabulary test (protect.unknown_characters(tokenizer)); None protects
    no unknown characters. accents: the words of the model's vocabulary (accents.accent_table(tokenizer))
    that give a sentence typed without accents its accents back; None gives none. A Decoded with a
    `cross` attribute (output steps × source pieces) also gets a coverage in its Confidence.
    """
    options = options or TextOptions()
    per_line: list[list[tuple[int, int]]] = []
    prepared: list[_Prepared] = []
    for i, line in enumerate(lines):
        if options.split:
            spans = sentence_spans(line)
        else:
            stripped = line.strip()
            spans = [(line.index(stripped), line.index(stripped) + len(stripped))] if stripped else []
        per_line.append(spans)
        prepared += [_prepare(i, line[a:b], options, unknown, options.scheme, accents) for a, b in spans]
    elements = _element_texts(prepared, translate_batch, options, unknown, accents)
    prepared = [_with_elements(p, elements) for p in prepared]
    sentences = _translate(prepared, translate_batch, options)
    for scheme in options.fallbacks:
        retry = [i for i, s in enumerate(sentences) if s.lost]
        if not retry:
            break
        again = [
            _with_elements(_prepare(prepared[i].line, prepared[i].source, options, unknown, scheme, accents), elements)
            for i in retry
        ]
        for i, second in zip(retry, _translate(again, translate_batch, options)):
            if len(second.lost) < len(sentences[i].lost):
                sentences[i] = second
    results, k = [], 0
    for i, (line, spans) in enumerate(zip(lines, per_line)):
        mine = sentences[k : k + len(spans)]
        k += len(spans)
        text = join_sentences(line, spans, [s.text for s in mine]) if spans else ""
        results.append(TextResult(i, line, text.strip(), mine))
    return results


def translate_chunks(
    chunks: Iterable[list[str]],
    translate_batch: Callable[[list[str]], Sequence[Decoded]],
    options: TextOptions | None = None,
    unknown: Callable[[str], bool] | None = None,
    accents: AccentTable | None = None,
) -> Iterator[TextResult]:
    """translate_text over lists of lines as they come (a caller that reads a pipe hands over what is
    there, so each line is answered without waiting for the next); indices run on across lists."""
    done = 0
    for lines in chunks:
        for r in translate_text(lines, translate_batch, options, unknown, accents):
            r.index += done
            yield r
        done += len(lines)


@dataclass
class _Decoded:
    text: str
    pieces: list[str]
    token_logprobs: list[float]
    cross: list[list[float]] | None = None
    n_best: list = field(default_factory=list)  # the beam's hypotheses (text, pieces, token_logprobs), best first


def translator_batch(translator, *, attention: bool = False, layer: int = -1) -> Callable[[list[str]], list]:
    """translate_batch over a `core.Translator`: attention=True also returns cross-attention (mean of
    the heads of `layer`) for the coverage signal, at the cost of one teacher-forced pass."""

    n_best = hypotheses_wanted(translator.options.method, translator.options.beam)  # a choice where one lost a span

    def run(sentences: list[str]) -> list[_Decoded]:
        results = translator.translate(sentences, trace=attention, n_best=n_best)
        return [
            _Decoded(
                r.text,
                r.pieces,
                r.token_logprobs,
                r.attention("cross", layer) if attention and r.steps else None,
                r.n_best,
            )
            for r in results
        ]

    return run


def translate_document(
    document: Document,
    translate_batch: Callable[[list[str]], Sequence[Decoded]],
    options: TextOptions | None = None,
    unknown: Callable[[str], bool] | None = None,
    accents: AccentTable | None = None,
) -> tuple[str, list[TextResult]]:
    """The document with its segments translated (see core.text.documents), and each segment's result.
    A heading or a cue without a final stop gets none (follow_stop)."""
    options = replace(options or TextOptions(), follow_stop=True)
    results = translate_text(document.segments, translate_batch, options, unknown, accents)
    return document.render([r.text for r in results]), results
