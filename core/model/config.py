"""Model configuration: one frozen dataclass, named presets that read like the paper's Table 3."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

from core.errors import ConfigError

# Special token ids, fixed so every tokenizer and model agree (SentencePiece is trained with them).
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 8000  # shared source/target SentencePiece vocabulary
    d_model: int = 256  # width of every residual stream vector
    h: int = 4  # attention heads; d_k = d_v = d_model / h
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    d_ff: int = 1024  # inner width of the position-wise feed-forward network
    dropout: float = 0.1  # P_drop on sub-layer outputs and on embeddings + positions (§5.4)
    attention_dropout: float = 0.0  # dropout on the attention weights themselves
    max_len: int = 256  # longest sequence (in pieces) the positional table covers
    positional: Literal["sinusoidal", "learned"] = "sinusoidal"
    norm: Literal["post", "pre"] = "post"  # post = the paper's Add & Norm: LayerNorm(x + Sublayer(x))
    share_embeddings: bool = True  # one matrix for source, target and the output projection (§3.4)
    pad_id: int = PAD_ID
    unk_id: int = UNK_ID
    bos_id: int = BOS_ID
    eos_id: int = EOS_ID

    def __post_init__(self) -> None:  # noqa: C901 - one independent check per field, each a line and a message
        problems = []
        for name in ("vocab_size", "d_model", "h", "n_encoder_layers", "n_decoder_layers", "d_ff", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        if not problems and self.d_model % self.h:
            problems.append(f"d_model ({self.d_model}) must be divisible by h ({self.h})")
        for name in ("dropout", "attention_dropout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                problems.append(f"{name} must be in [0, 1), got {value!r}")
        if self.positional not in ("sinusoidal", "learned"):
            problems.append(f"positional must be 'sinusoidal' or 'learned', got {self.positional!r}")
        if self.norm not in ("post", "pre"):
            problems.append(f"norm must be 'post' or 'pre', got {self.norm!r}")
        # A JSON "false" (a string) would otherwise be truthy and silently tie the embeddings.
        if not isinstance(self.share_embeddings, bool):
            problems.append(f"share_embeddings must be true or false, got {self.share_embeddings!r}")
        special = (self.pad_id, self.unk_id, self.bos_id, self.eos_id)
        if any(not isinstance(i, int) or isinstance(i, bool) or i < 0 for i in special):
            problems.append(f"special token ids pad/unk/bos/eos must be non-negative integers, got {special}")
        elif len(set(special)) < 4:
            problems.append(f"special token ids pad/unk/bos/eos must be distinct, got {special}")
        elif not problems and self.vocab_size <= max(special):
            problems.append(f"vocab_size ({self.vocab_size}) is smaller than the special token ids")
        if problems:
            raise ConfigError("; ".join(problems))

    @property
    def d_k(self) -> int:
        return self.d_model // self.h

    def replace(self, **changes: Any) -> ModelConfig:
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ConfigError(f"unknown model option(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        if not isinstance(data, dict):
            raise ConfigError(f"model config must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ConfigError(f"unknown model config field(s): {', '.join(sorted(unknown))}")
        try:
            return cls(**data)
        except TypeError as exc:  # e.g. a None where a number belongs
            raise ConfigError(f"bad model config: {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> ModelConfig:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"model config is not valid JSON: {exc}") from None
        return cls.from_dict(data)


# The presets. `base` and `big` are the paper's Table 3 rows; `small` is the CPU default.
PRESETS: dict[str, ModelConfig] = {
    "tiny": ModelConfig(
        vocab_size=64, d_model=32, h=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=64
    ),
    "small": ModelConfig(vocab_size=8000, d_model=256, h=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=1024),
    "base": ModelConfig(
        vocab_size=37000, d_model=512, h=8, n_encoder_layers=6, n_decoder_layers=6, d_ff=2048, dropout=0.1
    ),
    "big": ModelConfig(
        vocab_size=37000, d_model=1024, h=16, n_encoder_layers=6, n_decoder_layers=6, d_ff=4096, dropout=0.3
    ),
    # A first run that translates short sentences after minutes on a laptop CPU (README): narrow, no dropout.
    "mini": ModelConfig(
        vocab_size=4000, d_model=128, h=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=512, dropout=0.0
    ),
    # The model issue's choice for real text on a 2-core CPU (docs/model.md): a deep encoder, a shallow decoder
    # (the decoder runs once per output piece, the encoder once per sentence; Kasai et al. 2021, Firefox's students).
    "student": ModelConfig(
        vocab_size=16000, d_model=256, h=4, n_encoder_layers=6, n_decoder_layers=2, d_ff=1024, dropout=0.0
    ),
}


def preset(name: str, **overrides: Any) -> ModelConfig:
    """A named preset with some fields changed: `preset("base", vocab_size=8000)`."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name].replace(**{k: v for k, v in overrides.items() if v is not None})
