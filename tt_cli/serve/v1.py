"""tt's own API: the full record of `tt translate --json`, and the model card.

    POST /v1/translate  {q: str | [str], source?, target?, beam?, alpha?, greedy?, sample?, n_best?,
                         temperature?, top_k?, top_p?, seed?, attention?: none|cross|all, align?: bool,
                         batch_size?}
                        → {translations: [one --json record per item of q, in order],
                           warnings: [{index, message}]}   (what `tt translate` prints on stderr)
    GET  /v1/model      → {model, source, target, decoding: the server's defaults, card: card.json or null}

Each item of q is one line of `tt translate`'s input and gets exactly the record `tt translate --json`
prints for it ("index" is its position in q); a blank item gives an empty translation, as a blank
line does. Options left out take the server's defaults (its --beam, --alpha, --greedy); a client such
as `tt translate` sends its own. With batch_size the request is decoded on its own, in batches of
that many sentences, exactly as `tt translate --batch-size N` decodes the same lines — its floats
then match the command's to the last bit, which sharing a batch with other requests would not give.
"""

from __future__ import annotations

import dataclasses

from tt_cli.options import method_of
from tt_cli.output import translation_json
from tt_cli.serve.body import ApiError
from tt_cli.serve.settings import MAX_BEAM


async def translate(request) -> dict:
    service = request.app.state.service
    body, texts, _ = await service.accept(request, pair_required=False, blank=True)
    attention = body.text("attention", "none", ("none", "cross", "all"))
    align = body.flag("align", False)
    decoding = {
        name: value
        for name, value in (
            ("beam", body.integer("beam", None, 1, MAX_BEAM)),
            ("n_best", body.integer("n_best", None, 1, MAX_BEAM)),
            ("alpha", body.number("alpha", None)),
            ("greedy", body.flag("greedy", None)),
            ("sample", body.flag("sample", None)),
            ("temperature", body.number("temperature", None)),
            ("top_k", body.integer("top_k", None, 0, 1 << 20)),
            ("top_p", body.number("top_p", None)),
            ("seed", body.integer("seed", None, 0, (1 << 63) - 1)),
            ("batch_size", body.integer("batch_size", None, 1, service.settings.max_sentences)),
        )
        if value is not None
    }
    if "greedy" in decoding or "sample" in decoding:  # the CLI's two flags, as the API's one method
        greedy, sample = bool(decoding.pop("greedy", False)), bool(decoding.pop("sample", False))
        if greedy and sample:
            raise ApiError(400, "greedy and sample exclude each other")
        decoding["method"] = method_of(greedy, sample)
    service.check_decoding(decoding)
    service.check_size(texts, texts)

    def finish(results: list) -> dict:  # in the worker thread: --align may run the model again
        rule = service.align_rule() if align else False
        model = service.translator.loaded.model
        records, warnings = [], []
        for i, r in enumerate(results):
            t = r
            records.append(translation_json(dataclasses.replace(t, index=i), attention, rule or None, model))
            prefix = f"line {t.index + 1}: "  # core numbers lines within the whole batch; a client counts its own
            warnings += [{"index": i, "message": w.removeprefix(prefix)} for w in t.warnings]
        return {"translations": records, "warnings": warnings}

    return await service.translate(request, texts, decoding, attention != "none" or align, finish)


async def model(request) -> dict:
    service = request.app.state.service
    options = service.translator.options
    return {
        "model": str(service.translator.path),
        "source": service.settings.source,
        "target": service.settings.target,
        "decoding": {"method": options.method, "beam": options.beam, "alpha": options.alpha},
        "card": service.card(),
    }
