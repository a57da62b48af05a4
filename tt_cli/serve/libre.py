"""LibreTranslate's API, so that its clients (browser extensions, editors, libretranslatepy, deep-translator,
npm's libretranslate) work unchanged.

    POST /translate       {q: str | [str], source: code | auto, target, format: text|html, alternatives: N,
                           api_key} → {translatedText: str | [str], alternatives: [str] | [[str]] when asked,
                           detectedLanguage: {language, confidence} | [...] with source auto}
    POST /detect          {q} → [{language, confidence}], the likeliest first
    POST /translate_file  multipart {file: .txt|.srt|.md|.html, source, target} → {translatedFileUrl}
    GET  /download_file/NAME   the translated file (kept settings.files_kept_s)
    GET  /languages       → [{code, name, targets}]
    GET  /frontend/settings    limits, key, file formats, default languages (what LT's web page reads)

Each text is translated as `tt translate` translates by default (core/text: sentences split,
numbers, URLs and markup protected, case kept). format text: each line of q is a line of `tt
translate`, blank lines and the blanks around a line kept. format html: each run of text between
block-level tags is one (inline tags such as <b> and <a> stay in it and come back around their
translated text), everything else byte for byte (core.text.documents.parse_html).

Fields come from the query string, a form, a multipart form or JSON alike (body.py). A request goes to
the direction of its source and target (a server may serve several). source "auto": each text of q is
identified among the server's languages (core.text.language); one in a language the server translates
into the target is translated, one already in the target language comes back as it is (as
LibreTranslate hands back a text whose language is the target), with `detectedLanguage` (confidence
in percent, as LibreTranslate gives it). The answer decodes every character reference the input did
not hold (LibreTranslate unescapes its output): "&" never comes back as "&amp;".
Errors are LibreTranslate's: 400 for a missing key or a request over a limit, 403 for a wrong key, 429
when the queue is full (ApiError.lt_status).
"""

from __future__ import annotations

from pathlib import PurePath

from starlette.responses import Response

from core.api import text_chunks
from core.text.documents import Document, parse_document, parse_html, parse_lines
from core.text.entities import keep_source_entities
from core.text.language import name
from core.text.pipeline import TextOptions
from tt_cli.serve import text
from tt_cli.serve.body import ApiError
from tt_cli.serve.settings import MAX_ALTERNATIVES

# The files /translate_file takes: extension → (format of core.text.documents, media type of the answer).
FILE_FORMATS = {
    ".txt": ("lines", "text/plain; charset=utf-8"),
    ".srt": ("srt", "application/x-subrip; charset=utf-8"),
    ".md": ("md", "text/markdown; charset=utf-8"),
    ".html": ("html", "text/html; charset=utf-8"),
    ".htm": ("html", "text/html; charset=utf-8"),
}


async def translate(request) -> dict:
    service = request.app.state.service
    body, texts, many = await service.accept(request)
    html = body.text("format", "text", ("text", "html")) == "html"
    alternatives = body.integer("alternatives", 0, 0, MAX_ALTERNATIVES, numeric_text=True)
    source, target = body.text("source"), body.text("target")
    detected = _detected(service, texts, source, target)
    lanes = [service.lane(d["language"] if d else source, target) for d in detected]
    documents = [(parse_html(t) if html else parse_lines(t)) if lane else None for t, lane in zip(texts, lanes)]
    service.check_size(texts, [s for d in documents if d for s in d.segments])
    versions: dict[int, tuple[str, list[str]]] = {}  # each text's translations, by its place in q
    for lane in dict.fromkeys(lane for lane in lanes if lane):  # with source auto, texts may go several ways
        mine = [i for i, other in enumerate(lanes) if other is lane]
        done = await _translate_documents(lane, request, [documents[i] for i in mine], alternatives, html)
        versions.update(zip(mine, done))
    translated, others = [], []
    for i, t in enumerate(texts):
        best, runners_up = versions.get(i, (t, []))
        translated.append(keep_source_entities(t, best))
        others.append([keep_source_entities(t, r) for r in runners_up])
    answer: dict = {"translatedText": translated if many else translated[0]}
    if alternatives:
        answer["alternatives"] = others if many else others[0]
    if source == "auto":
        answer["detectedLanguage"] = detected if many else detected[0]
    return answer


def _detected(service, texts: list[str], source: str | None, target: str | None) -> list[dict | None]:
    """With source auto, each text's likeliest language (LibreTranslate's detectedLanguage); else Nones."""
    if source != "auto":
        return [None] * len(texts)
    if target is None:
        raise ApiError(400, f"missing target: this server translates {service.pairs}")
    return [_guess(service.detect(t)[0]) for t in texts]


def _guess(guess) -> dict:
    return {"language": guess.language, "confidence": round(100 * guess.confidence, 1)}


async def _translate_documents(
    lane, request, documents: list[Document], alternatives: int, html: bool
) -> list[tuple[str, list[str]]]:
    """Each document translated (its best rendering, and with `alternatives` the distinct renderings made
    of each sentence's runners-up in the beam), all segments through the batcher together."""
    segments = [s for d in documents for s in d.segments]
    # Alternatives are the runners-up of beam search: a server that decodes greedily searches a beam for them.
    n = alternatives + 1
    beam = {"n_best": n, "beam": max(lane.translator.options.beam, n), "method": "beam"} if alternatives else {}
    options = lane.options(beam)
    # An HTML page is a document: a heading or a list item without a final stop gets none.
    given = TextOptions(follow_stop=html)

    def work(translate_batch) -> list[list[str]]:
        """Every segment's translation made of each sentence's k-th hypothesis, for k = 0 (the best) .. n-1."""
        kth = text.hypotheses(translate_batch) if n > 1 else lambda k: translate_batch
        text_options = lane.text_options(given)
        return [
            [
                r.text
                for r in text_chunks(
                    [segments], kth(k), text_options, lane.unknown, lane.accents, lane.pair, aligner=lane.aligner
                )
            ]
            for k in range(n)
        ]

    versions = await text.run(lane, request, work, options, coverage=False) if segments else [[]] * n
    out, start = [], 0
    for doc in documents:
        mine = [version[start : start + len(doc.segments)] for version in versions]
        start += len(doc.segments)
        best = doc.render(mine[0])
        runners_up: list[str] = []
        for version in mine[1:]:
            rendered = doc.render(version)
            if rendered != best and rendered not in runners_up:  # two hypotheses may read alike
                runners_up.append(rendered)
        out.append((best, runners_up))
    return out


async def detect(request) -> list[dict]:
    service = request.app.state.service
    body = await service.read(request)
    texts, _ = body.sentences("q")
    return [_guess(g) for g in service.detect("\n".join(texts))]


async def translate_file(request) -> dict:
    service = request.app.state.service
    body = await service.read(request)
    upload = body.files.get("file")
    if upload is None:
        raise ApiError(400, "missing file: send the file to translate as the multipart field 'file'")
    suffix = PurePath(upload.filename).suffix.lower()
    if suffix not in FILE_FORMATS:
        raise ApiError(400, f"file format not supported: {upload.filename!r} (send {', '.join(FILE_FORMATS)})")
    fmt, media = FILE_FORMATS[suffix]
    try:
        content = upload.content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"{upload.filename}: not UTF-8 (byte {exc.start})") from None
    source, target = body.text("source"), body.text("target")
    guessed = _detected(service, [content], source, target)[0]
    lane = service.lane(guessed["language"] if guessed else source, target)
    if lane is None:
        translated = content
    else:
        document = _parse(content, fmt, upload.filename)
        service.check_size([content], document.segments)
        translated = (await _translate_documents(lane, request, [document], 0, fmt == "html"))[0][0]
    stored = service.files.put(upload.filename, keep_source_entities(content, translated).encode("utf-8"), media)
    return {"translatedFileUrl": f"{str(request.base_url).rstrip('/')}/download_file/{stored}"}


def _parse(content: str, fmt: str, filename: str) -> Document:
    if fmt == "lines":
        return parse_lines(content)
    if fmt == "html":
        return parse_html(content)
    try:
        return parse_document(content, fmt, filename)
    except Exception as exc:  # noqa: BLE001 - a parser's complaint about the file, in one line
        raise ApiError(400, f"{filename}: cannot be read as {fmt}: {exc}") from None


async def download_file(request) -> Response:
    found = request.app.state.service.files.get(request.path_params["name"])
    if found is None:
        raise ApiError(404, "no such file: translated files are kept for a while after /translate_file, then removed")
    filename, content, media = found
    disposition = f"attachment; filename*=UTF-8''{_quoted(filename)}"
    return Response(content, media_type=media, headers={"Content-Disposition": disposition})


def _quoted(filename: str) -> str:
    from urllib.parse import quote

    return quote(filename, safe="")


async def languages(request) -> list[dict]:
    return request.app.state.service.languages()


async def frontend_settings(request) -> dict:
    """What LibreTranslate's web page asks a server for before it shows itself."""
    service = request.app.state.service
    settings = service.settings
    target = service.default.target
    return {
        "charLimit": settings.max_chars,
        "frontendTimeout": 500,
        "apiKeys": bool(settings.api_keys),
        "keyRequired": bool(settings.api_keys),
        "suggestions": False,
        "filesTranslation": True,
        "supportedFilesFormat": list(FILE_FORMATS),
        "language": {
            "source": {"code": "auto", "name": "Auto Detect"},
            "target": {"code": target, "name": name(target)},
        },
    }
