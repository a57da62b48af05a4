"""One model result kept for what it was made from, and asked for once.

Attribution, the logit lens, the sink flags and the heads' pattern kinds are slow enough to run on
the model thread and cheap enough to keep: each `Kept` holds the last result with its key (a
Decoding compares by identity, so a new step is a new key), and asks for a new one only when the
key changes.
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


class Same:
    """A key part equal only to the very object it holds, which it keeps alive (so its id is not
    reused): for records with tensors inside, whose field-wise == would compare tensors. A
    SourceTrace is one per sentence, and one per checkpoint of a run: a key for "this sentence"."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)
