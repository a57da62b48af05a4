"""The token cache (core/data/cache.py) and what prepare_data does with it."""

import json
import os

import numpy as np
import pytest

from core.data.cache import ConcatExamples, open_shard, write_shard
from core.data.readers import Example
from core.train.config import TrainConfig
from core.train.prepare import prepare_data
from tests.conftest import TINY_TSV


def test_a_shard_round_trips_its_examples(tmp_path):
    src = [[5, 6, 3], [7, 3], [3]]
    tgt = [[2, 9, 3], [2, 8, 8, 3], [2, 3]]
    shard = write_shard(tmp_path / "s", src, tgt, vocab_size=120, corpus="c")
    assert [shard[i] for i in range(3)] == [Example(s, t) for s, t in zip(src, tgt)]
    assert shard[-1] == Example([3], [2, 3]) and shard.meta["corpus"] == "c"
    assert shard.src_lens().tolist() == [3, 2, 1] and shard.tgt_lens().tolist() == [3, 4, 2]
    assert shard.src_ids.dtype == np.uint16
    with pytest.raises(IndexError):
        shard[3]
    big = write_shard(tmp_path / "b", [[70_000]], [[2, 3]], vocab_size=80_000)
    assert big[0].src == [70_000]  # a vocabulary past 16 bits is stored as int32


def test_a_half_written_shard_is_never_opened(tmp_path):
    write_shard(tmp_path / "s", [[4, 3]], [[2, 3]], vocab_size=120)
    (tmp_path / "s" / "src.off").write_bytes(b"\0" * 8)  # offsets that no longer match meta.json
    assert open_shard(tmp_path / "s") is None
    assert open_shard(tmp_path / "missing") is None
    assert [p.name for p in tmp_path.iterdir()] == ["s"]  # no temporary directory left behind


def test_concat_examples_index_across_parts():
    a, b = [Example([4, 3], [2, 3])], [Example([5, 3], [2, 6, 3]), Example([3], [2, 3])]
    joined = ConcatExamples([a, b])
    assert len(joined) == 3 and [joined[i] for i in range(3)] == a + b
    assert joined.tgt_lens().tolist() == [2, 3, 2]


def test_a_second_prepare_opens_the_cache_and_a_changed_setting_does_not(tmp_path):
    run = tmp_path / "run"
    cfg = TrainConfig(data=[str(TINY_TSV)], out=str(run), vocab_size=120)
    first = prepare_data(cfg, run, reuse_tokenizer=False)
    assert first.stats["cached"] is False
    again = prepare_data(cfg, run, reuse_tokenizer=True)
    assert again.stats["cached"] is True
    assert [again.train[i] for i in range(len(again.train))] == [first.train[i] for i in range(len(first.train))]
    assert again.valid == first.valid and again.stats["train_pairs"] == first.stats["train_pairs"]
    cfg.max_pieces = 8  # a different filter: a different shard
    shorter = prepare_data(cfg, run, reuse_tokenizer=True)
    assert shorter.stats["cached"] is False and shorter.stats["train_pairs"] < first.stats["train_pairs"]
    assert len(list((run / "cache").iterdir())) == 2


def test_cache_dir_is_where_the_shards_go(tmp_path):
    cfg = TrainConfig(data=[str(TINY_TSV)], out=str(tmp_path / "run"), vocab_size=120, cache_dir=str(tmp_path / "c"))
    prepare_data(cfg, tmp_path / "run", reuse_tokenizer=False)
    (shard,) = (tmp_path / "c").iterdir()
    meta = json.loads((shard / "meta.json").read_text())
    assert meta["corpus"] == "fixtures/tiny" and meta["counts"]["train_pairs"] > 0
    assert not (tmp_path / "run" / "cache").exists()


def test_the_cache_follows_the_data_s_bytes_not_its_path_or_time(tmp_path):
    """A corpus copied or restored elsewhere (new path, new mtime) opens the same shards; new bytes do not."""
    run, data = tmp_path / "run", tmp_path / "a" / "tiny.tsv"
    data.parent.mkdir()
    data.write_bytes(TINY_TSV.read_bytes())
    cfg = TrainConfig(data=[str(data)], out=str(run), vocab_size=120)
    assert prepare_data(cfg, run, reuse_tokenizer=False).stats["cached"] is False
    moved = tmp_path / "elsewhere" / "a" / "tiny.tsv"  # the corpus keeps its name (a/tiny)
    moved.parent.mkdir(parents=True)
    moved.write_bytes(data.read_bytes())
    os.utime(moved, ns=(1, 1))  # another copy, another time
    cfg.data = [str(moved)]
    assert prepare_data(cfg, run, reuse_tokenizer=True).stats["cached"] is True
    text = moved.read_text(encoding="utf-8")
    first = text.split("\n", 1)[0]
    moved.write_text(text.replace(first, first[::-1], 1), encoding="utf-8")  # same size, other bytes
    os.utime(moved, ns=(1, 1))
    assert prepare_data(cfg, run, reuse_tokenizer=True).stats["cached"] is False
