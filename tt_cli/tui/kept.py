"""One model result kept for what it was made from, and asked for once.

Attribution, the logit lens and the sink flags are slow enough to run on the model thread and
cheap enough to keep: each `Kept` holds the last result with its key (a Decoding compares by
identity, so a new step is a new key), and asks for a new one only when the key changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Submit = Callable[[Callable[[], Any], Callable[[Any], None]], None]  # InspectApp.submit


class Kept:
    def __init__(self) -> None:
        self.key: Any = None
        self.value: Any = None
        self._has = False
        self._asked: tuple[Any] | None = None  # (key,) last asked for; a tuple so that None is a key

    def get(self, key: Any, job: Callable[[], Any], redraw: Callable[[], None], submit: Submit) -> Any | None:
        """The value made for `key`, or None while the model thread makes it (`redraw` runs when it comes)."""
        if self._has and self.key == key:
            return self.value
        if self._asked != (key,):
            self._asked = (key,)

            def came(value: Any) -> None:
                self.key, self.value, self._has = key, value, True
                redraw()

            submit(job, came)
        return None
