"""The model directory: what `tt train` writes, `weights/` ships, and translate/inspect load.

    model.safetensors   weights; metadata holds the format name and version and the ModelConfig JSON
    spm.model           the SentencePiece model
    README.md           the model card (optional)

No pickles anywhere: safetensors holds only tensors and string metadata. Loading checks every
name and shape and turns each way a file can be wrong into one clear CheckpointError.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from core.card import default_model_dir, model_languages, weights_metadata
from core.data.tokenizer import Tokenizer
from core.errors import CheckpointError, ConfigError, TokenizerError, TTError
from core.files import atomic_path, atomic_write_bytes, make_dir
from core.model.config import ModelConfig
from core.version import __version__

FORMAT = "tt.model"
FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "spm.model"


def model_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with tied weights stored once (safetensors refuses shared storage)."""
    seen: dict[int, str] = {}
    tensors = {}
    for name, tensor in model.state_dict().items():
        key = tensor.data_ptr()
        if key in seen:
            continue
        seen[key] = name
        tensors[name] = tensor.detach().contiguous()
    return tensors


def save_model(
    model: torch.nn.Module,
    tokenizer: Tokenizer,
    directory: str | Path,
    *,
    dtype: torch.dtype = torch.float32,
    extra_metadata: dict[str, str] | None = None,
) -> Path:
    """Write the model directory; each file atomically. fp16 halves the size for shipping."""
    from safetensors.torch import save_file

    directory = make_dir(directory)
    cfg: ModelConfig = model.cfg
    tensors = {
        name: t.to("cpu", dtype if t.is_floating_point() else t.dtype) for name, t in model_tensors(model).items()
    }
    metadata = {"format": FORMAT, "format_version": str(FORMAT_VERSION), "config": cfg.to_json()}
    metadata["tt_version"] = __version__
    metadata.update(extra_metadata or {})
    with atomic_path(directory / WEIGHTS_FILE) as tmp:
        save_file(tensors, str(tmp), metadata=metadata)
    atomic_write_bytes(directory / TOKENIZER_FILE, tokenizer.proto)
    return directory


def read_weights(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Tensors and metadata of a safetensors file, with every failure as a CheckpointError."""
    from safetensors import SafetensorError, safe_open

    if not path.exists():
        raise CheckpointError(f"{path}: not found")
    if path.stat().st_size < 8:
        raise CheckpointError(f"{path}: truncated or empty ({path.stat().st_size} bytes), not a safetensors file")
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}
    except SafetensorError as exc:
        raise CheckpointError(f"{path}: not a valid safetensors file (truncated or corrupt: {exc})") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc.strerror})") from None
    return tensors, metadata


def check_format(
    path: Path, metadata: dict[str, str], *, fmt: str, newest: int, what: str, version_label: str, error: type[TTError]
) -> int:
    """The file's format version, after checking its safetensors metadata names `fmt` at a version
    this tt reads (models and trace files share the rule); `error` is raised otherwise."""
    if metadata.get("format") != fmt:
        raise error(f"{path}: not a {what} (safetensors metadata has no format={fmt!r})")
    try:
        version = int(metadata.get("format_version", ""))
    except ValueError:
        raise error(f"{path}: bad format_version {metadata.get('format_version')!r}") from None
    if version > newest:
        raise error(f"{path}: {version_label} {version} is newer than this tt reads ({newest}); upgrade tt")
    return version


def config_from_metadata(path: Path, metadata: dict[str, str]) -> ModelConfig:
    check_format(
        path,
        metadata,
        fmt=FORMAT,
        newest=FORMAT_VERSION,
        what="tt model",
        version_label="format version",
        error=CheckpointError,
    )
    try:
        return ModelConfig.from_json(metadata.get("config", ""))
    except ConfigError as exc:
        raise CheckpointError(f"{path}: {exc}") from None


def load_state(model: torch.nn.Module, tensors: dict[str, torch.Tensor], path: Path) -> None:
    """Copy `tensors` into `model`, after checking that names and shapes match exactly."""
    expected = model_tensors(model)
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(
                f"missing {len(missing)} tensor(s) ({', '.join(missing[:3])}{'…' if len(missing) > 3 else ''})"
            )
        if unexpected:
            parts.append(
                f"unexpected {len(unexpected)} ({', '.join(unexpected[:3])}{'…' if len(unexpected) > 3 else ''})"
            )
        raise CheckpointError(f"{path}: weights do not match the config: {'; '.join(parts)}")
    for name, want in expected.items():
        if tuple(tensors[name].shape) != tuple(want.shape):
            raise CheckpointError(
                f"{path}: tensor {name} has shape {tuple(tensors[name].shape)}, the config needs {tuple(want.shape)}"
            )
        if tensors[name].is_floating_point() != want.is_floating_point():
            raise CheckpointError(f"{path}: tensor {name} is {tensors[name].dtype}, the model needs {want.dtype}")
    with torch.no_grad():
        for name, want in expected.items():
            want.copy_(tensors[name])


# The torch.nn.init functions a model's modules call while they are built (nn.Linear, nn.Embedding,
# nn.LayerNorm, Transformer._init_weights).
_INIT_FUNCTIONS = (
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
)
_init_lock = threading.Lock()


def _as_allocated(tensor: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    return tensor


@contextmanager
def _without_random_init() -> Iterator[None]:
    """Modules built inside keep their parameters as allocated, uninitialised: for a model whose every
    tensor `load_state` then overwrites (it checks that the file has each one). torch.nn.init's functions
    are swapped for the duration, as transformers' `no_init_weights` does, so a module another thread
    built meanwhile would be left uninitialised too: tt builds a model on one thread at a time, and the
    lock keeps two loads from restoring each other's swap."""
    with _init_lock:
        saved = {name: getattr(torch.nn.init, name) for name in _INIT_FUNCTIONS}
        try:
            for name in saved:
                setattr(torch.nn.init, name, _as_allocated)
            yield
        finally:
            for name, fn in saved.items():
                setattr(torch.nn.init, name, fn)


def shipped_models() -> dict[tuple[str, str], Path]:
    """Every shipped direction, (source, target) → its directory: weights/ itself (fr→en) and each model folder
    inside it (weights/en-fr)."""
    from weights import DIR

    found: dict[tuple[str, str], Path] = {}
    for directory in [DIR, *sorted(p for p in DIR.iterdir() if p.is_dir())]:
        if (directory / WEIGHTS_FILE).is_file():
            found.setdefault(model_languages(directory), directory)
    return found


def arrow(pair: tuple[str, str]) -> str:
    return f"{pair[0]}→{pair[1]}"


def model_for(model: str | Path | None, source: str | None = None, target: str | None = None) -> Path | None:
    """The model directory a command runs on, given --model and the direction (--from/--to, either may be left
    out): --model as given (its languages must be the direction asked, where one is); with a direction, the
    shipped model of that direction; with neither, None (the default: $TT_MODEL, else the shipped fr→en)."""
    if source is None and target is None:
        return None if model is None else Path(model)
    if model is not None:
        pair = model_languages(Path(model))
        if (source or pair[0], target or pair[1]) != pair:
            raise ConfigError(f"{model}: an {arrow(pair)} model, not {arrow((source or pair[0], target or pair[1]))}")
        return Path(model)
    shipped = shipped_models()
    found = [pair for pair in shipped if source in (None, pair[0]) and target in (None, pair[1])]
    if len(found) != 1:
        asked = arrow((source or "?", target or "?"))
        raise ConfigError(f"no {asked} model is shipped (shipped: {', '.join(map(arrow, shipped))})")
    return shipped[found[0]]


def is_installed_model(path: str | Path) -> bool:
    """The shipped model, or any model inside an installed package (site-packages): files tt reads
    but never changes unless told where, explicitly."""
    from weights import DIR

    resolved = Path(path).resolve()
    return resolved == DIR.resolve() or any(part in ("site-packages", "dist-packages") for part in resolved.parts)


@dataclass
class LoadedModel:
    model: torch.nn.Module  # core.model.transformer.Transformer, in eval mode
    tokenizer: Tokenizer
    path: Path
    metadata: dict[str, str]
    # The shipped model of the other direction, for --rerank (core.decode.rerank.with_reverse); None: not loaded.
    reverse: LoadedModel | None = None

    @property
    def cfg(self) -> ModelConfig:
        return self.model.cfg


def load_model(
    directory: str | Path | None = None, *, device: str | torch.device = "cpu", packed: bool = False
) -> LoadedModel:
    """Load a model directory (fp16 or fp32 on disk; fp32 in memory); None = the default model.

    packed=True (inference and attribution on the CPU, never training): the Linear layers run on
    oneDNN with packed weights (core.model.fast.packed_model), the same function computed faster — on a CPU
    where that pays (`packing_pays`: not an Intel one, whose MKL products are the faster ones).
    """
    from core.model.transformer import Transformer

    directory = Path(directory) if directory is not None else default_model_dir()
    if not directory.exists():
        raise CheckpointError(f"{directory}: no such model directory")
    if not directory.is_dir():
        raise CheckpointError(
            f"{directory}: not a directory (a model is a directory with {WEIGHTS_FILE} and {TOKENIZER_FILE})"
        )
    weights = directory / WEIGHTS_FILE
    if not weights.exists():
        raise CheckpointError(f"{directory}: no {WEIGHTS_FILE} in the model directory")
    tensors, metadata = read_weights(weights)
    cfg = config_from_metadata(weights, metadata)
    try:
        tokenizer = Tokenizer.load(directory / TOKENIZER_FILE)
    except TokenizerError as exc:
        raise CheckpointError(str(exc)) from None
    if tokenizer.vocab_size != cfg.vocab_size:
        raise CheckpointError(
            f"{directory / TOKENIZER_FILE}: {tokenizer.vocab_size} pieces, but the model was built for {cfg.vocab_size}"
        )
    # Built without its random init (every tensor is loaded next): the init was 0.07–0.15 s of a cold
    # `tt translate` (bench/README.md). fork_rng: whatever draws remain must not move the caller's RNG.
    with torch.random.fork_rng(devices=[]), _without_random_init():
        model = Transformer(cfg)
    # copy_ converts fp16 on disk to the model's fp32 in the same pass; no intermediate copy.
    load_state(model, tensors, weights)
    model = model.to(device).eval()
    if packed and model.generator.weight.device.type == "cpu":
        from core.model.fast import packed_model, packing_pays

        if packing_pays():
            model = packed_model(model, inplace=True)
    return LoadedModel(model, tokenizer, directory, metadata)


PLACEHOLDER_KEY = "placeholder_tokens"  # in card.json (a list) and in the weights' metadata (its JSON)


def placeholder_metadata(tokens: tuple[str, ...]) -> dict[str, str]:
    """The weights-file metadata that says a model was trained to copy `tokens` (none: nothing to say)."""
    import json

    return {PLACEHOLDER_KEY: json.dumps(list(tokens))} if tokens else {}


def placeholder_tokens(directory: str | Path, metadata: dict[str, str] | None = None) -> tuple[str, ...]:
    """The placeholder pieces a model was trained to copy, as its card.json lists them
    (`"placeholder_tokens": ["<ph0>", ...]`), else as its weights' metadata does (`metadata`, read from the
    directory's weights file when not given: a run directory has no card); () for a model without them
    (core/text then uses words the model copies: docs/text.md, Which placeholder)."""
    import json

    card = Path(directory) / "card.json"
    try:
        found = json.loads(card.read_text(encoding="utf-8")).get(PLACEHOLDER_KEY)
    except (OSError, ValueError, AttributeError):
        found = None
    if found is None:
        if metadata is None:
            metadata = weights_metadata(Path(directory) / WEIGHTS_FILE)
        try:
            found = json.loads(metadata.get(PLACEHOLDER_KEY) or "[]")
        except ValueError:
            found = []
    if not isinstance(found, list):
        return ()
    return tuple(t for t in found if isinstance(t, str) and t.strip())
