"""core.model.config: the presets of issue #2 and validation errors a person can act on."""

from __future__ import annotations

import dataclasses

import pytest

from core.errors import ConfigError, TTError
from core.model.config import PRESETS, ModelConfig, preset


@pytest.mark.parametrize(
    "name, d_model, h, layers, d_ff, dropout",
    [
        ("small", 256, 4, 3, 1024, 0.1),
        ("base", 512, 8, 6, 2048, 0.1),  # paper Table 3, base
        ("big", 1024, 16, 6, 4096, 0.3),  # paper Table 3, big (P_drop 0.3 for EN-DE)
    ],
)
def test_presets_match_the_issue(name, d_model, h, layers, d_ff, dropout):
    cfg = PRESETS[name]
    assert (cfg.d_model, cfg.h, cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.d_ff, cfg.dropout) == (
        d_model,
        h,
        layers,
        layers,
        d_ff,
        dropout,
    )
    assert cfg.d_k == 64  # d_k = d_v = 64 in every preset above (§3.2.2)
    assert cfg.norm == "post" and cfg.positional == "sinusoidal" and cfg.share_embeddings


@pytest.mark.parametrize(
    "name, d_model, h, encoder, decoder, d_ff",
    [("mini", 128, 4, 3, 3, 512), ("student", 256, 4, 6, 2, 1024)],  # README's first run; docs/model.md's choice
)
def test_the_cpu_presets_have_their_documented_shapes(name, d_model, h, encoder, decoder, d_ff):
    cfg = PRESETS[name]
    assert (cfg.d_model, cfg.h, cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.d_ff) == (
        d_model,
        h,
        encoder,
        decoder,
        d_ff,
    )
    assert cfg.dropout == 0.0  # both are trained for less than an epoch of their data, where dropout only slows


def test_tiny_preset_is_small_enough_for_tests():
    cfg = PRESETS["tiny"]
    assert cfg.d_model <= 64 and cfg.n_encoder_layers <= 2 and cfg.n_decoder_layers <= 2
    assert cfg.dropout == 0.0  # deterministic tests


def test_preset_overrides_and_ignores_none():
    cfg = preset("base", vocab_size=8000, dropout=None)
    assert cfg.vocab_size == 8000 and cfg.dropout == 0.1
    assert PRESETS["base"].vocab_size == 37000  # the preset itself is untouched


def test_unknown_preset_and_option_name_the_choices():
    with pytest.raises(ConfigError, match="unknown preset 'huge'.*tiny, small, base, big"):
        preset("huge")
    with pytest.raises(ConfigError, match="unknown model option.*heads"):
        preset("small", heads=8)


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        PRESETS["small"].d_model = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"d_model": 30, "h": 4}, r"d_model \(30\) must be divisible by h \(4\)"),
        ({"h": 0}, "h must be a positive integer, got 0"),
        ({"n_encoder_layers": -1}, "n_encoder_layers must be a positive integer"),
        ({"d_ff": 2.5}, "d_ff must be a positive integer, got 2.5"),
        ({"max_len": True}, "max_len must be a positive integer, got True"),
        ({"dropout": 1.0}, r"dropout must be in \[0, 1\), got 1.0"),
        ({"attention_dropout": -0.1}, "attention_dropout must be in"),
        ({"dropout": float("nan")}, "dropout must be in"),
        ({"positional": "rotary"}, "positional must be 'sinusoidal' or 'learned', got 'rotary'"),
        ({"norm": "sandwich"}, "norm must be 'post' or 'pre', got 'sandwich'"),
        ({"vocab_size": 3}, r"vocab_size \(3\) is smaller than the special token ids"),
        ({"share_embeddings": "false"}, "share_embeddings must be true or false, got 'false'"),
        ({"pad_id": -1}, "special token ids .* must be non-negative integers"),
        ({"pad_id": "x"}, "special token ids .* must be non-negative integers"),
        ({"unk_id": 0}, "special token ids .* must be distinct"),
    ],
)
def test_validation_errors_are_clear(changes, message):
    with pytest.raises(ConfigError, match=message):
        ModelConfig(**changes)
    with pytest.raises(ConfigError, match=message):  # and through replace(), as the CLI builds configs
        PRESETS["tiny"].replace(**changes)


def test_all_problems_are_reported_at_once():
    with pytest.raises(ConfigError) as info:
        ModelConfig(h=0, norm="sandwich", dropout=2.0)
    text = str(info.value)
    assert "h must be" in text and "norm must be" in text and "dropout must be" in text
    assert isinstance(info.value, TTError)  # so the CLI prints one line, not a traceback


def test_json_round_trip():
    cfg = preset("small", positional="learned", norm="pre", share_embeddings=False, max_len=128)
    assert ModelConfig.from_json(cfg.to_json()) == cfg
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ('{"d_model": 256, "colour": "blue"}', "unknown model config field.*colour"),
        ('{"d_model": null}', "d_model must be a positive integer, got None"),
        ('{"h": "4"}', "h must be a positive integer, got '4'"),
    ],
)
def test_bad_config_json_is_a_config_error(text, message):
    with pytest.raises(ConfigError, match=message):
        ModelConfig.from_json(text)
