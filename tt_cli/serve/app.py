"""The ASGI app: routes, middleware, and one rule for errors — every answer is JSON, a mistake is a 4xx
with {"error": "one line"}, an unexpected failure a 500 with no traceback (that goes to the log). A
client that hangs up gets nothing (there is nobody to answer) and is logged as a "disconnect".

    GET  /health          status, model, and the batcher's counters (decode calls, sentences, queue,
                          disconnects)
    POST /translate, /detect, /translate_file; GET /languages, /frontend/settings, /download_file/NAME:
                          LibreTranslate's (with its status codes)
    POST /v1/translate    the --json record        GET /v1/model

A server translates each direction it has a model for (service.Service.lane routes a request by its source
and target); /languages, /health and /v1/model list them.
"""

from __future__ import annotations

import contextlib
import traceback

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tt_cli.serve import libre, v1
from tt_cli.serve.announce import announced
from tt_cli.serve.body import ApiError
from tt_cli.serve.logs import AccessLog, JsonLog
from tt_cli.serve.presence import ClientGone
from tt_cli.serve.service import Service
from tt_cli.serve.settings import ServeSettings


def make_app(translators, settings: ServeSettings) -> Starlette:
    """The app over loaded core.api.Translators: one, or a sequence of them, one per direction (the first
    is the default). Its lifespan starts the decode workers and, on shutdown (after the server has
    answered every request in flight), lets them finish their queues."""
    log = JsonLog(settings.log)
    service = Service(translators if isinstance(translators, (list, tuple)) else [translators], settings, log)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        for lane in service.lanes:
            lane.batcher.start()
        # Announced while the server runs (before the log says so), and removed on shutdown, before
        # uvicorn re-raises a SIGTERM.
        keyed = bool(settings.api_keys)
        models = [lane.translator.path for lane in service.lanes]
        modes = [lane.translator.quantize for lane in service.lanes]  # each direction in its card's precision
        with (
            announced(settings.url, models, api_keys=keyed, quantize=modes)
            if settings.announce
            else contextlib.nullcontext()
        ):
            log(
                "listening",
                url=settings.url,
                model=str(service.default.translator.path),
                source=service.default.source,
                target=service.default.target,
                directions=[lane.arrow for lane in service.lanes],
            )
            yield
        for lane in service.lanes:
            lane.batcher.close()
        log("stopped", **{k: v for k, v in service.batching().items() if k in ("decode_calls", "requests")})

    routes = [
        Route("/health", _json(lambda request: service.health()), methods=["GET"]),
        Route("/translate", _json(libre.translate, lt=True), methods=["POST"]),
        Route("/detect", _json(libre.detect, lt=True), methods=["POST"]),
        Route("/translate_file", _json(libre.translate_file, lt=True), methods=["POST"]),
        Route("/download_file/{name:path}", _json(libre.download_file, lt=True), methods=["GET"]),
        Route("/languages", _json(libre.languages, lt=True), methods=["GET"]),
        Route("/frontend/settings", _json(libre.frontend_settings, lt=True), methods=["GET"]),
        Route("/v1/translate", _json(v1.translate), methods=["POST"]),
        Route("/v1/model", _json(v1.model), methods=["GET"]),
    ]
    middleware = [Middleware(AccessLog, log=log)]
    if settings.cors_origins:
        middleware.append(
            Middleware(
                _JsonCORS,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Content-Type", "Authorization", "X-API-Key"],
                expose_headers=["Retry-After"],  # so a page can wait as long as a 429 or 503 asks
                max_age=600,
            )
        )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        # Exception: what escapes everything else (a middleware's failure), still answered in JSON.
        exception_handlers={HTTPException: _http_error, Exception: _internal_error},
    )
    app.state.service = service
    return app


def _json(handler, lt: bool = False):
    """A route answering handler(request)'s value as JSON (a Response as it is), and every error as
    {"error": ...}: with tt's status, or with LibreTranslate's where `lt` (ApiError.lt_status)."""

    async def endpoint(request: Request) -> Response:
        try:
            result = handler(request)
            if hasattr(result, "__await__"):
                result = await result
            return result if isinstance(result, Response) else JSONResponse(result)
        except ApiError as exc:
            _note(request, error=exc.message)
            status = exc.lt_status if lt else exc.status
            headers = {k: v for k, v in exc.headers.items() if status == 401 or k != "WWW-Authenticate"}
            return JSONResponse({"error": exc.message}, status, headers=headers)
        except ClientGone:
            return Response(status_code=204)  # never sent: the connection is gone (the log says "disconnect")
        except Exception as exc:  # noqa: BLE001 - the client gets one line; the log gets the traceback
            return _failed(request, exc)
        finally:
            presence = getattr(request.state, "presence", None)
            if presence is not None:
                presence.close()

    return endpoint


def _failed(request: Request, exc: Exception) -> JSONResponse:
    request.app.state.service.log(
        "error",
        path=request.url.path,
        error=f"{exc.__class__.__name__}: {exc}",
        traceback="".join(traceback.format_exception(exc)),
    )
    return JSONResponse({"error": "internal error (the server log has the details)"}, 500)


async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    return _failed(request, exc)


def _note(request: Request, **fields) -> None:
    if not hasattr(request.state, "log"):
        request.state.log = {}
    request.state.log.update(fields)


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    if exc.status_code == 404:
        message = (
            f"no such endpoint: {request.url.path} (see GET /health, /languages, /frontend/settings, /v1/model;"
            " POST /translate, /detect, /translate_file, /v1/translate)"
        )
    elif exc.status_code == 405:
        message = (
            f"{request.method} is not allowed on {request.url.path} (allowed: {(exc.headers or {}).get('Allow', '?')})"
        )
    else:
        message = str(exc.detail)
    _note(request, error=message)
    return JSONResponse({"error": message}, exc.status_code, headers=exc.headers)


class _JsonCORS(CORSMiddleware):
    """Starlette's CORS, with a refused preflight answered in JSON like every other error."""

    def preflight_response(self, request_headers):
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}
        return JSONResponse({"error": response.body.decode()}, response.status_code, headers=headers)
