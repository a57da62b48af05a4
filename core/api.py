"""tt for programs: load a model once, translate lists of sentences, get plain results (and traces).

    from core import Translator

    translator = Translator()                       # $TT_MODEL, else the shipped model
    results = translator.translate(["Je suis étudiant."])      # the model alone, one sentence a line
    results[0].text, results[0].to_dict()

    lines = translator.translate_text(["Je suis étudiant. Il fait froid.", "Elle est née en 1987."])
    lines[0].text, lines[0].to_dict()               # to_dict(): the object `tt translate --json` writes

`translate_text` is what `tt translate` and its prompt run: sentences split, numbers, URLs, emoji and
markup protected, case kept, glossary terms forced, confidences (core/text, docs/text.md).
`text_chunks` runs the same around any translate_batch: `tt serve` hands in its batcher.

This module is the stable surface; everything it returns is plain data. `import core` stays light
(torch loads on first use of `core.Translator`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from core.decode.translate import Alternative, Translation

if TYPE_CHECKING:
    from core.checkpoint import LoadedModel
    from core.decode.translate import TranslateOptions
    from core.text.accents import AccentTable
    from core.text.pipeline import TextOptions, TextResult
    from core.text.results import Decoded

# What `translate` returns: the one record of a translated sentence that `tt translate` writes too
# (text, pieces, token_ids, token_logprobs, score, logprob, truncated, warnings, n_best; with
# trace=True source_trace and steps, and attention()). `to_dict()` gives the keys of --json.
Result = Translation

__all__ = [
    "Alternative",
    "Result",
    "Translation",
    "Translator",
    "for_text",
    "text_batch",
    "text_chunks",
    "translate_text_lines",
]


class Translator:
    """A model loaded once; `translate` as many lists as you like.

    model: a model directory (what `tt train` writes); None = $TT_MODEL, else the shipped model.
    source, target: the direction ("fr", "en"; either may be left out): the shipped model of that direction
    (`tt translate --from en --to fr`); with `model`, a check that the model translates that way.
    device: auto, cpu, cuda, cuda:N or mps. quantize: None (the fp32 model), "int8" (CPU; faster in
    batches, slower one sentence at a time) or "bf16", as `tt translate --precision`. The decoding keywords
    are `tt translate`'s options and the paper's defaults (beam 4, α 0.6); each call to `translate` may
    override them. rerank=core.decode.method.CHANNEL_WEIGHT is `tt translate --rerank` (the reverse direction's
    shipped model loaded on first use).
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        source: str | None = None,
        target: str | None = None,
        device: str = "auto",
        quantize: str | None = None,
        **decoding,
    ) -> None:
        from core.checkpoint import load_model, model_for
        from core.decode.translate import TranslateOptions
        from core.device import resolve_device
        from core.errors import ConfigError
        from core.model.fast import MODES, fast_model

        self.options = _checked(lambda: TranslateOptions(**decoding).validate())
        if quantize is not None and quantize not in MODES:
            raise ConfigError(f"quantize={quantize!r}: give one of {', '.join(MODES)}, or None for the fp32 model")
        self.quantize = quantize
        model = model_for(model, source, target)
        self.loaded = load_model(model, device=resolve_device(device), packed=quantize is None)
        if quantize is not None:  # int8 on another device than the CPU: fast_model's error, in the API's words
            self.loaded = replace(self.loaded, model=_checked(lambda: fast_model(self.loaded.model, quantize)))
        self._for(self.options)  # the reverse direction's model now, where rerank is the default

    @property
    def path(self) -> Path:
        """The model directory in use."""
        return self.loaded.path

    def translate(
        self,
        sentences: list[str],
        *,
        trace: bool = False,
        stop: Callable[[], bool] | None = None,
        options: TranslateOptions | None = None,
        **decoding,
    ) -> list[Result]:
        """One Result per sentence, in order. trace=True also returns what the model attended to
        at every step (source_trace, steps; see Result.attention). `stop`, asked before every decoding
        step: True raises core.errors.Stopped and the rest is not decoded. `options`: decode with these
        instead of the translator's (a server's request carries its own); the keywords change either."""
        from core.decode.translate import translate_lines

        if isinstance(sentences, str):
            raise TypeError("translate() takes a list of sentences; for one: translate([text])[0]")
        chosen = options or self.options
        options = _checked(lambda: replace(chosen, with_attention=trace, **decoding).validate())
        return list(translate_lines(self._for(options), list(sentences), options, stop))

    def translate_text(
        self,
        lines: Sequence[str],
        *,
        split: bool = True,
        protect: bool = True,
        names: bool = True,
        case: bool = True,
        accents: bool = True,
        glossary: str | Path | Iterable[tuple[str, str]] | None = None,
        coverage: bool = False,
        **decoding,
    ) -> list[TextResult]:
        """One TextResult per line, in order: `tt translate`'s pipeline (core/text) around the model.

        split: sentences of a line translated apart and joined with the line's spacing; protect:
        numbers, times, URLs, e-mail, emoji, code and markup copied; names: with protect, people's names
        (Angela Merkel) kept as written; case: ALL-CAPS and Title Case kept;
        accents: a sentence typed without accents given them back where the model's vocabulary is clear;
        glossary: a terms.tsv path or (French, English) pairs, forced; coverage: also the source
        coverage signal (one teacher-forced pass more per sentence). The decoding keywords are translate's.
        """
        from core.text.pipeline import TextOptions

        if isinstance(lines, str):
            raise TypeError("translate_text() takes a list of lines; for one: translate_text([text])[0]")
        options = _checked(lambda: replace(self.options, **decoding).validate())
        text = TextOptions(
            split=split, protect=protect, names=names, case=case, accents=accents, terms=tuple(_terms(glossary))
        )
        return list(translate_text_lines(self._for(options), list(lines), options, text, coverage=coverage))

    def _for(self, options: TranslateOptions) -> LoadedModel:
        """The loaded model, with the reverse direction's beside it once `rerank` asks for it (loaded once)."""
        if options.rerank > 0 and self.loaded.reverse is None:
            from core.decode.rerank import with_reverse

            self.loaded = _checked(lambda: with_reverse(self.loaded))
        return self.loaded


def _terms(glossary) -> list[tuple[str, str]]:
    if glossary is None:
        return []
    if isinstance(glossary, (str, Path)):
        from core.text.glossary import read_glossary

        return read_glossary(glossary)
    return [(fr, en) for fr, en in glossary]


def text_batch(
    loaded: LoadedModel, options: TranslateOptions, *, coverage: bool = False
) -> Callable[[list[str]], list[Decoded]]:
    """The translate_batch of core.text.pipeline over a loaded model: one Decoded per sentence, with
    `cross` when `coverage` is asked (for_text)."""
    from core.decode.translate import translate_lines
    from core.text.options import hypotheses_wanted

    traced = replace(options, with_attention=coverage, n_best=hypotheses_wanted(options.method, options.beam))

    def run(sentences: list[str]) -> list[Decoded]:
        return for_text(translate_lines(loaded, sentences, traced), coverage)

    return run


def with_model_placeholders(loaded: LoadedModel, text: TextOptions | None) -> TextOptions:
    """The pipeline's options with what the model brings: the names its vocabulary knows (capitalised again in
    an ALL-CAPS line), the words in capitals it would spell letter by letter (lowered for it, TRÈS → très), the
    words it holds (a capitalised word it does not is a name, checked in the translation), and
    its own placeholder pieces first, when its card lists them (a model trained with them copies them), the word
    placeholders kept as second tries."""
    from core.checkpoint import placeholder_tokens
    from core.text.case import loud_by_pieces, names_by_pieces
    from core.text.checks import known_by_pieces
    from core.text.options import TextOptions, learned_scheme

    text = text or TextOptions()
    encode = loaded.tokenizer.encode
    if text.proper is None:
        text = replace(text, proper=names_by_pieces(lambda word: len(encode(word))))
    if text.loud is None:
        text = replace(text, loud=loud_by_pieces(lambda word: len(encode(word))))
    if text.known is None:
        text = replace(text, known=known_by_pieces(loaded.tokenizer.encode_pieces))
    tokens = placeholder_tokens(loaded.path, loaded.metadata)
    text = replace(text, model_placeholders=tokens)
    if not tokens or text.scheme.name != "copy":  # a scheme asked for by name stays
        return text
    return replace(text, scheme=learned_scheme(tokens), fallbacks=(text.scheme, *text.fallbacks))


def text_aligner(loaded: LoadedModel) -> Callable[[list[tuple[str, str]]], list[list[tuple[int, int]]]]:
    """Word links of (sentence, translation) pairs for core.text (markup projected onto the words it wrapped,
    a dropped span put back, source words left untranslated named): one teacher-forced pass per batch,
    each output word to its best source word under the model's alignment rule (alignment.json beside the
    weights), read one way so that a source word nothing points to stays unaligned. A pair longer than the
    model takes gets no links."""
    from core.align.links import align, load_rule, pair_attention
    from core.errors import DataError

    rule = replace(load_rule(loaded.path).check(loaded.cfg.n_decoder_layers, loaded.cfg.h), bidirectional=False)

    def run(pairs: list[tuple[str, str]]) -> list[list[tuple[int, int]]]:
        try:
            attentions = pair_attention(loaded, pairs, full_context=rule.full_context)
        except DataError:  # one too long: align the others one by one
            return [run([pair])[0] if len(pairs) > 1 else [] for pair in pairs]
        return [[(link.source, link.target) for link in links] for links in align(attentions, rule)]

    return run


def text_constrained(loaded: LoadedModel, options: TranslateOptions) -> Callable[[list[str], list[list[str]]], list]:
    """Sentences with the English phrases each must hold (a glossary's terms) → one Decoded each, by
    lexically constrained beam search (core.decode.translate.translate_constrained), the beam and α of
    `options`."""
    from core.decode.translate import translate_constrained

    def run(sentences: list[str], terms: list[list[str]]) -> list[Decoded]:
        return for_text(translate_constrained(loaded, sentences, terms, options), False)

    return run


def for_text(results: Iterable[Translation], coverage: bool) -> list[Decoded]:
    """Translations as the text pipeline reads them (core.text.results.Decoded), with `cross` (the last
    layer's cross-attention, mean of the heads) when `coverage` (decoded with_attention). A translator other
    than text_batch (a server's batcher) hands its results through this too."""
    from core.text.results import Decoded

    return [Decoded.of(t, t.attention("cross", -1) if coverage and t.steps else None) for t in results]


def translate_text_lines(
    loaded: LoadedModel,
    lines: Iterable[str],
    options: TranslateOptions,
    text: TextOptions | None = None,
    *,
    coverage: bool = False,
) -> Iterator[TextResult]:
    """One TextResult per line, streamed: lines are taken as they arrive (a pipe is answered line by line,
    a file fills whole batches), control characters become spaces (a warning says how many)."""
    from core.card import model_languages
    from core.decode.lines import chunks
    from core.text.protect import unknown_characters

    batch = text_batch(loaded, options, coverage=coverage)
    unknown = unknown_characters(loaded.tokenizer)
    pair = model_languages(loaded.path)
    accents = source_accents(loaded, pair)
    aligner, constrained = text_aligner(loaded), text_constrained(loaded, options)
    text = with_model_placeholders(loaded, text)
    return text_chunks(
        chunks(lines, options.batch_size * 4),
        batch,
        text,
        unknown,
        accents,
        pair,
        aligner=aligner,
        constrained=constrained,
    )


def source_accents(loaded: LoadedModel, pair: tuple[str, str]) -> AccentTable | None:
    """The table that gives a source typed without accents its accents back (core.text.accents), for a model
    that reads French; None for another source language, whose spelling is kept."""
    from core.text.accents import accent_table

    return accent_table(loaded.tokenizer) if pair[0] == "fr" else None


def text_chunks(
    chunks: Iterable[list[str]],
    translate_batch: Callable[[list[str]], list[Decoded]],
    text: TextOptions | None = None,
    unknown: Callable[[str], bool] | None = None,
    accents: AccentTable | None = None,
    pair: tuple[str, str] | None = None,
    *,
    aligner: Callable[[list[tuple[str, str]]], list[list[tuple[int, int]]]] | None = None,
    constrained: Callable[[list[str], list[list[str]]], list] | None = None,
) -> Iterator[TextResult]:
    """translate_text_lines over any translate_batch (a server hands in its batcher): one TextResult per
    line of each list in `chunks`, indices running on across them; control characters become spaces.
    `unknown` and `accents` are the model's (core.text.pipeline.translate_text). `pair`, the model's
    (source, target) languages: a line that reads as the target language rather than the source gets a
    warning (core.text.language)."""
    from core.decode.source import clean_text
    from core.text.language import wrong_language
    from core.text.pipeline import TextOptions, translate_chunks

    text = text or TextOptions()
    if pair is not None:
        text = replace(text, languages=tuple(pair))  # the output checks read the model's languages too
    notes: dict[int, str] = {}

    def cleaned(chunks: Iterable[list[str]]) -> Iterator[list[str]]:
        done = 0
        for chunk in chunks:
            out = []
            for i, line in enumerate(chunk):
                line, replaced = clean_text(line)
                if replaced:
                    notes[done + i] = f"replaced {replaced} control character(s) with spaces"
                out.append(line)
            done += len(chunk)
            yield out

    for r in translate_chunks(cleaned(chunks), translate_batch, text, unknown, accents, aligner, constrained):
        if r.index in notes:
            r.line_warnings = [notes.pop(r.index)]
        if pair is not None and (wrong := wrong_language(r.source, *pair)):
            r.line_warnings.append(wrong)
        yield r


def _checked(make):
    """Decoding options checked with messages in the API's words: the shared checks name `tt translate`'s
    flags ("--n-best needs beam search (not --greedy or --sample)"), a caller here passes keywords."""
    import re

    from core.errors import ConfigError

    try:
        return make()
    except ConfigError as exc:
        text = str(exc).replace("--greedy", "method='greedy'").replace("--sample", "method='sample'")
        text = re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), text)
        raise ConfigError(text) from None
