"""Textual's Footer, rebuilt only when the keys it shows change.

Textual's Footer removes and re-mounts every key on each bindings signal, and a signal comes with
every focus change: a right-hand panel switched away from the candidates list, a screen pushed or
popped, often several in a row. Each rebuild cost ~30 ms of CPU here, up to four per key press
(bench/bench_tui_toggle.py), while tt inspect's focusable widgets show no keys of their own: the
footer was drawn again the same.
"""

from __future__ import annotations

from textual.widgets import Footer as TextualFooter

NARROW = 100  # columns: below, the right-hand panel narrows (app.tcss)


class Footer(TextualFooter):
    _shown: tuple | None = None  # what the last rebuild showed

    def __init__(self) -> None:
        # Packed tight, and without the command palette's key (ctrl+p still opens it): every key fits
        # 120 columns, and the first ones, help and quit among them, fit 80.
        super().__init__(compact=True, show_command_palette=False)

    def shown(self) -> tuple:
        """What the footer draws: its style and, as Textual's compose picks them, the first shown
        key of each action with its description and state ("n" for n,right whatever has the focus)."""
        active, first = self.screen.active_bindings, {}
        for _, b, enabled, tooltip in active.values():
            if b.show:
                first.setdefault(b.action, (b.key, b.description, b.group, enabled, tooltip))
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)  # drawn on its own, at the right
        return (
            self.compact,
            self.show_command_palette,
            self.combine_groups,
            tuple(first.items()),
            palette and (palette.binding.key, palette.enabled),
        )

    async def recompose(self) -> None:
        # Before the first bindings signal Textual composes an empty footer: that is not "shown".
        shown = self.shown() if self.is_attached and self._bindings_ready else None
        if shown is not None and shown == self._shown:
            return
        self._shown = shown
        await super().recompose()
