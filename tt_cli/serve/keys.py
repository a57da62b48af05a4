"""API keys: a file of keys, one per line; a request shows one in a header or, as LibreTranslate's
clients do, in the body's api_key field."""

from __future__ import annotations

import hmac
from pathlib import Path

from core.errors import TTError


def read_keys(path: Path) -> frozenset[str]:
    """The keys of a file: one per line; blank lines and lines starting with # are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TTError(f"--api-keys {path}: cannot read it ({exc.__class__.__name__}: {exc})") from None
    keys = frozenset(s for s in (line.strip() for line in text.splitlines()) if s and not s.startswith("#"))
    if not keys:
        raise TTError(f"--api-keys {path}: no keys in it (one key per line; # starts a comment)")
    return keys


def key_of(headers, body_key: str | None) -> str | None:
    """The key a request shows: Authorization: Bearer KEY, X-API-Key: KEY, or the body's api_key."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return headers.get("x-api-key") or body_key or None


def allowed(key: str | None, keys: frozenset[str]) -> bool:
    # Compared in constant time with every key, so timing does not tell how much of a guess was right.
    return key is not None and any(hmac.compare_digest(key.encode(), k.encode()) for k in keys)
