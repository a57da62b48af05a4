"""The translated files of /translate_file, kept in memory until they are fetched from /download_file.

LibreTranslate answers a file with the URL to download its translation from; tt keeps the bytes here for
settings.files_kept_s, at most MAX_FILES of them (the oldest go first), under a name nobody can guess.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict

MAX_FILES = 64


class Files:
    def __init__(self, kept_s: float) -> None:
        self.kept_s = kept_s
        self._files: OrderedDict[str, tuple[float, str, bytes, str]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, filename: str, content: bytes, media: str) -> str:
        """The name to download `content` by: a random token, a dot, and the file's own name (as LibreTranslate's)."""
        name = f"{secrets.token_urlsafe(16).replace('.', '_')}.{filename}"
        with self._lock:
            self._expire()
            self._files[name] = (time.monotonic() + self.kept_s, filename, content, media)
            while len(self._files) > MAX_FILES:
                self._files.popitem(last=False)
        return name

    def get(self, name: str) -> tuple[str, bytes, str] | None:
        """(the file's name, its bytes, its media type), or None when there is none by that name any more."""
        with self._lock:
            self._expire()
            found = self._files.get(name)
        return None if found is None else found[1:]

    def _expire(self) -> None:
        now = time.monotonic()
        for name in [n for n, (until, *_) in self._files.items() if until <= now]:
            del self._files[name]
