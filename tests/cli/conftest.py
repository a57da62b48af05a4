"""Fixtures of the tests that talk to a real `tt serve` (test_warm.py, test_warm_text.py): the shipped
model loaded once per module in its default precision, and a server of it on 127.0.0.1 with the default settings. A module that
needs other settings defines its own `translator` and `url` (test_serve.py, test_serve_batching.py)."""

from __future__ import annotations

import io

import pytest


@pytest.fixture(scope="module")
def translator():
    """The shipped model as `tt serve` runs it: in its card's precision (core.card.default_precision)."""
    from core.api import Translator
    from core.card import default_model_dir, quantize_mode

    return Translator(quantize=quantize_mode(None, default_model_dir()))


@pytest.fixture(scope="module")
def url(translator):
    pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")
    from tt_cli.serve.server import Background
    from tt_cli.serve.settings import ServeSettings

    with Background(translator, ServeSettings(log=io.StringIO())) as url:
        yield url
