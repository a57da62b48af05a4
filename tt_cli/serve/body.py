"""A request's fields, wherever a client puts them, and their types.

LibreTranslate reads a field from the query string, a form, a multipart form or a JSON object alike,
and its clients use each: libretranslatepy sends forms, deep-translator puts everything in the query
string of a POST without a body, web pages send JSON or multipart (files). So does tt: the query
string's fields and the body's are one set (a field given in both, with two values, is refused).

The body is read with a deadline (settings.read_timeout_s: a client that uploads 1 byte a second
gets 408 and the connection is closed) and a size limit (413); a server shutting down answers an
upload still under way with 503 instead of waiting for it. Once the body is in, a Presence watches
for the client hanging up.

Everything wrong with a request becomes an ApiError: a status and one line that names the field and
what was expected; the app answers it as {"error": "..."}.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from tt_cli.serve.presence import ClientGone, Presence

FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
DRAINING = "tt.draining"  # in a request's scope state when the server began to shut down during its upload
CLOSE = {"Connection": "close"}


class ApiError(Exception):
    """status: tt's own (the /v1 API's); lt_status: LibreTranslate's for the same case, where it differs
    (LT answers 400 for a missing key or a request over a limit, 429 for "slow down")."""

    def __init__(
        self, status: int, message: str, headers: dict[str, str] | None = None, lt_status: int | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.lt_status = lt_status or status


@dataclass(frozen=True)
class Upload:
    """A file of a multipart body."""

    filename: str
    content: bytes


@dataclass(frozen=True)
class Body:
    values: dict[str, Any]
    strings: frozenset[str] = frozenset()  # fields that came as text (query string, form): parsed on use
    files: dict[str, Upload] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        return self.values.get(name) is not None

    def sentences(self, name: str = "q", blank: bool = False) -> tuple[list[str], bool]:
        """The texts of field `name` (a string or a list of strings) and whether a list was given.
        blank: a list of blank lines is lines to translate (each gives an empty line), not a mistake."""
        value = self.values.get(name)
        if value is None:
            raise ApiError(400, f"missing {name}: the text to translate (a string or a list of strings)")
        if isinstance(value, str):
            texts, many = [value], False
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            texts, many = value, True
        else:
            raise ApiError(400, f"{name} must be a string or a list of strings, got {_kind(value)}")
        if not texts or not (any(texts) or blank and many):
            raise ApiError(400, f"{name} is empty: nothing to translate")
        return texts, many

    def text(self, name: str, default: str | None = None, choices: tuple[str, ...] = ()) -> str | None:
        value = self.values.get(name)
        if value is None:
            return default
        if not isinstance(value, str):
            raise ApiError(400, f"{name} must be a string, got {_kind(value)}")
        if choices and value not in choices:
            raise ApiError(400, f"{name} must be one of {', '.join(choices)}, got {value!r}")
        return value

    def integer(self, name: str, default: int | None, low: int, high: int, numeric_text: bool = False) -> int | None:
        """An integer field; numeric_text: a JSON string of digits too (LibreTranslate takes "alternatives": "2")."""
        value = self._parsed(name, int, "an integer", numeric_text)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise ApiError(400, f"{name} must be an integer, got {_kind(value)}")
        if not low <= value <= high:
            raise ApiError(400, f"{name} must be between {low} and {high}, got {value}")
        return value

    def number(self, name: str, default: float | None) -> float | None:
        value = self._parsed(name, float, "a number")
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ApiError(400, f"{name} must be a finite number, got {_kind(value)}")
        return float(value)

    def _parsed(self, name: str, parse, expected: str, text: bool = False) -> Any:
        """The field's value; from a form or the query string (or where `text`), the string parsed."""
        value = self.values.get(name)
        if (text or name in self.strings) and isinstance(value, str):
            try:
                return parse(value)
            except ValueError:
                raise ApiError(400, f"{name} must be {expected}, got {value!r}") from None
        return value

    def pairs(self, name: str) -> tuple[tuple[str, str], ...]:
        """A list of [French, English] string pairs (a glossary's terms); () when left out."""
        value = self.values.get(name)
        if value is None:
            return ()
        if not isinstance(value, list):
            raise ApiError(400, f"{name} must be a list of [French, English] pairs, got {_kind(value)}")
        for i, pair in enumerate(value):
            if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(s, str) and s.strip() for s in pair)):
                raise ApiError(400, f"{name}[{i}] must be a [French, English] pair of non-blank strings")
        return tuple((fr, en) for fr, en in value)

    def flag(self, name: str, default: bool | None) -> bool | None:
        value = self.values.get(name)
        if value is None:
            return default
        if name in self.strings and isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
            return value.lower() in ("true", "1")
        if not isinstance(value, bool):
            raise ApiError(400, f"{name} must be true or false, got {_kind(value)}")
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


async def read_body(request, max_bytes: int, timeout_s: float) -> Body:
    """The request's fields: its query string's and its body's (JSON, a form or a multipart form), the body
    at most max_bytes (413 beyond) and in within timeout_s (408). Starts the watch for a hang-up
    (request.state.presence)."""
    raw = await _read_raw(request, max_bytes, timeout_s)
    request.state.presence = Presence.watch(request.scope, request.receive)
    query = _form(request.scope.get("query_string", b""), "query string")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    files: dict[str, Upload] = {}
    if not raw.strip():
        values, strings = {}, frozenset()
    elif kind == MULTIPART:
        values, files = await _multipart(request.headers, raw, max_bytes)
        strings = frozenset(values)
    # `curl -d '{...}'` labels JSON as a form; no form of LibreTranslate's fields starts with "{".
    elif kind == FORM and not raw.lstrip().startswith(b"{"):
        values = _form(raw, "form body")
        strings = frozenset(values)
    elif kind and kind not in ("application/json", "text/plain", FORM) and not kind.endswith("+json"):
        raise ApiError(
            415, f"Content-Type {kind} is not supported: send application/json, {FORM} or {MULTIPART}", lt_status=400
        )
    else:
        values, strings = _json(raw), frozenset()
    for name in values.keys() & query.keys():
        if values[name] != query[name]:
            raise ApiError(400, f"{name} is given both in the query string and in the body")
    if not values and not query and not files:
        raise ApiError(400, "empty body and no query string: send q, source and target (JSON, a form, or a query)")
    return Body({**query, **values}, strings | (query.keys() - values.keys()), files)


async def _read_raw(request, max_bytes: int, timeout_s: float) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ApiError(
            413, f"request body of {int(declared)} bytes exceeds the limit of {max_bytes}", CLOSE, lt_status=400
        )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    raw = bytearray()
    while True:
        try:
            message = await asyncio.wait_for(request.receive(), max(deadline - loop.time(), 0))
        except asyncio.TimeoutError:
            raise ApiError(
                408, f"the request body did not arrive within the server's read timeout of {timeout_s:g} s", CLOSE
            ) from None
        if request.scope.get("state", {}).get(DRAINING):
            raise ApiError(503, "the server is shutting down; retry later", {**CLOSE, "Retry-After": "1"})
        if message["type"] == "http.disconnect":
            presence = Presence(request.scope)
            presence.left()
            request.state.presence = presence
            raise ClientGone
        raw += message.get("body", b"")
        if len(raw) > max_bytes:
            raise ApiError(413, f"request body exceeds the limit of {max_bytes} bytes", CLOSE, lt_status=400)
        if not message.get("more_body", False):
            return bytes(raw)


def _json(raw: bytes) -> dict[str, Any]:
    try:
        values = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(values, dict):
        raise ApiError(400, f"body must be a JSON object, got {_kind(values)}")
    return values


async def _multipart(headers, raw: bytes, max_bytes: int) -> tuple[dict[str, Any], dict[str, Upload]]:
    """A multipart form's text fields and files (Starlette's parser, python-multipart under it)."""
    from starlette.datastructures import UploadFile
    from starlette.formparsers import MultiPartException, MultiPartParser

    async def stream():
        yield raw

    try:
        form = await MultiPartParser(headers, stream(), max_files=4, max_fields=64, max_part_size=max_bytes).parse()
    except MultiPartException as exc:
        raise ApiError(400, f"multipart body cannot be read: {exc.message}") from None
    values: dict[str, Any] = {}
    files: dict[str, Upload] = {}
    for name in form.keys():
        given = form.getlist(name)
        if isinstance(given[0], UploadFile):
            files[name] = Upload(given[0].filename or "", await given[0].read())
            await form.close()
        elif name == "q" and len(given) > 1:
            values[name] = list(given)
        elif len(given) > 1:
            raise ApiError(400, f"{name} is given {len(given)} times")
        else:
            values[name] = given[0]
    return values, files


def _form(raw: bytes, what: str) -> dict[str, Any]:
    try:
        fields = parse_qs(raw.decode("ascii"), keep_blank_values=True, encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, f"{what} is not valid URL-encoded UTF-8: {exc}") from None
    values: dict[str, Any] = {}
    for name, given in fields.items():
        if name == "q" and len(given) > 1:
            values[name] = given  # q=…&q=…: a list, as JSON's "q": [...]
        elif len(given) > 1:
            raise ApiError(400, f"{name} is given {len(given)} times")
        else:
            values[name] = given[0]
    return values
