"""Real text in, real text out: the one function every view calls around the model.

    line ──line_regions──▶ text (markup kept) ──sentence_spans, clause_spans──▶ sentences
         ──find_spans/protect, strip_inline──▶ placeholders, no markers ──natural_case, accents──▶ model input
    line ◀──join_sentences── outputs ◀──restore, apply_case── ◀──project markup, place lost spans── ◀── aligner
                                                        ◀──follow punctuation── ◀── translate_batch (one batch for all)

`translate_text(lines, translate_batch, options)` takes any callable that translates a list of
sentences (see `Decoded`), so the CLI, the REPL, the Python API and a server all share it; with
`translator_batch(translator)` it runs on `core.Translator`. One TextResult per input line, in order:
the pipe contract (one output line per input line) holds because sentences are joined back with the
line's own spacing. An `aligner` (core.api.text_aligner: word links of a sentence and its translation)
lets markup be projected onto the words it wrapped, a dropped span be put back where it belongs, and
source words left untranslated be named; without one, markup goes to the same share of the sentence.

Every sentence's output is checked (core.text.checks): each protected span present, the final
punctuation the source's, a fair length, no run of source words unaligned, not empty, not French. A
loss is repaired where it can be (the beam's next hypothesis, placeholders of another set, the
alignment) and otherwise named in the sentence's warnings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from core.text.accents import AccentTable, restore_accents, strip_accents
from core.text.case import NATURAL, UPPER, apply_case, bare, case_shape, loud_words, natural_case, shout_aligned
from core.text.checks import (
    empty_output,
    follow_punctuation,
    missing_names,
    missing_numbers,
    short_output,
    unaligned_runs,
    wrong_language,
)
from core.text.confidence import confidence
from core.text.documents import Document
from core.text.markup import Mark, line_regions, project, read_in_sentence, strip_inline
from core.text.options import TextOptions, hypotheses_wanted
from core.text.place import place_lost
from core.text.protect import (
    ELEMENT_TEXT,
    Protected,
    Restored,
    Scheme,
    protect,
    restore,
    spans_to_protect,
)
from core.text.results import Decoded, SentenceResult, TextResult
from core.text.spans import Span, worded_ordinal
from core.text.split import MAX_SENTENCE_CHARS, clause_spans, join_sentences, sentence_spans

_STOPS = tuple(".!?…:;»\"')")
_WORDED = ("date", "amount")  # kinds whose English output may hold words (3 March, 3.5 million euros)
_WRAPPERS = ("element", "link")  # spans whose text is translated on its own and put back between their markup
# Word links of (source, translation) pairs: (source word, output word) indices, words split at spaces.
Aligner = Callable[[list[tuple[str, str]]], list[list[tuple[int, int]]]]


# Sentences with the English phrases each must hold → one translation each (core.api.text_constrained).
Constrained = Callable[[list[str], list[list[str]]], Sequence[Decoded]]


@dataclass(frozen=True)
class _Model:
    """What the pipeline has of the model: sentences in, translations out, and what else it was handed."""

    batch: Callable[[list[str]], Sequence[Decoded]]
    unknown: Callable[[str], bool] | None = None
    accents: AccentTable | None = None
    aligner: Aligner | None = None
    constrained: Constrained | None = None  # glossary terms placed by constrained decoding, not placeholders


@dataclass
class _Prepared:
    line: int
    source: str
    model_input: str
    shape: str
    protected: Protected
    placeholders: frozenset[str]
    marks: list[Mark] = field(default_factory=list)  # inline markup, by word of model_input
    verbatim: bool = False  # nothing to translate (a URL, a number, emoji alone): the model is not asked
    shouted: tuple[int, ...] = ()  # indices of model_input words lowered from capitals (TRÈS → très)


def _spellable(text: str, unknown, keep: frozenset[str]) -> str:
    """`text` with each capital the model cannot spell but whose lower case it can (É in État) written
    without its accent (E), or in lower case where it has none to take off (Œ in Œuvre: œ): an accented capital
    is a French letter, not an unknown script, and the model must not read it as <unk>."""
    if unknown is None:
        return text

    def spelt(ch: str) -> str:
        if not (ch.isupper() and unknown(ch) and not unknown(ch.lower())):
            return ch
        plain = strip_accents(ch)
        return plain if not unknown(plain) else ch.lower()

    return " ".join(word if word in keep else "".join(map(spelt, word)) for word in text.split(" "))


def _prepare(line_no: int, sentence: str, options: TextOptions, model: _Model, scheme: Scheme) -> _Prepared:
    unknown, accents = model.unknown, model.accents
    found = spans_to_protect(sentence, options, unknown)
    in_context = [s for s in found if options.protect and _read_in_sentence(s)]
    worded = [s for s in found if s.kind == "ordinal" and worded_ordinal(s.original)]
    found = [s for s in found if s not in in_context and s not in worded]
    protected = protect(sentence, found, scheme, terms_in_text=model.constrained is not None)
    # Placeholders, and the words of a name left for the model to copy, keep their case and accents.
    copied_words = {w for s in protected.spans if s.copied for w in s.placeholder.split()}
    keep = frozenset({s.placeholder for s in protected.spans} | copied_words)
    wrapped = [s.original for s in in_context]
    text, marks = strip_inline(protected.text, wrapped) if options.protect else (protected.text, [])
    shape, shouted = NATURAL, ()
    if options.case:
        shape = case_shape(text, keep)
        if shape != NATURAL:
            text = natural_case(text, keep, options.proper)
        if shape == UPPER:  # a span written in English words (3 MARS → 3 MARCH) shouts with its line
            spans = [replace(s, output=s.output.upper()) if s.kind in _WORDED else s for s in protected.spans]
            protected = replace(protected, spans=spans)
        elif shape == NATURAL and options.loud is not None:  # C'est TRÈS important → très, VERY again after
            text, shouted = loud_words(text, keep, options.loud, options.proper)
    if options.accents and accents is not None:
        text = restore_accents(text, accents, keep)
    text = _spellable(_worded(text, worded), unknown, keep)
    rest = text
    for placeholder in keep:
        rest = rest.replace(placeholder, " ")
    verbatim = not any(ch.isalpha() for ch in rest)
    return _Prepared(line_no, sentence, text, shape, protected, keep, marks, verbatim, shouted)


def _worded(text: str, ordinals: list[Span]) -> str:
    """`text` with each small ordinal left unprotected written as its word (3e → troisième; from English, 3rd →
    third), which the model translates ("third floor") where it wrote "3e" as "3th"."""
    for span in ordinals:
        word = worded_ordinal(span.original)
        text = re.sub(rf"(?<![\w,.]){re.escape(span.original)}(?!\w)", word, text, count=1, flags=re.IGNORECASE)
    return text


def _read_in_sentence(span: Span) -> bool:
    """A link or inline element the model reads in its sentence (core.text.markup.read_in_sentence)."""
    return span.kind in _WRAPPERS and read_in_sentence(span.original)


def _terms(p: _Prepared) -> list[str]:
    """The English of the glossary terms a sentence must hold (left in its text for constrained decoding)."""
    return [s.output for s in p.protected.spans if s.kind == "term" and s.copied]


def _decode(prepared: list[_Prepared], model: _Model) -> list[Decoded]:
    """Every sentence the model must translate through it in one call (those with glossary terms through
    constrained decoding); the others as they are."""
    asked = [p for p in prepared if not p.verbatim and not _terms(p)]
    forced = [p for p in prepared if not p.verbatim and _terms(p)]
    decoded = list(model.batch([p.model_input for p in asked])) if asked else []
    if len(decoded) != len(asked):
        raise ValueError(f"translate_batch returned {len(decoded)} translations for {len(asked)} sentences")
    placed = list(model.constrained([p.model_input for p in forced], [_terms(p) for p in forced])) if forced else []
    answers, constrained = iter(decoded), iter(placed)
    return [  # a sentence the model was not asked to translate: its input as it is
        Decoded(p.model_input) if p.verbatim else next(constrained) if _terms(p) else next(answers) for p in prepared
    ]


def _finish(
    p: _Prepared, output: str, options: TextOptions, links=None, glosses: dict[str, str] | None = None
) -> Restored:
    """The model's output made into the sentence's translation: the source's final punctuation, the words
    aligned to loud ones in capitals and the markup projected (both need `links`), a lost span placed by the
    alignment, the case, the spans put back."""
    if options.follow_stop and not p.verbatim:
        output = follow_punctuation(p.model_input, output)
    output = _capital_kept(p, output)
    unshouted: list[str] = []
    if p.shouted and links is not None and glosses:  # the translations of words lowered from capitals, loud again
        words = p.model_input.split()
        output, quiet = shout_aligned(output, {i: glosses.get(words[i], "") for i in p.shouted}, links, p.placeholders)
        unshouted = [bare(words[i]).upper() for i in quiet]
    if p.marks:
        output = project(output, p.marks, links, len(p.model_input.split()))
    strays = options.model_placeholders
    restored = restore(apply_case(output, p.shape, p.placeholders), p.protected, strays)
    if restored.lost and links is not None:
        placed = place_lost(output, p.model_input, restored.lost, links)
        again = restore(apply_case(placed, p.shape, p.placeholders), p.protected, strays)
        if len(again.lost) < len(restored.lost):
            again.placed.extend(s for s in restored.lost if s not in again.lost)
            restored = again
    restored.unshouted.extend(unshouted)
    return restored


def _capital_kept(p: _Prepared, output: str) -> str:
    """`output` with its first word capitalised where the source opens with a capital and the model, given it in
    lower case (Œuvre d'art → œuvre d'art: the model cannot spell Œ), wrote its first word all in lower case."""
    if p.shape != NATURAL or not p.source.lstrip()[:1].isupper() or not p.model_input.lstrip()[:1].islower():
        return output
    first = output.lstrip().split(" ", 1)[0]
    if not first or first in p.placeholders or not first.islower() or not first[0].isalpha():
        return output
    i = output.index(first)
    return output[:i] + first[0].upper() + output[i + 1 :]


def _numbers_written(p: _Prepared, options: TextOptions) -> tuple[str, list[tuple[str, str]]]:
    """The target language and the spans written with other numbers than the source's (2:30 pm → 14 h 30), for
    `missing_numbers`."""
    return options.languages[1], [(s.original, s.output) for s in p.protected.spans if s.output != s.original]


def _badness(p: _Prepared, output: str, restored: Restored, options: TextOptions) -> tuple[int, int]:
    """What a hypothesis lost: protected spans, then a number, a clause (far too short) or a word the model wrote
    as a placeholder."""
    numbers = missing_numbers(p.source, restored.text, *_numbers_written(p, options)) is not None
    return len(restored.lost), numbers + (short_output(p.model_input, output) is not None) + len(restored.strays)


def _translate(prepared: list[_Prepared], model: _Model, options: TextOptions) -> list[SentenceResult]:
    """Every prepared sentence through the model in one call, then case and spans put back."""
    sentences = []
    for p, d in zip(prepared, _decode(prepared, model)):
        d, restored = _most_complete(p, d, options)
        conf = None if p.verbatim else confidence(d.pieces, d.token_logprobs, d.cross, p.model_input)
        warnings = list(d.warnings) + restored.warnings  # the decoder's (truncation) first
        sentences.append(
            SentenceResult(
                p.source, restored.text, p.model_input, d.text, p.protected.spans, restored.lost, [], conf, warnings, d
            )
        )
    return sentences


def _most_complete(p: _Prepared, d: Decoded, options: TextOptions) -> tuple[Decoded, Restored]:
    """The model's best translation, or, where it lost a protected span or a clause, the most probable of
    the beam's other finished hypotheses (`n_best`, when translate_batch returns them) that loses less: a
    dropped date, number or name is a worse error than a less probable wording ("Rendez-vous le Kyoto à
    Osaka." → "Go to Osaka to Osaka." / "Make the Kyoto in Osaka."). The decoder traced only its best
    hypothesis, so one taken this way has no attention (its coverage is unknown)."""
    restored = _finish(p, d.text, options)
    bad = _badness(p, d.text, restored, options)
    if bad == (0, 0):
        return d, restored
    best = None
    for alt in d.n_best[1:]:
        again = _finish(p, alt.text, options)
        worse = _badness(p, alt.text, again, options)
        if worse < bad:
            best, restored, bad = alt, again, worse
            if bad == (0, 0):
                break
    return (d, restored) if best is None else (d.taking(best), restored)


def _checked(prepared: list[_Prepared], sentences: list[SentenceResult], options: TextOptions, model: _Model) -> None:
    """Each sentence finished with its word links (markup projected, lost spans placed, words lowered from
    capitals shouted again) and checked: its warnings name every span still lost and any sign of dropped
    content."""
    pairs = [(p.model_input, s.model_output) for p, s in zip(prepared, sentences)]
    todo = [i for i, (p, s) in enumerate(zip(prepared, sentences)) if not p.verbatim and s.model_output.strip()]
    links: dict[int, list] = {}
    glosses: dict[str, str] = {}
    if model.aligner is not None and todo:
        links = dict(zip(todo, model.aligner([pairs[i] for i in todo])))
        # each word lowered from capitals translated alone, as written and capitalised (a label: session 48's fr→en
        # gives "très" as "Like", "Très" as "Very"), in one batch: which output word is its translation
        loud = sorted({prepared[i].model_input.split()[w] for i in todo for w in prepared[i].shouted})
        alone = (
            [d.text for d in model.batch([form for w in loud for form in (w, w[:1].upper() + w[1:])])] if loud else []
        )
        glosses = {w: f"{alone[2 * k]} {alone[2 * k + 1]}" for k, w in enumerate(loud)}
    for i, (p, s) in enumerate(zip(prepared, sentences)):
        notes = []
        if i in links:  # finished again with the links: its span warnings are this restore's
            restored = _finish(p, s.model_output, options, links[i], glosses)
            s.text, s.lost, s.placed = restored.text, restored.lost, restored.placed
            s.warnings = list(s.decoded.warnings) + restored.warnings
        if not p.verbatim:
            notes += [
                w
                for w in (
                    empty_output(p.source, s.text),
                    # a lost span is warned already
                    None if s.lost else missing_numbers(p.source, s.text, *_numbers_written(p, options)),
                    short_output(p.model_input, s.model_output),
                    unaligned_runs(p.model_input, links[i], p.placeholders) if i in links else None,
                    missing_names(p.model_input, s.model_output, links[i], options.known, p.placeholders)
                    if i in links and options.known is not None
                    else None,
                    wrong_language(p.source, s.text, options.languages),
                )
                if w
            ]
        s.warnings += notes


def _element_texts(prepared: list[_Prepared], model: _Model, options: TextOptions) -> dict[str, str]:
    """The translation of the text inside each inline element or link (`<b>Envoyer</b>` → Send, `[la page](u)`
    → the page), one batch for all: the element is one placeholder in its sentence, so neither tag can be
    lost on its own."""
    inner = {
        m.group(2).strip()
        for p in prepared
        for s in p.protected.spans
        if s.kind in _WRAPPERS and (m := ELEMENT_TEXT.match(s.original)) and any(c.isalpha() for c in m.group(2))
    }
    texts = sorted(inner)
    # A fragment alone is far from the sentences the model learned from; with a period it reads as
    # one ("Envoyer" → "Sendery it", "Envoyer." → "Sending."), and the period goes again after.
    stopped = [t if t.endswith(_STOPS) else t + "." for t in texts]
    inside = [_prepare(-1, t, options, model, options.scheme) for t in stopped]
    out = {}
    for text, full, r in zip(texts, stopped, _translate(inside, model, options)):
        english = r.text[:-1] if full != text and r.text.endswith(".") else r.text
        if text[:1].islower() and english[:1].isupper() and not english[1:2].isupper():
            english = english[0].lower() + english[1:]  # inside a sentence, as the source wrote it
        out[text] = english
    return out


def _with_elements(p: _Prepared, translated: dict[str, str]) -> _Prepared:
    """`p` with each element span's output holding its text's translation between the original tags."""
    spans = []
    for s in p.protected.spans:
        m = ELEMENT_TEXT.match(s.original) if s.kind in _WRAPPERS else None
        if m and m.group(2).strip() in translated:
            text = m.group(2)
            lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
            s = replace(s, output=m.group(1) + lead + translated[text.strip()] + trail + m.group(3))
        spans.append(s)
    p.protected = replace(p.protected, spans=spans)
    return p


def _sentence_spans(line: str, options: TextOptions) -> list[tuple[int, int]]:
    """Where the sentences of `line` are: in each region holding text (markup outside them: a list's
    marker, a table's pipes), split into sentences, a sentence too long for the model cut at clauses."""
    regions = line_regions(line) if options.protect else [(0, len(line))]
    spans = []
    for a, b in regions:
        region = line[a:b]
        if options.split:
            inner = [(a + x, a + y) for x, y in sentence_spans(region)]
        else:
            stripped = region.strip()
            start = a + region.index(stripped) if stripped else a
            inner = [(start, start + len(stripped))] if stripped else []
        for x, y in inner:
            spans += clause_spans(line, x, y) if y - x > MAX_SENTENCE_CHARS else [(x, y)]
    return spans


def translate_text(
    lines: Sequence[str],
    translate_batch: Callable[[list[str]], Sequence[Decoded]],
    options: TextOptions | None = None,
    unknown: Callable[[str], bool] | None = None,
    accents: AccentTable | None = None,
    aligner: Aligner | None = None,
    constrained: Constrained | None = None,
) -> list[TextResult]:
    """One TextResult per line. translate_batch gets every sentence of every line in one list.

    unknown: the model's out-of-vocabulary test (protect.unknown_characters(tokenizer)); None protects
    no unknown characters. accents: the words of the model's vocabulary (accents.accent_table(tokenizer))
    that give a sentence typed without accents its accents back; None gives none. aligner: word links of
    (model input, model output) pairs (core.api.text_aligner), for markup, lost spans and dropped words.
    constrained: a translator that places given English phrases (core.api.text_constrained): glossary terms
    by constrained decoding; without it, a term is a placeholder.
    A Decoded with `cross` (output steps × source pieces) also gets a coverage in its Confidence.
    """
    options = options or TextOptions()
    model = _Model(translate_batch, unknown, accents, aligner, constrained)
    per_line = [_sentence_spans(line, options) for line in lines]
    prepared = [
        _prepare(i, line[a:b], options, model, options.scheme)
        for i, (line, spans) in enumerate(zip(lines, per_line))
        for a, b in spans
    ]
    elements = _element_texts(prepared, model, options)
    prepared = [_with_elements(p, elements) for p in prepared]
    sentences = _translate(prepared, model, options)
    for scheme in options.fallbacks:
        retry = [i for i, s in enumerate(sentences) if s.lost]
        if not retry:
            break
        again = [
            _with_elements(_prepare(prepared[i].line, prepared[i].source, options, model, scheme), elements)
            for i in retry
        ]
        for i, p, second in zip(retry, again, _translate(again, model, options)):
            if len(second.lost) < len(sentences[i].lost):
                sentences[i], prepared[i] = second, p
    _checked(prepared, sentences, options, model)
    results, k = [], 0
    for i, (line, spans) in enumerate(zip(lines, per_line)):
        mine = sentences[k : k + len(spans)]
        k += len(spans)
        # markup around and between the sentences is the line's own, kept byte for byte; a line of markup
        # alone (a table's rule) is written as it is, a blank line as an empty one
        text = join_sentences(line, spans, [s.text for s in mine]) if spans else line.strip() and line
        results.append(TextResult(i, line, text, mine))
    return results


def translate_chunks(
    chunks: Iterable[list[str]],
    translate_batch: Callable[[list[str]], Sequence[Decoded]],
    options: TextOptions | None = None,
    unknown: Callable[[str], bool] | None = None,
    accents: AccentTable | None = None,
    aligner: Aligner | None = None,
    constrained: Constrained | None = None,
) -> Iterator[TextResult]:
    """translate_text over lists of lines as they come (a caller that reads a pipe hands over what is
    there, so each line is answered without waiting for the next); indices run on across lists."""
    done = 0
    for lines in chunks:
        for r in translate_text(lines, translate_batch, options, unknown, accents, aligner, constrained):
            r.index += done
            yield r
        done += len(lines)


def translator_batch(translator, *, attention: bool = False, layer: int = -1) -> Callable[[list[str]], list]:
    """translate_batch over a `core.Translator`: attention=True also returns cross-attention (mean of
    the heads of `layer`) for the coverage signal, at the cost of one teacher-forced pass."""

    n_best = hypotheses_wanted(translator.options.method, translator.options.beam)  # a choice where one lost a span

    def run(sentences: list[str]) -> list[Decoded]:
        results = translator.translate(sentences, trace=attention, n_best=n_best)
        return [Decoded.of(r, r.attention("cross", layer) if attention and r.steps else None) for r in results]

    return run


def translate_document(
    document: Document,
    translate_batch: Callable[[list[str]], Sequence[Decoded]],
    options: TextOptions | None = None,
    unknown: Callable[[str], bool] | None = None,
    accents: AccentTable | None = None,
    aligner: Aligner | None = None,
    constrained: Constrained | None = None,
) -> tuple[str, list[TextResult]]:
    """The document with its segments translated (see core.text.documents), and each segment's result.
    A heading or a cue without a final stop gets none (follow_stop)."""
    options = replace(options or TextOptions(), follow_stop=True)
    results = translate_text(document.segments, translate_batch, options, unknown, accents, aligner, constrained)
    return document.render([r.text for r in results]), results
