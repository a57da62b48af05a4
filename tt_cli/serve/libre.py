"""LibreTranslate's API, so that its clients (browser extensions, editors, libretranslatepy) work unchanged.

    POST /translate  {q: str | [str], source, target, format: text|html, alternatives: N, api_key}
                     → {translatedText: str | [str], alternatives: [str] | [[str]] when asked}
    GET  /languages  → [{code, name, targets}]

A body may be JSON or a form (libretranslatepy sends forms). There is no language detection:
source "auto" is refused with the pair this server translates.
"""

from __future__ import annotations

from tt_cli.serve.document import markup, plain
from tt_cli.serve.settings import MAX_ALTERNATIVES


async def translate(request) -> dict:
    service = request.app.state.service
    body, texts, many = await service.accept(request, pair_required=True)
    html = body.text("format", "text", ("text", "html")) == "html"
    alternatives = body.integer("alternatives", 0, 0, MAX_ALTERNATIVES)
    documents = [markup(t) if html else plain(t) for t in texts]
    sentences = [s for d in documents for s in d.sentences]
    service.check_size(texts, sentences)
    # Alternatives are the runners-up of beam search: a server that decodes greedily searches a beam for them.
    n = alternatives + 1
    decoding = {"n_best": n, "beam": max(service.translator.options.beam, n), "method": "beam"}

    def finish(results: list) -> dict:
        options = [[a.text for a in r.n_best] or [r.text] for r in results]
        translated, others, start = [], [], 0
        for doc in documents:
            mine = options[start : start + len(doc.sentences)]
            start += len(doc.sentences)
            best = doc.render(mine)
            translated.append(best)
            runners_up: list[str] = []
            for k in range(1, n):
                text = doc.render(mine, k)
                if text != best and text not in runners_up:  # two hypotheses may detokenize alike
                    runners_up.append(text)
            others.append(runners_up)
        answer = {"translatedText": translated if many else translated[0]}
        if alternatives:
            answer["alternatives"] = others if many else others[0]
        return answer

    return await service.translate(request, sentences, decoding if alternatives else {}, False, finish)


async def languages(request) -> list[dict]:
    return request.app.state.service.languages()
