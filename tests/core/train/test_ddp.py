"""DDP on CPU: two real gloo processes train one run; their weights must stay identical."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
import torch

from tests.conftest import TINY_TSV


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _trainer(rank: int, world: int, port: int, out: str):
    # What torchrun would set for each process.
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank)
    )
    torch.set_num_threads(1)
    from core.train.config import TrainConfig
    from core.train.trainer import Trainer

    cfg = TrainConfig(
        data=[str(TINY_TSV)],
        out=out,
        preset="tiny",
        vocab_size=120,
        warmup=20,
        max_tokens=128,
        max_steps=8,
        valid_every=4,
        bleu_sample=4,
        save_every=4,
        log_every=1,
        device="cpu",
        seed=5,
        model_overrides={"dropout": 0.1, "max_len": 64},
    )
    return Trainer(cfg)


def _worker(rank: int, world: int, port: int, out: str, results: str) -> None:
    from safetensors.torch import save_file

    from core.checkpoint import model_tensors

    trainer = _trainer(rank, world, port, out)
    result = trainer.run()
    own_cpu = time.process_time() - trainer.cpu_start  # this rank's CPU seconds in the loop
    save_file(model_tensors(trainer.model), str(Path(results) / f"rank{rank}.safetensors"))
    # The input tokens (source + decoder input, no padding) of this rank's batch at each of the 8
    # steps: epochs follow one another, as in the trainer.
    from core.data.readers import collate

    batches, epoch = [], 0
    while len(batches) < trainer.cfg.max_steps:
        batches += trainer.batches_for_epoch(epoch)
        epoch += 1
    pad = trainer.model_cfg.pad_id
    tokens = []
    for batch in batches[: trainer.cfg.max_steps]:
        src, tgt_in, _ = collate([trainer.data.train[i] for i in batch], pad)
        tokens.append(int((src != pad).sum()) + int((tgt_in != pad).sum()))
    (Path(results) / f"rank{rank}.json").write_text(
        json.dumps({"result": result, "batches": trainer.batches_for_epoch(0), "tokens": tokens, "own_cpu": own_cpu})
    )


@pytest.mark.slow
def test_two_gloo_ranks_stay_in_lockstep(tmp_path):
    import torch.multiprocessing as mp
    from safetensors.torch import load_file

    out, results = tmp_path / "run", tmp_path / "results"
    results.mkdir()
    mp.spawn(_worker, args=(2, free_port(), str(out), str(results)), nprocs=2, join=True)

    w0, w1 = (load_file(str(results / f"rank{r}.safetensors")) for r in (0, 1))
    assert w0.keys() == w1.keys()
    assert all(torch.equal(w0[k], w1[k]) for k in w0)  # bit-identical after 8 steps

    r0, r1 = (json.loads((results / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["result"]["step"] == r1["result"]["step"] == 8
    # Each rank its own shard: disjoint batches, the same count.
    assert len(r0["batches"]) == len(r1["batches"])
    assert not {i for b in r0["batches"] for i in b} & {i for b in r1["batches"] for i in b}

    # Only rank 0 writes: one log, whose token counts cover both ranks, and checkpoints that hold the shared weights.
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["event"] for r in records].count("start") == 1
    assert next(r for r in records if r["event"] == "start")["world"] == 2
    assert [r["step"] for r in records if r["event"] == "valid"] == [4, 8]
    steps = [r for r in records if r["event"] == "step"]
    assert [r["step"] for r in steps] == list(range(1, 9))
    assert [r["tokens"] for r in steps] == [a + b for a, b in zip(r0["tokens"], r1["tokens"])]
    # The run's CPU clock sums both ranks (learning curves per CPU-hour, --max-cpu-time), not rank 0's
    # own seconds: the last checkpoint holds rank 0's and (up to the last step) rank 1's.
    last = json.loads((out / "checkpoints" / "step_00000008" / "trainer.json").read_text())
    assert r0["own_cpu"] + 0.5 * r1["own_cpu"] < last["cpu_time"] <= r0["own_cpu"] + r1["own_cpu"]
    saved = load_file(str(out / "checkpoints" / "step_00000008" / "model.safetensors"))
    assert all(torch.equal(saved[k], w0[k]) for k in saved)
    init = load_file(str(out / "checkpoints" / "step_00000004" / "model.safetensors"))
    assert not all(torch.equal(saved[k], init[k]) for k in saved)  # training moved them


def _refused_worker(rank: int, world: int, port: int, out: str, results: str) -> None:
    from core.errors import ConfigError

    try:
        _trainer(rank, world, port, out).run()
    except ConfigError as exc:
        (Path(results) / f"rank{rank}.txt").write_text(str(exc))


@pytest.mark.slow
def test_a_locked_run_directory_stops_every_rank(tmp_path):
    """Only rank 0 takes the lock; when it is refused the other ranks stop too, instead of waiting."""
    import torch.multiprocessing as mp

    from core.train.lock import lock_run_dir

    out, results = tmp_path / "run", tmp_path / "results"
    results.mkdir()
    held = lock_run_dir(out)  # another run, here this test's process, holds it
    try:
        mp.spawn(_refused_worker, args=(2, free_port(), str(out), str(results)), nprocs=2, join=True)
    finally:
        held.release()
    assert f"is in use by another training run (pid {os.getpid()} on" in (results / "rank0.txt").read_text()
    assert (results / "rank1.txt").read_text() == f"{out} is in use by another training run (see rank 0's error)"
    assert not (out / "metrics.jsonl").exists()
