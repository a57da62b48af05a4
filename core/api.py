"""tt for programs: load a model once, translate lists of sentences, get plain results (and traces).

    from core import Translator

    translator = Translator()                       # $TT_MODEL, else the shipped model
    results = translator.translate(["Je suis étudiant."])
    results[0].text, results[0].to_dict()           # to_dict(): the keys of `tt translate --json`

This module is the stable surface; everything it returns is plain data. `import core` stays light
(torch loads on first use of `core.Translator`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from core.decode.translate import Alternative, Translation

# What `translate` returns: the one record of a translated sentence that `tt translate` writes too
# (text, pieces, token_ids, token_logprobs, score, logprob, truncated, warnings, n_best; with
# trace=True source_trace and steps, and attention()). `to_dict()` gives the keys of --json.
Result = Translation

__all__ = ["Alternative", "Result", "Translation", "Translator"]


class Translator:
    """A model loaded once; `translate` as many lists as you like.

    model: a model directory (what `tt train` writes); None = $TT_MODEL, else the shipped model.
    device: auto, cpu, cuda, cuda:N or mps. The decoding keywords are `tt translate`'s options and
    the paper's defaults (beam 4, α 0.6); each call to `translate` may override them.
    """

    def __init__(self, model: str | Path | None = None, *, device: str = "auto", **decoding) -> None:
        from core.checkpoint import load_model
        from core.decode.translate import TranslateOptions
        from core.device import resolve_device

        self.options = _checked(lambda: TranslateOptions(**decoding).validate())
        self.loaded = load_model(model, device=resolve_device(device), packed=True)

    @property
    def path(self) -> Path:
        """The model directory in use."""
        return self.loaded.path

    def translate(self, sentences: list[str], *, trace: bool = False, **decoding) -> list[Result]:
        """One Result per sentence, in order. trace=True also returns what the model attended to
        at every step (source_trace, steps; see Result.attention)."""
        from core.decode.translate import translate_lines

        if isinstance(sentences, str):
            raise TypeError("translate() takes a list of sentences; for one: translate([text])[0]")
        options = _checked(lambda: replace(self.options, with_attention=trace, **decoding).validate())
        return list(translate_lines(self.loaded, list(sentences), options))


def _checked(make):
    """Decoding options checked with messages in the API's words: the shared checks name `tt translate`'s
    flags ("--n-best needs beam search (not --greedy or --sample)"), a caller here passes keywords."""
    import re

    from core.errors import ConfigError

    try:
        return make()
    except ConfigError as exc:
        text = str(exc).replace("--greedy", "method='greedy'").replace("--sample", "method='sample'")
        text = re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), text)
        raise ConfigError(text) from None
