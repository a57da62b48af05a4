"""LibreTranslate's API, so that its clients (browser extensions, editors, libretranslatepy) work unchanged.

    POST /translate  {q: str | [str], source, target, format: text|html, alternatives: N, api_key}
                     → {translatedText: str | [str], alternatives: [str] | [[str]] when asked}
    GET  /languages  → [{code, name, targets}]

Each text is translated as `tt translate` translates by default (core/text: sentences split,
numbers, URLs and markup protected, case kept). format text: each line of q is a line of `tt
translate`, blank lines and the blanks around a line kept. format html: each run of text between
block-level tags is one (inline tags such as <b> and <a> stay in it and come back around their
translated text), everything else byte for byte (core.text.documents.parse_html).

A body may be JSON or a form (libretranslatepy sends forms). There is no language detection:
source "auto" is refused with the pair this server translates.
"""

from __future__ import annotations

from core.api import text_chunks
from core.text.documents import parse_html, parse_lines
from core.text.pipeline import TextOptions
from tt_cli.serve import text
from tt_cli.serve.settings import MAX_ALTERNATIVES


async def translate(request) -> dict:
    service = request.app.state.service
    body, texts, many = await service.accept(request, pair_required=True)
    html = body.text("format", "text", ("text", "html")) == "html"
    alternatives = body.integer("alternatives", 0, 0, MAX_ALTERNATIVES)
    documents = [parse_html(t) if html else parse_lines(t) for t in texts]
    segments = [s for d in documents for s in d.segments]
    service.check_size(texts, segments)
    # Alternatives are the runners-up of beam search: a server that decodes greedily searches a beam for them.
    n = alternatives + 1
    decoding = {"n_best": n, "beam": max(service.translator.options.beam, n), "method": "beam"} if alternatives else {}
    # An HTML page is a document: a heading or a list item without a final stop gets none.
    options = TextOptions(follow_stop=html)

    def work(translate_batch) -> list[list[str]]:
        """Every segment's translation made of each sentence's k-th hypothesis, for k = 0 (the best) .. n-1."""
        kth = text.hypotheses(translate_batch) if n > 1 else lambda k: translate_batch
        return [
            [r.text for r in text_chunks([segments], kth(k), options, service.unknown, service.accents)]
            for k in range(n)
        ]

    versions = await text.run(service, request, work, decoding, coverage=False)
    translated, others, start = [], [], 0
    for doc in documents:
        mine = [version[start : start + len(doc.segments)] for version in versions]
        start += len(doc.segments)
        best = doc.render(mine[0])
        runners_up: list[str] = []
        for version in mine[1:]:
            rendered = doc.render(version)
            if rendered != best and rendered not in runners_up:  # two hypotheses may read alike
                runners_up.append(rendered)
        translated.append(best)
        others.append(runners_up)
    answer = {"translatedText": translated if many else translated[0]}
    if alternatives:
        answer["alternatives"] = others if many else others[0]
    return answer


async def languages(request) -> list[dict]:
    return request.app.state.service.languages()
