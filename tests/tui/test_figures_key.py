"""Key S of `tt inspect`: the attention map on screen and the step's distribution as figure files."""

from __future__ import annotations

import html
import re
import time

import pytest

from tests.tui.terminal import Terminal
from tests.tui.test_tui import SENTENCE, drive, keys


def svg_texts(path) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text(encoding="utf-8"))]


def test_key_s_saves_the_map_shown_and_the_distribution_shown(tiny_loaded, tmp_path):
    async def script(app, pilot):
        await keys(pilot, "n", "n", "f", "h", "h", "k", "k", "S")  # masked self-attention, head 1, top-12
        attention, distribution = sorted(tmp_path.glob("*.svg"))
        assert attention.name.endswith("-attention.svg") and distribution.name.endswith("-distribution.svg")
        d, view = app.decoding, app.view
        assert (view.family, view.head, view.top_k) == ("decoder_self", 1, 12)
        texts = svg_texts(attention)
        assert "masked decoder self-attention, layer 1 of 2, head 2" in texts
        for piece in {"<s>", *(s.piece for s in d.steps)}:
            assert piece in texts, piece
        bars = svg_texts(distribution)
        shown = app.view.candidates(d.steps[-1], app.tokenizer)
        assert len(shown) == 12 and all(c.piece in bars for c in shown)
        assert f"step {len(d.steps)}: next-piece distribution (chose {d.steps[-1].piece})" in bars  # 1-based

    drive(tiny_loaded, script, svg_dir=tmp_path, figure_format="svg")


def test_key_s_without_matplotlib_says_how_to_get_it(tiny_loaded, tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else find_spec(name, *a)
    )

    async def script(app, pilot):
        await keys(pilot, "S")
        assert "needs matplotlib: pip install 'tt[figures]'" in list(app._notifications)[-1].message
        assert not list(tmp_path.iterdir())

    drive(tiny_loaded, script, svg_dir=tmp_path)


@pytest.mark.slow
def test_figure_format_reaches_the_real_command(tiny_model_dir, tmp_path):
    shots = tmp_path / "shots"
    shots.mkdir()
    tt = Terminal(
        ["--model", str(tiny_model_dir), "--svg-dir", str(shots), "--figure-format", "pdf", SENTENCE], shots, tmp_path
    )
    try:
        # The panels are drawn ("next piece") before tt inspect has taken its first step, and S before a step
        # saves nothing: wait for the step itself (the cell line names it; a toast may cover the panel's subtitle).
        tt.screen_until(lambda s: "query step 1" in s, "the first step")
        tt.press("S")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            made = sorted(p.name.rsplit("-", 1)[-1] for p in shots.glob("*.pdf") if p.stat().st_size)
            if len(made) == 2:
                break
            time.sleep(0.1)
        assert made == ["attention.pdf", "distribution.pdf"], tt.tail()
        assert all(p.read_bytes()[:5] == b"%PDF-" for p in shots.glob("*.pdf"))
    finally:
        assert tt.quit() == 0, tt.tail()
