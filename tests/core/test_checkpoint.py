"""core.checkpoint: exact round trips, and one clear CheckpointError for every way a model dir can be wrong.

No test here unpickles anything but its own control: a pickle planted in the very file the loader
opens would, if executed, create a marker file (test_the_planted_payload_is_live shows it does),
and the loader runs with every unpickling entry point booby-trapped.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from core.checkpoint import FORMAT_VERSION, load_model, save_model
from core.data.tokenizer import Tokenizer
from core.errors import CheckpointError, TTError
from core.model.config import preset
from core.model.transformer import Transformer
from tests.conftest import TINY_TSV


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    text = [side for line in TINY_TSV.read_text(encoding="utf-8").splitlines() for side in line.split("\t")]
    return Tokenizer.train(text, vocab_size=100)


def make_model(tokenizer: Tokenizer, seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", vocab_size=tokenizer.vocab_size, max_len=32, **overrides)).eval()


@pytest.fixture(scope="module")
def good_dir(tmp_path_factory, tokenizer) -> Path:
    return save_model(make_model(tokenizer), tokenizer, tmp_path_factory.mktemp("good") / "model")


@pytest.fixture
def model_dir(tmp_path, good_dir) -> Path:
    """A fresh copy of a valid model dir, for a test to break."""
    return Path(shutil.copytree(good_dir, tmp_path / "model"))


def read(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()


def rewrite(model_dir: Path, *, tensors=None, metadata=None) -> None:
    """Rewrite model.safetensors with changed tensors and/or metadata (a valid safetensors file)."""
    path = model_dir / "model.safetensors"
    old_tensors, old_metadata = read(path)
    new_tensors = old_tensors if tensors is None else tensors
    save_file(new_tensors, str(path), metadata=old_metadata if metadata is None else metadata)


def expect_error(model_dir: Path, *patterns: str) -> str:
    with pytest.raises(CheckpointError) as info:
        load_model(model_dir)
    message = str(info.value)
    assert "\n" not in message, "the CLI prints errors on one line"
    for pattern in patterns:
        assert pattern in message, f"{pattern!r} not in {message!r}"
    assert isinstance(info.value, TTError)
    return message


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize(
    "overrides",
    [{}, {"positional": "learned", "norm": "pre", "share_embeddings": False}],
    ids=["paper", "learned-pre-unshared"],
)
def test_fp32_round_trip_is_exact(tmp_path, tokenizer, overrides):
    model = make_model(tokenizer, **overrides)
    save_model(model, tokenizer, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert loaded.cfg == model.cfg
    assert not loaded.model.training
    assert loaded.tokenizer.proto == tokenizer.proto
    assert loaded.metadata["format"] == "tt.model" and loaded.metadata["format_version"] == str(FORMAT_VERSION)
    want, got = model.state_dict(), loaded.model.state_dict()
    assert want.keys() == got.keys()
    for name in want:
        assert torch.equal(want[name], got[name]), name
    if model.cfg.share_embeddings:  # the tie survives loading: one matrix, not three copies
        assert loaded.model.generator.weight is loaded.model.src_embed.table.weight
    src, tgt = torch.tensor([[5, 6, 7, 3]]), torch.tensor([[2, 8, 9]])
    assert torch.equal(model(src, tgt), loaded.model(src, tgt))


@pytest.mark.parametrize("breaks", [False, True], ids=["loaded", "refused"])
def test_models_built_after_a_load_are_randomly_initialised(model_dir, tokenizer, breaks):
    """load_model builds its model without the random init (every tensor is then loaded): the init
    must be back for any model built afterwards, after a refused load as well, and the load must not
    move the caller's random numbers."""
    if breaks:
        tensors, _ = read(model_dir / "model.safetensors")
        rewrite(model_dir, tensors={k: v for k, v in tensors.items() if "generator" not in k and "ffn" not in k})
    before = make_model(tokenizer, seed=3).state_dict()
    torch.manual_seed(11)
    state = torch.get_rng_state()
    if breaks:
        with pytest.raises(CheckpointError):
            load_model(model_dir)
    else:
        load_model(model_dir)
    assert torch.equal(torch.get_rng_state(), state)
    after = make_model(tokenizer, seed=3).state_dict()
    for name in before:
        assert torch.equal(before[name], after[name]), name
    assert after["encoder_layers.0.ffn.w_1.weight"].std() > 0.01


def test_fp16_saving_gives_fp16_rounded_weights(tmp_path, tokenizer):
    model = make_model(tokenizer)
    save_model(model, tokenizer, tmp_path / "fp32")
    save_model(model, tokenizer, tmp_path / "fp16", dtype=torch.float16)
    tensors, _ = read(tmp_path / "fp16" / "model.safetensors")
    assert {t.dtype for t in tensors.values()} == {torch.float16}
    loaded = load_model(tmp_path / "fp16")
    for name, tensor in model.state_dict().items():
        got = loaded.model.state_dict()[name]
        assert got.dtype == torch.float32  # fp32 in memory
        assert torch.equal(got, tensor.half().float()), name
    size = lambda d: (tmp_path / d / "model.safetensors").stat().st_size  # noqa: E731
    assert size("fp16") < 0.6 * size("fp32")


def test_extra_metadata_is_kept(tmp_path, tokenizer):
    save_model(make_model(tokenizer), tokenizer, tmp_path / "m", extra_metadata={"step": "1200"})
    assert load_model(tmp_path / "m").metadata["step"] == "1200"


def test_saving_leaves_no_temporary_files(tmp_path, tokenizer):
    save_model(make_model(tokenizer), tokenizer, tmp_path / "m")
    save_model(make_model(tokenizer, seed=1), tokenizer, tmp_path / "m")  # overwrite in place
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["model.safetensors", "spm.model"]


def test_default_dir_comes_from_tt_model(monkeypatch, good_dir, tmp_path):
    monkeypatch.setenv("TT_MODEL", str(good_dir))
    assert load_model().path == good_dir
    monkeypatch.setenv("TT_MODEL", str(tmp_path / "nowhere"))
    with pytest.raises(CheckpointError, match="no such model directory"):
        load_model()


# ------------------------------------------------------------------------------ broken model dirs


def test_missing_directory(tmp_path):
    expect_error(tmp_path / "nope", str(tmp_path / "nope"), "no such model directory")


def test_not_a_directory(tmp_path):
    (tmp_path / "file").write_text("hello")
    expect_error(tmp_path / "file", "not a directory")


def test_missing_weights(model_dir):
    (model_dir / "model.safetensors").unlink()
    expect_error(model_dir, "no model.safetensors")


def test_empty_weights(model_dir):
    (model_dir / "model.safetensors").write_bytes(b"")
    expect_error(model_dir, "model.safetensors", "empty")


def test_truncated_weights(model_dir):
    path = model_dir / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    expect_error(model_dir, "model.safetensors", "truncated or corrupt")


def test_truncated_header(model_dir):
    path = model_dir / "model.safetensors"
    path.write_bytes(path.read_bytes()[:40])
    expect_error(model_dir, "model.safetensors", "not a valid safetensors file")


def test_random_bytes(model_dir):
    noise = torch.randint(0, 256, (5000,), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    (model_dir / "model.safetensors").write_bytes(noise.numpy().tobytes())
    expect_error(model_dir, "model.safetensors", "not a valid safetensors file")


def test_weights_that_are_a_directory(model_dir):
    (model_dir / "model.safetensors").unlink()
    (model_dir / "model.safetensors").mkdir()
    expect_error(model_dir, "model.safetensors")


class Planted:
    """Unpickling this object creates `marker`: the proof that someone executed a pickle."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def plant(path: Path, marker: Path, kind: str) -> None:
    """Write a pickle whose loading runs Planted's payload: a torch.save file (zip or legacy) or a bare pickle."""
    if kind == "bare-pickle":
        path.write_bytes(pickle.dumps({"weights": Planted(marker)}))
    else:
        torch.save({"weights": Planted(marker)}, path, _use_new_zipfile_serialization=kind == "torch-zip")


PLANTS = ["torch-zip", "torch-legacy", "bare-pickle"]


@pytest.fixture
def no_unpickling(monkeypatch):
    """Every unpickling entry point raises: a loader that reached one fails the test loudly."""
    import _pickle

    def trap(*args, **kwargs):
        raise AssertionError("the loader tried to unpickle")

    for module in (pickle, _pickle):
        for name in ("load", "loads", "Unpickler"):
            monkeypatch.setattr(module, name, trap)
    monkeypatch.setattr(torch, "load", trap)
    monkeypatch.setattr(torch.serialization, "load", trap)


@pytest.mark.parametrize("kind", PLANTS)
def test_the_planted_payload_is_live(tmp_path, kind):
    """The control: unpickled, each planted file does run its code, so a missing marker below means something."""
    marker = tmp_path / "pwned"
    plant(tmp_path / "planted", marker, kind)
    if kind == "bare-pickle":
        pickle.loads((tmp_path / "planted").read_bytes())
    else:
        torch.load(tmp_path / "planted", weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("kind", PLANTS)
def test_pickle_posing_as_weights_is_refused_not_run(model_dir, tmp_path, kind, no_unpickling):
    # model.safetensors is the file the loader opens first; here it is the pickle.
    marker = tmp_path / "pwned"
    plant(model_dir / "model.safetensors", marker, kind)
    expect_error(model_dir, str(model_dir / "model.safetensors"), "not a valid safetensors file")
    assert not marker.exists()


def test_pickle_posing_as_tokenizer_is_refused_not_run(model_dir, tmp_path, no_unpickling):
    marker = tmp_path / "pwned"
    plant(model_dir / "spm.model", marker, "bare-pickle")
    expect_error(model_dir, "spm.model", "not a valid SentencePiece model")
    assert not marker.exists()


def test_tt_translate_refuses_a_pickle_in_one_line(model_dir, tmp_path, no_unpickling):
    """End to end: the CLI prints the CheckpointError as one line on stderr, exit 1, nothing on stdout."""
    from typer.testing import CliRunner

    from tt_cli.main import app

    marker = tmp_path / "pwned"
    plant(model_dir / "model.safetensors", marker, "torch-zip")
    result = CliRunner().invoke(app, ["translate", "--model", str(model_dir), "Bonjour."])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f"tt: error: {model_dir / 'model.safetensors'}: not a valid safetensors file")
    assert result.stderr.count("\n") == 1
    assert not marker.exists()


def test_loading_never_unpickles(model_dir, tmp_path, no_unpickling):
    """Pickles beside the model (as a trainer might leave) are ignored, and no unpickler is ever called."""
    marker = tmp_path / "pwned"
    for name in ("trainer.pt", "optimizer.bin", "pytorch_model.bin", "README.md"):
        plant(model_dir / name, marker, "torch-zip")
    loaded = load_model(model_dir)
    assert loaded.cfg.vocab_size > 4
    assert not marker.exists()


def test_safetensors_without_tt_metadata(model_dir):
    rewrite(model_dir, metadata={})
    expect_error(model_dir, "not a tt model")
    rewrite(model_dir, metadata={"format": "pt"})
    expect_error(model_dir, "not a tt model")


def test_newer_format_version(model_dir):
    _, metadata = read(model_dir / "model.safetensors")
    rewrite(model_dir, metadata={**metadata, "format_version": str(FORMAT_VERSION + 1)})
    expect_error(model_dir, f"format version {FORMAT_VERSION + 1} is newer", "upgrade tt")


def test_unreadable_format_version(model_dir):
    _, metadata = read(model_dir / "model.safetensors")
    rewrite(model_dir, metadata={**metadata, "format_version": "one"})
    expect_error(model_dir, "bad format_version 'one'")


@pytest.mark.parametrize(
    "config, pattern",
    [
        ("{broken", "not valid JSON"),
        ("", "not valid JSON"),
        ('{"d_model": 30, "h": 4}', "must be divisible by h"),
        ('{"wings": 2}', "unknown model config field"),
    ],
)
def test_bad_config_json(model_dir, config, pattern):
    _, metadata = read(model_dir / "model.safetensors")
    rewrite(model_dir, metadata={**metadata, "config": config})
    expect_error(model_dir, "model.safetensors", pattern)


def test_missing_tensor(model_dir):
    tensors, _ = read(model_dir / "model.safetensors")
    del tensors["decoder_layers.1.ffn.w_2.bias"]
    rewrite(model_dir, tensors=tensors)
    expect_error(model_dir, "missing 1 tensor(s)", "decoder_layers.1.ffn.w_2.bias")


def test_extra_tensor(model_dir):
    tensors, _ = read(model_dir / "model.safetensors")
    tensors["decoder_layers.9.ffn.w_2.bias"] = torch.zeros(3)
    rewrite(model_dir, tensors=tensors)
    expect_error(model_dir, "unexpected 1", "decoder_layers.9.ffn.w_2.bias")


def test_wrong_shape(model_dir):
    tensors, _ = read(model_dir / "model.safetensors")
    tensors["encoder_layers.0.ffn.w_1.weight"] = torch.zeros(65, 32)
    rewrite(model_dir, tensors=tensors)
    expect_error(model_dir, "encoder_layers.0.ffn.w_1.weight", "(65, 32)", "(64, 32)")


def test_integer_tensor_where_weights_belong(model_dir):
    tensors, _ = read(model_dir / "model.safetensors")
    tensors["encoder_layers.0.ffn.w_1.bias"] = torch.zeros(64, dtype=torch.int64)
    rewrite(model_dir, tensors=tensors)
    expect_error(model_dir, "encoder_layers.0.ffn.w_1.bias", "torch.int64", "torch.float32")


def test_missing_tokenizer(model_dir):
    (model_dir / "spm.model").unlink()
    expect_error(model_dir, "spm.model", "not found")


def test_corrupt_tokenizer(model_dir):
    path = model_dir / "spm.model"
    path.write_bytes(path.read_bytes()[:100])
    expect_error(model_dir, "spm.model", "not a valid SentencePiece model")


def test_tokenizer_vocab_size_mismatch(model_dir):
    _, metadata = read(model_dir / "model.safetensors")
    config = json.loads(metadata["config"])
    config["vocab_size"] += 5
    rewrite(model_dir, metadata={**metadata, "config": json.dumps(config)})
    expect_error(model_dir, "spm.model", f"{config['vocab_size'] - 5} pieces", f"built for {config['vocab_size']}")


def test_the_direction_picks_a_shipped_model_and_checks_a_given_one(tmp_path):
    """--from/--to choose among the shipped models (either may be left out); with --model they check it."""
    import json

    from core.checkpoint import model_for, shipped_models
    from core.errors import ConfigError
    from weights import DIR

    shipped = shipped_models()
    assert shipped[("fr", "en")] == DIR
    assert model_for(None) is None and model_for(None, "fr", "en") == DIR and model_for(None, None, "en") == DIR
    with pytest.raises(ConfigError, match="no de→en model is shipped"):
        model_for(None, "de", "en")
    reverse = tmp_path / "enfr"
    reverse.mkdir()
    (reverse / "card.json").write_text(
        json.dumps({"fine_tune": {"train_config": {"src_lang": "en", "tgt_lang": "fr"}}})
    )
    assert model_for(reverse, "en", "fr") == reverse and model_for(reverse, None, "fr") == reverse
    with pytest.raises(ConfigError, match="an en→fr model, not fr→en"):
        model_for(reverse, "fr", "en")


def test_a_header_with_non_text_metadata_gives_only_its_text(tmp_path):
    """The torch-free header reader (core.card) keeps what safetensors calls metadata, text values only: a
    hand-made header with a number where the placeholders' list goes reads as no placeholders, not a crash."""
    from core.card import weights_metadata
    from core.checkpoint import PLACEHOLDER_KEY, placeholder_tokens

    header = json.dumps({"__metadata__": {"languages": "en-fr", PLACEHOLDER_KEY: 5}}).encode()
    (tmp_path / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    assert weights_metadata(tmp_path / "model.safetensors") == {"languages": "en-fr"}
    assert placeholder_tokens(tmp_path) == ()
