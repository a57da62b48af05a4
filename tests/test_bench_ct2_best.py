"""bench_ct2 --ct2-best: CTranslate2 timed alone at each of its settings, and tt's engines held to the best.

On one Intel Xeon CTranslate2's two-thread MKL runs were 4x slower than its one thread (bench/README.md, session
37), so a comparison at one setting only can show a lead that is CTranslate2's setting. Run on the shared tiny model,
converted by bench/ct2_convert.py, and the real bench/ct2_standalone.py in processes of its own.
"""

from __future__ import annotations

import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_ct2_best_times_every_setting_and_holds_tt_to_the_fastest(tiny_loaded, tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_ct2
    from ct2_convert import convert

    for q in ("float32", "int8"):
        convert(tiny_loaded, tmp_path / q, None if q == "float32" else q)
    spec = bench_ct2.decoding_spec(tiny_loaded)
    sentences = ["Je suis étudiant.", "Il fait froid.", "Où est la gare ?"]
    batches = [[tiny_loaded.tokenizer.sp.encode(s)] for s in sentences]
    batches.append([tiny_loaded.tokenizer.sp.encode(s) for s in sentences])  # a batch the workers split
    jobs = bench_ct2.write_jobs(tmp_path, spec, "greedy", batches, [32] * len(batches))

    best = bench_ct2.ct2_best(tmp_path, jobs, threads=2, rounds=1)

    for q in ("float32", "int8"):
        # each setting ran, in a process that saw it (the record is the worker's own)
        settings = sorted((r["threads"], r["mkl"], r["workers"]) for r in best[q])
        # one thread, two, and two workers of one thread each (a batch's parts at once, as tt does)
        assert settings == [(1, "0", 1), (1, "0", 2), (1, "1", 1), (1, "1", 2), (2, "0", 1), (2, "1", 1)]
        rates = [r["rate"] for r in best[q]]
        assert all(r > 0 for r in rates) and rates[0] == max(rates)
        assert all(r["sentences"] == 2 * len(sentences) for r in best[q])

    results = {"tt fp32 unpacked": (0.5, 0, []), "tt int8": (0.25, 0, [])}
    lines = bench_ct2.best_lines(best, results, len(sentences))
    assert "2 workers × 1 thread, MKL" in lines[0]
    top_f, top_i = best["float32"][0]["rate"], best["int8"][0]["rate"]
    assert "tt fp32 unpacked 6.0 sent/s / CT2 float32 at its best" in lines[2]
    assert lines[2].endswith(f"= {6.0 / top_f:.2f}x")
    assert "tt int8 12.0 sent/s / CT2 int8 at its best" in lines[3] and lines[3].endswith(f"= {12.0 / top_i:.2f}x")


def test_tt_one_thread_engines_decode_on_one_thread_beside_the_others(tiny_model_dir, tmp_path):
    """bench_ct2 --tt-one-thread: an engine named "…, 1 thread" is a worker that decodes on one thread (its own
    word, from torch), the others on --threads; both give the same outputs."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_ct2

    assert bench_ct2.engine_setting("tt int8, 1 thread", 2) == ("int8", 1)
    assert bench_ct2.engine_setting("tt fp32 unpacked", 2) == ("fp32 unpacked", 2)
    assert bench_ct2.engine_setting("CT2 float32", 2) == ("float32", 2)
    assert bench_ct2.engine_names(False, "int8", 2) == [
        "tt fp32 unpacked",
        "tt int8",
        "tt fp32 unpacked, 1 thread",
        "tt int8, 1 thread",
        "CT2 float32",
        "CT2 int8",
    ]
    assert bench_ct2.engine_names(True, "none", 1) == ["tt fp32 unpacked", "tt fp32", "CT2 float32", "CT2 int8"]
    names = ["tt fp32 unpacked", "tt fp32 unpacked" + bench_ct2.ONE_THREAD]
    engines = bench_ct2.Engines(names, tiny_model_dir, tmp_path, tmp_path / "spec.json", 2)
    try:
        assert engines.threads == {names[0]: 2, names[1]: 1}
        outs = [engines.call(name, "greedy", [[5, 6, 7, 3]], 12)[2] for name in names]
        assert outs[0] == outs[1] and outs[0][0]
    finally:
        engines.close()


def test_torch_step_engines_decode_one_sentence_op_by_op(tiny_model_dir, tmp_path):
    """A mode ending in -torch-step is that mode with core/model/native's C step off (TT_NATIVE=0 in its worker,
    the worker's own word): the same outputs, one sentence's steps through torch."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_ct2

    names = ["tt fp32 unpacked", "tt fp32 unpacked-torch-step"]
    engines = bench_ct2.Engines(names, tiny_model_dir, tmp_path, tmp_path / "spec.json", 1)
    try:
        assert engines.ready[names[0]]["step"] == "C" and engines.ready[names[1]]["step"] == "torch"
        outs = [engines.call(name, "greedy", [[5, 6, 7, 3]], 12)[2] for name in names]
        assert outs[0] == outs[1] and outs[0][0]
    finally:
        engines.close()
