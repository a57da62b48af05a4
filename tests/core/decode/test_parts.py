"""A batch searched in parts at once (core.decode.parts): every n-th row to part n, each part on a thread of its own
with one of torch's threads, the rows back in order, the same hypotheses as one search of the batch; a batch is split
where other processes crowd the cores, and only there."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
import torch

from core.decode import parts
from core.decode.beam import beam_search
from core.decode.parts import in_parts, parts_for
from core.decode.search import greedy, pad_batch, splittable
from core.errors import Stopped


@pytest.fixture
def two_threads(monkeypatch):
    """torch at two threads for the test (the suite runs at one), and back; every batch split whatever the machine
    (CROWDED_CORES below 0: the rule's own verdict has tests of its own below)."""
    monkeypatch.setattr(parts, "CROWDED_CORES", -1.0)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def sources(loaded, n: int) -> torch.Tensor:
    tok, cfg = loaded.tokenizer, loaded.cfg
    lines = ["Je suis étudiant.", "Le chat est noir.", "Il fait beau aujourd'hui.", "Nous avons mangé une pomme."]
    ids = [tok.encode(lines[i % len(lines)])[: 3 + i % 5] + [cfg.eos_id] for i in range(n)]
    return pad_batch(ids, cfg.pad_id)


def test_each_part_gets_every_nth_row_on_a_thread_of_its_own_and_the_rows_come_back_in_order(two_threads):
    src = pad_batch([[5] * (1 + i % 7) + [2] for i in range(40)], 0)  # rows of 2 to 8 pieces, 0 the padding
    seen = []

    together = threading.Barrier(2, timeout=30)

    def search(rows: torch.Tensor) -> list:
        seen.append((threading.current_thread().name, torch.get_num_threads(), rows))
        together.wait()  # both parts at once, or the barrier breaks
        return [int((row != 0).sum()) for row in rows]  # each row's length, from the part's own rows

    out = in_parts(search, src, pad_id=0)
    assert out == [int((row != 0).sum()) for row in src]  # the whole batch's order
    assert len(seen) == 2 and all(name.startswith("tt-part") for name, _, _ in seen)
    assert seen[0][0] != seen[1][0]  # two threads
    assert all(count == 1 for _, count, _ in seen)  # one of torch's threads each
    given = sorted(rows.tolist() for _, _, rows in seen)
    wanted = sorted(src[k::2][:, : int((src[k::2] != 0).sum(1).max())].tolist() for k in range(2))
    assert given == wanted  # rows 0, 2, 4, … and 1, 3, 5, …, each part as wide as its longest row
    assert all(bool((rows[:, -1] != 0).any()) for _, _, rows in seen)


def test_a_batch_too_small_or_one_thread_or_inside_a_part_is_one_search(two_threads):
    assert parts_for(2 * parts.MIN_PART_ROWS) == 2
    assert parts_for(2 * parts.MIN_PART_ROWS - 1) == 1
    torch.set_num_threads(1)
    assert parts_for(64) == 1
    torch.set_num_threads(2)
    inside = in_parts(lambda rows: [parts_for(64)] * rows.size(0), torch.ones(32, 3, dtype=torch.long), pad_id=0)
    assert inside == [1] * 32


def test_threads_made_after_the_parts_start_from_the_process_count(two_threads):
    in_parts(lambda rows: [0] * rows.size(0), torch.ones(32, 3, dtype=torch.long), pad_id=0)
    counts = []
    thread = threading.Thread(target=lambda: counts.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    assert counts == [2] and torch.get_num_threads() == 2


def test_a_failing_part_fails_the_search_once_every_part_has_ended(two_threads):
    ended = []

    def search(rows: torch.Tensor) -> list:
        if int(rows[0, 0]) == 1:
            raise Stopped("asked to stop")
        ended.append(rows.size(0))
        return [0] * rows.size(0)

    src = torch.arange(1, 33).unsqueeze(1)  # part 0 starts with row 1
    with pytest.raises(Stopped):
        in_parts(search, src, pad_id=0)
    assert ended == [16]


@pytest.mark.parametrize(
    "search",
    [
        lambda m, src: [(h.tokens, h.token_logprobs) for h in greedy(m, src)],
        lambda m, src: [[(h.tokens, h.score) for h in hyps] for hyps in beam_search(m, src, beam_size=3, n_best=3)],
    ],
    ids=["greedy", "beam"],
)
def test_a_search_in_parts_finds_what_one_search_of_the_batch_finds(tiny_loaded, two_threads, monkeypatch, search):
    model, src = tiny_loaded.model, sources(tiny_loaded, 40)
    assert splittable(model) and parts_for(src.size(0)) == 2
    in_two = search(model, src)
    monkeypatch.setattr(parts, "MIN_PART_ROWS", 10**6)  # one search of the whole batch
    whole = search(model, src)
    assert [tokens for tokens, _ in flat(in_two)] == [tokens for tokens, _ in flat(whole)]
    for (_, a), (_, b) in zip(flat(in_two), flat(whole)):
        assert a == pytest.approx(b, abs=1e-4)


def flat(found: list) -> list:
    return [h for item in found for h in (item if isinstance(item, list) else [item])]


def test_a_model_with_hooks_is_searched_whole(tiny_loaded, two_threads):
    model = tiny_loaded.model
    handle = model.decoder_layers[0].register_forward_hook(lambda *args: None)
    try:
        assert not splittable(model)
    finally:
        handle.remove()
    assert splittable(model)


def test_other_processes_keeping_the_cores_busy_are_seen_and_this_one_is_not():
    others = parts._Others()
    others.look()  # the window starts
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(1.0)
        assert others.look() >= 1.0  # two spinning processes on the machine's cores: at least one core's worth
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    others.look()
    end = time.process_time() + 0.5
    while time.process_time() < end:  # this process's own work is not others'
        pass
    assert others.look() < 0.5 + (len(__import__("os").sched_getaffinity(0)) - 1)


def test_a_batch_is_split_only_where_the_cores_are_crowded(monkeypatch):
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        where = []

        def search(rows: torch.Tensor) -> list:
            where.append(threading.current_thread().name)
            return [0] * rows.size(0)

        monkeypatch.setattr(parts, "CROWDED_CORES", 1e9)  # never crowded: one search, on the calling thread
        in_parts(search, torch.ones(64, 3, dtype=torch.long), pad_id=0)
        assert where == [threading.current_thread().name]
        monkeypatch.setattr(parts, "CROWDED_CORES", -1.0)  # always crowded: two parts
        where.clear()
        in_parts(search, torch.ones(64, 3, dtype=torch.long), pad_id=0)
        assert len(where) == 2 and all(name.startswith("tt-part") for name in where)
    finally:
        torch.set_num_threads(before)
