"""tt's own API: the record of `tt translate --json`, and the model card.

    POST /v1/translate  {q: str | [str], source?, target?, beam?, alpha?, method?, greedy?, sample?, n_best?,
                         temperature?, top_k?, top_p?, seed?, batch_size?, rerank?: bool,
                         split?, protect?, case?, terms?: [[fr, en], ...], follow_stop?, coverage?,
                         raw?, attention?: none|cross|all, align?: bool}
                        → {translations: [one --json record per item of q, in order],
                           warnings: [{index, message}],   (what `tt translate` prints on stderr)
                           confidences: [each line's confidence, unrounded]}   (not with raw)
    GET  /v1/model      → {model, source, target, decoding: the server's defaults, card: card.json or null}: the
                          default direction's; directions: [the same for each direction served]

source and target pick the direction (one left out: the direction that has the other, else the default,
the first served: fr→en where it is). Each item of q is one line of `tt translate`'s input and gets exactly the record `tt translate --json`
prints for it ("index" is its position in q); a blank item gives an empty translation, as a blank
line does. By default that is the text pipeline's record (sentences, protected spans, confidences;
split, protect, case, terms — a glossary's pairs —, follow_stop — a document's segments, whose
added final stop is dropped — and coverage as core.api's translate_text takes them). raw: true, as
n_best > 1, attention or align do, gives the model's own record of the line as given, that of `tt
translate --json --raw`. Options left out take the server's defaults (its --beam, --alpha,
--greedy, --rerank); a client such as `tt translate` sends its own. rerank: true reranks the beam with the other
direction's shipped model (`tt translate --rerank`; loaded on the first such request). With batch_size the request is decoded on
its own, in batches of that many sentences, exactly as `tt translate --batch-size N` decodes the
same lines — its floats then match the command's to the last bit, which sharing a batch with other
requests would not give.
"""

from __future__ import annotations

import dataclasses

from core.api import text_chunks
from core.decode.method import CHANNEL_WEIGHT, METHODS, TranslateOptions, method_of
from core.text.pipeline import TextOptions
from tt_cli.output import translation_json
from tt_cli.serve import text
from tt_cli.serve.body import ApiError, Body
from tt_cli.serve.settings import MAX_BEAM

# The text pipeline's fields: with the model alone (raw) they mean nothing, and are refused.
TEXT_FIELDS = ("split", "protect", "names", "case", "accents", "terms", "follow_stop", "coverage")


async def translate(request) -> dict:
    service = request.app.state.service
    body, texts, _ = await service.accept(request, blank=True)
    lane = service.lane(body.text("source"), body.text("target"), required=False, as_is=False)
    attention = body.text("attention", "none", ("none", "cross", "all"))
    align = body.flag("align", False)
    options = _options(body, lane, service.settings.max_sentences)
    # A request that names its batch size is decoded alone, in batches of that size, as tt translate --batch-size.
    own_batch = body.integer("batch_size", None, 1, service.settings.max_sentences) is not None
    service.check_size(texts, texts)
    if body.flag("raw", False) or attention != "none" or align or options.n_best > 1:
        given = [name for name in TEXT_FIELDS if body.has(name)]
        if given:
            fields = ", ".join(given)
            raise ApiError(
                400, f"{fields}: options of the text pipeline, not of raw (nor n_best > 1, attention, align)"
            )
        return await _raw(lane, request, texts, options, own_batch, attention, align)
    return await _text(lane, request, body, texts, options, own_batch)


def _options(body: Body, lane, max_sentences: int) -> TranslateOptions:
    """The request's decoding: the server's, with the request's fields on top (method, or the CLI's two
    flags greedy and sample)."""
    decoding = {
        name: value
        for name, value in (
            ("beam", body.integer("beam", None, 1, MAX_BEAM)),
            ("n_best", body.integer("n_best", None, 1, MAX_BEAM)),
            ("alpha", body.number("alpha", None)),
            ("method", body.text("method", None, METHODS)),
            ("greedy", body.flag("greedy", None)),
            ("sample", body.flag("sample", None)),
            ("temperature", body.number("temperature", None)),
            ("top_k", body.integer("top_k", None, 0, 1 << 20)),
            ("top_p", body.number("top_p", None)),
            ("seed", body.integer("seed", None, 0, (1 << 63) - 1)),
            ("batch_size", body.integer("batch_size", None, 1, max_sentences)),
            ("rerank", body.flag("rerank", None)),
        )
        if value is not None
    }
    if "rerank" in decoding:  # the reverse direction's model reranks the beam (tt translate --rerank)
        decoding["rerank"] = CHANNEL_WEIGHT if decoding["rerank"] else 0.0
    if "greedy" in decoding or "sample" in decoding:  # the CLI's two flags, as the API's one method
        greedy, sample = bool(decoding.pop("greedy", False)), bool(decoding.pop("sample", False))
        if greedy and sample:
            raise ApiError(400, "greedy and sample exclude each other")
        if "method" in decoding and (greedy or sample):
            raise ApiError(400, "method and greedy/sample: give one of them")
        decoding.setdefault("method", method_of(greedy, sample))
    return lane.options(decoding)


async def _text(lane, request, body: Body, texts: list[str], options: TranslateOptions, own_batch: bool) -> dict:
    """The text pipeline's record of each line (`tt translate --json`)."""
    given = TextOptions(
        split=body.flag("split", True),
        protect=body.flag("protect", True),
        names=body.flag("names", True),
        case=body.flag("case", True),
        accents=body.flag("accents", True),
        follow_stop=body.flag("follow_stop", True),
        terms=body.pairs("terms"),
    )
    coverage = body.flag("coverage", True)

    def work(translate_batch) -> dict:
        results = list(
            text_chunks(
                [texts],
                translate_batch,
                lane.text_options(given),
                lane.unknown,
                lane.accents,
                lane.pair,  # a line in the wrong language is warned of
                aligner=lane.aligner,
                constrained=lane.constrained(options),
            )
        )
        return {
            "translations": [r.to_dict() for r in results],
            "warnings": [{"index": r.index, "message": w} for r in results for w in r.warnings],
            "confidences": [r.confidence for r in results],  # what --flag-below compares, before rounding
        }

    return await text.run(lane, request, work, options, coverage, own_batch)


async def _raw(
    lane, request, texts: list[str], options: TranslateOptions, own_batch: bool, attention: str, align: bool
) -> dict:
    """The model's own record of each line as given (`tt translate --json --raw`)."""

    def finish(results: list) -> dict:  # in the worker thread: --align may run the model again
        rule = lane.align_rule() if align else False
        model = lane.translator.loaded.model
        records, warnings = [], []
        for i, t in enumerate(results):
            records.append(translation_json(dataclasses.replace(t, index=i), attention, rule or None, model))
            warnings += [{"index": i, "message": w} for w in t.warnings]
        return {"translations": records, "warnings": warnings}

    return await lane.decode(request, texts, options, attention != "none" or align, finish, own_batch)


async def model(request) -> dict:
    """The default direction's record, as a server of one model gives it, and every direction's."""
    lanes = request.app.state.service.lanes
    return {**lanes[0].model(), "directions": [lane.model() for lane in lanes]}
