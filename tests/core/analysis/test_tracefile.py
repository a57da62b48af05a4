"""Trace files: a real trace of the tiny model round-trips; every broken file is one clear error."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file
from typer.testing import CliRunner

from core.analysis.attribute import Attribution
from core.analysis.tracefile import FORMAT, load_trace, save_trace
from core.decode.trace import trace_steps
from core.errors import DataError
from tt_cli.main import app


@pytest.fixture(scope="module")
def traced(tiny_loaded):
    tok = tiny_loaded.tokenizer
    out = tok.encode("I am a student.") + [tiny_loaded.cfg.eos_id]
    src = tok.encode("Je suis étudiant.") + [tiny_loaded.cfg.eos_id]
    return trace_steps(tiny_loaded, src, out, text="Je suis étudiant.")


def test_round_trip_keeps_every_tensor_and_candidate(traced, tmp_path):
    source, steps = traced
    t, s = len(steps), len(source.tokens)
    attribution = Attribution("ig", torch.randn(t, s), torch.randn(t, t).tril(), 16, torch.randn(t))
    path = save_trace(tmp_path / "a.trace", source, steps, translation="I am a student.", attribution=attribution)
    back = load_trace(path)
    assert back.translation == "I am a student."
    assert back.source.tokens == source.tokens and back.source.pieces == source.pieces
    for a, b in zip(back.source.encoder_self, source.encoder_self):
        assert torch.equal(a, b)
    assert len(back.steps) == len(steps)
    for a, b in zip(back.steps, steps):
        assert (a.index, a.token, a.piece, a.logprob, a.candidates) == (
            b.index,
            b.token,
            b.piece,
            b.logprob,
            b.candidates,
        )
        for x, y in zip(a.cross + a.decoder_self, b.cross + b.decoder_self):
            assert torch.equal(x, y)
        assert torch.allclose(a.logits, b.logits, atol=1e-2, rtol=1e-3)  # stored as fp16
    assert back.attribution.method == "ig" and back.attribution.ig_steps == 16
    assert torch.equal(back.attribution.source, attribution.source)
    assert torch.equal(back.attribution.target, attribution.target)
    assert torch.allclose(back.attribution.delta, attribution.delta, atol=1e-5)


def _assert_one_line(path, match):
    with pytest.raises(DataError, match=match) as err:
        load_trace(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_truncated_and_garbage_files(traced, tmp_path):
    good = save_trace(tmp_path / "good.trace", *traced)
    data = good.read_bytes()
    cut = tmp_path / "cut.trace"
    cut.write_bytes(data[: len(data) // 2])
    _assert_one_line(cut, "truncated or corrupt")
    tiny = tmp_path / "tiny.trace"
    tiny.write_bytes(b"abc")
    _assert_one_line(tiny, "truncated or empty")
    pickle_like = tmp_path / "pickle.trace"
    pickle_like.write_bytes(b"\x80\x04\x95" + b"\x00" * 64)  # a pickle header: never unpickled
    _assert_one_line(pickle_like, "not a valid safetensors file")
    _assert_one_line(tmp_path / "absent.trace", "not found")


def test_newer_version_other_format_and_bad_contents(traced, tmp_path):
    source, steps = traced
    good = save_trace(tmp_path / "good.trace", source, steps)
    from safetensors import safe_open

    with safe_open(str(good), framework="pt") as f:
        meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open is not a dict

    def write(name, tensors=tensors, **changes):
        path = tmp_path / name
        save_file(tensors, str(path), metadata={**meta, **changes})
        return path

    _assert_one_line(write("newer.trace", format_version="2"), "version 2 is newer")
    _assert_one_line(write("model.trace", format="tt.model"), "not a tt trace file")
    _assert_one_line(write("json.trace", trace="{not json"), "bad trace metadata")
    missing = {k: v for k, v in tensors.items() if k != "cross.0"}
    _assert_one_line(write("missing.trace", tensors=missing), "cross.0 is missing")
    wrong = {**tensors, "cross.1": tensors["cross.1"][:, :1].contiguous()}
    _assert_one_line(write("shape.trace", tensors=wrong), "cross.1 has shape")
    assert meta["format"] == FORMAT


def test_cli_translate_trace_writes_a_loadable_file(tiny_model_dir, tmp_path):
    path = tmp_path / "t.trace"
    result = CliRunner().invoke(
        app, ["translate", "--model", str(tiny_model_dir), "--greedy", "--trace", str(path), "Je suis étudiant."]
    )
    assert result.exit_code == 0, result.stderr
    back = load_trace(path)
    assert back.translation == result.stdout.strip() == "I am a student."
    assert back.steps[-1].piece == "</s>" and back.attribution is None
    two = CliRunner().invoke(app, ["translate", "--model", str(tiny_model_dir), "--trace", str(path), "a", "b"])
    assert two.exit_code == 2 and "exactly one sentence" in two.stderr
    no_json = CliRunner().invoke(app, ["translate", "--attribution", "ig", "a"])
    assert no_json.exit_code == 2 and "--json or --trace" in no_json.stderr
