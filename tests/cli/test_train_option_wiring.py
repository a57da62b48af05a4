"""Every `tt train` option reaches the TrainConfig field it names, and only that one.

The real Typer parser reads a command line with one option changed from its default; the command's
own `_config_from_options` builds the config, which must differ from the default one in exactly the
option's field. An option dropped, or copied into the wrong field, fails here without a training run;
what the trainer then does with each field is tested in tests/core/train/ and tests/cli/test_train*.py.
"""

from __future__ import annotations

from dataclasses import asdict
from enum import Enum
from pathlib import Path

import pytest
from typer.main import get_command

from tests.conftest import TINY_TSV
from tt_cli.commands.train import _config_from_options
from tt_cli.main import app

COMMAND = get_command(app).commands["train"]
# Written out here, not imported from the command, so that a wrong entry there fails here.
MODEL_FIELDS = {
    "d_model": "d_model",
    "heads": "h",
    "encoder_layers": "n_encoder_layers",
    "decoder_layers": "n_decoder_layers",
    "d_ff": "d_ff",
    "dropout": "dropout",
    "attention_dropout": "attention_dropout",
    "max_len": "max_len",
    "positional": "positional",
    "norm": "norm",
    "share_embeddings": "share_embeddings",
}
RENAMED = {"skip_bad_lines": "strict", "data_weight": "data_weights"}
NOT_IN_THE_CONFIG = {"resume", "quiet", "plain", "threads"}  # how this process runs, not what the run is
BASE = ["--data", str(TINY_TSV), "--out", "runs/x"]
# Values that need a meaning (the rest are derived from the default): option -> (typed, stored).
SPECIAL = {
    "src_lang": ("de", "de"),
    "tgt_lang": ("fr", "fr"),
    "preset": ("tiny", "tiny"),
    "positional": ("learned", "learned"),
    "norm": ("pre", "pre"),
    "device": ("cpu", "cpu"),
    "max_time": ("1h30m", 5400.0),
    "max_cpu_time": ("90s", 90.0),
    "data_weight": ("2.5", [2.5]),
    "out": ("runs/y", "runs/y"),
    "data": (str(TINY_TSV), [str(TINY_TSV), str(TINY_TSV)]),
}


def config(args: list[str]):
    with COMMAND.make_context("train", [*BASE, *args]) as ctx:
        return asdict(_config_from_options(ctx, dict(ctx.params)))


def change(param) -> tuple[list[str], object]:
    """A command line that moves `param` off its default, and the value the config should then hold."""
    name = param.name
    if name in SPECIAL:
        typed, stored = SPECIAL[name]
        return [param.opts[0], typed], stored
    if param.is_flag:
        on = not param.default
        return [param.opts[0] if on else param.secondary_opts[0]], on if name != "skip_bad_lines" else not on
    default = param.default.value if isinstance(param.default, Enum) else param.default
    annotation = param.type_descriptor.annotation
    if isinstance(param.default, Enum):
        other = next(c.value for c in type(param.default) if c.value != default)
        return [param.opts[0], other], other
    if annotation is int:
        value = 3 if default is None else default + 3
    elif annotation is float:
        value = 0.25 if default is None else default + 0.25
    elif annotation is Path:
        return [param.opts[0], "some/path"], "some/path"
    elif annotation == list[Path]:
        return [param.opts[0], "some/path"], ["some/path"]
    else:
        raise AssertionError(f"no test value for --{name} ({annotation})")
    return [param.opts[0], str(value)], value


PARAMS = [p for p in COMMAND.params if p.name not in NOT_IN_THE_CONFIG]


def test_every_option_is_covered():
    assert {p.name for p in COMMAND.params} - {p.name for p in PARAMS} == NOT_IN_THE_CONFIG


@pytest.mark.parametrize("param", PARAMS, ids=lambda p: p.opts[0])
def test_the_option_sets_its_own_field(param):
    base = config([])
    args, expected = change(param)
    changed = config(args)
    if param.name in MODEL_FIELDS:
        field = MODEL_FIELDS[param.name]
        assert changed["model_overrides"] == {**base["model_overrides"], field: expected}
        assert {k for k in base if base[k] != changed[k]} == {"model_overrides"}
    else:
        field = RENAMED.get(param.name, param.name)
        assert changed[field] == expected
        assert {k for k in base if base[k] != changed[k]} == {field}
