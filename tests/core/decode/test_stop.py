"""A decode asked to stop (its caller's `stop()` is true) ends at its next step with core.errors.Stopped,
whatever the search; asked never, it gives what a decode without `stop` gives."""

from __future__ import annotations

import pytest

from core.decode.beam import beam_search
from core.decode.search import greedy, pad_batch, sample
from core.errors import Stopped
from tests.core.decode.test_beam_limits import A, constant_model


def counting(after: int):
    """A stop() that says yes from its (after + 1)-th call on, and counts its calls."""
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > after

    return stop, calls


@pytest.mark.parametrize(
    "search",
    [
        lambda m, src, stop: greedy(m, src, max_output=20, stop=stop),
        lambda m, src, stop: sample(m, src, seed=1, max_output=20, stop=stop),
        lambda m, src, stop: beam_search(m, src, beam_size=2, max_output=20, stop=stop),
    ],
    ids=["greedy", "sample", "beam"],
)
def test_each_search_stops_at_the_step_after_stop_says_so_and_not_before(search):
    model = constant_model({A: 0.9, 3: 0.05})  # never ends before its limit of 20 steps
    src = pad_batch([[7, 8, 3]], 0)
    stop, calls = counting(after=3)
    with pytest.raises(Stopped):
        search(model, src, stop)
    assert len(calls) == 4  # asked before each step: three steps ran, the fourth did not
    never, asked = counting(after=10**6)
    assert search(model, src, never) is not None and len(asked) == 20
    assert search(model, src, None) is not None


def test_translate_stops_between_batches_too(tiny_model_dir):
    from core.api import Translator

    translator = Translator(tiny_model_dir, beam=2)
    lines = ["le chat dort", "il fait froid"] * 4
    stop, calls = counting(after=0)
    with pytest.raises(Stopped):
        translator.translate(lines, batch_size=2, stop=stop)
    assert len(calls) == 1
    assert [r.text for r in translator.translate(lines, stop=lambda: False)] == [
        r.text for r in translator.translate(lines)
    ]
