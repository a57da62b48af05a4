"""A request body (a JSON object, or a form as LibreTranslate's clients send) and its typed fields.

Everything wrong with a request becomes an ApiError: a status and one line that names the field and
what was expected; the app answers it as {"error": "..."}.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

FORM = "application/x-www-form-urlencoded"


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass(frozen=True)
class Body:
    values: dict[str, Any]
    form: bool  # values are strings from a form, to be parsed; JSON values must have the right type

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

    def integer(self, name: str, default: int | None, low: int, high: int) -> int | None:
        value = self._parsed(name, int, "an integer")
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

    def _parsed(self, name: str, parse, expected: str) -> Any:
        """The field's value; from a form, the string parsed."""
        value = self.values.get(name)
        if self.form and isinstance(value, str):
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
        if self.form and isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
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


async def read_body(request, max_bytes: int) -> Body:
    """The body of a POST, at most max_bytes (413 beyond, checked before reading it all)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ApiError(413, f"request body of {int(declared)} bytes exceeds the limit of {max_bytes}")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > max_bytes:
            raise ApiError(413, f"request body exceeds the limit of {max_bytes} bytes")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if not raw.strip():
        raise ApiError(400, "empty body: send a JSON object with q, source and target (or a form)")
    # `curl -d '{...}'` labels JSON as a form; no form of LibreTranslate's fields starts with "{".
    if kind == FORM and not raw.lstrip().startswith(b"{"):
        return Body(_form(bytes(raw)), form=True)
    if kind and kind not in ("application/json", "text/plain", FORM) and not kind.endswith("+json"):
        raise ApiError(415, f"Content-Type {kind} is not supported: send application/json or {FORM}")
    try:
        values = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(values, dict):
        raise ApiError(400, f"body must be a JSON object, got {_kind(values)}")
    return Body(values, form=False)


def _form(raw: bytes) -> dict[str, Any]:
    try:
        fields = parse_qs(raw.decode("ascii"), keep_blank_values=True, encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, f"form body is not valid URL-encoded UTF-8: {exc}") from None
    values: dict[str, Any] = {}
    for name, given in fields.items():
        if name == "q" and len(given) > 1:
            values[name] = given  # q=…&q=…: a list, as JSON's "q": [...]
        elif len(given) > 1:
            raise ApiError(400, f"{name} is given {len(given)} times")
        else:
            values[name] = given[0]
    return values
