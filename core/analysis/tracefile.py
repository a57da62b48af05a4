"""Trace files: everything `tt inspect` shows for one sentence, saved so it can be replayed without
the model (`tt translate --trace FILE`, then `load_trace`).

The file is safetensors (tensors and string metadata only: nothing in it is ever executed) with
metadata

    format          "tt.trace"
    format_version  "1"  (a newer version is refused with a clear error, never guessed at)
    trace           JSON: source text and pieces, and per step the chosen piece, its log-probability
                    and the candidates; the attribution method when there is one

and tensors (L = layers, h = heads, S = source pieces, T = output steps)

    source.tokens          (S,)          int64
    encoder_self.{l}       (h, S, S)     float32
    steps.tokens           (T,)          int64
    decoder_self.{l}       (h, T, T)     float32: row t holds the t+1 positions step t saw, 0 after
    cross.{l}              (h, T, S)     float32
    steps.logits           (T, vocab)    float16, optional: the full distribution of each step
    attribution.source     (T, S)        float32, optional: per output step, per source piece
    attribution.target     (T, T)        float32, optional: per output step, per target position (BOS first)

Every way the file can be wrong (missing, truncated, not safetensors, another format, a newer
version, missing or mis-shaped tensors, bad JSON) is one DataError naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from core.analysis.attribute import Attribution
from core.checkpoint import check_format, read_weights
from core.decode.trace import Candidate, SourceTrace, StepTrace
from core.errors import CheckpointError, DataError
from core.files import atomic_path

FORMAT = "tt.trace"
FORMAT_VERSION = 1


@dataclass
class TraceFile:
    """A loaded trace: the same dataclasses the live model produces."""

    source: SourceTrace
    steps: list[StepTrace]
    translation: str
    attribution: Attribution | None = None
    model: str = ""  # the model directory the trace came from, for the record


def save_trace(
    path: str | Path,
    source: SourceTrace,
    steps: list[StepTrace],
    *,
    translation: str = "",
    attribution: Attribution | None = None,
    model: str = "",
    logits: bool = True,
) -> Path:
    """Write one sentence's trace atomically (a crash leaves the old file or none)."""
    from safetensors.torch import save_file

    path = Path(path)
    n_layers = len(steps[0].cross) if steps else 0
    t, s = len(steps), len(source.tokens)
    tensors: dict[str, torch.Tensor] = {
        "source.tokens": torch.tensor(source.tokens, dtype=torch.long),
        "steps.tokens": torch.tensor([st.token for st in steps], dtype=torch.long),
    }
    for i, w in enumerate(source.encoder_self):
        tensors[f"encoder_self.{i}"] = w.float().contiguous()  # (h, S, S)
    for i in range(n_layers):
        h = steps[0].cross[i].size(0)
        tensors[f"cross.{i}"] = torch.stack([st.cross[i] for st in steps], 1).float().contiguous()  # (h, T, S)
        dec = torch.zeros(h, t, t)  # (h, T, T)
        for j, st in enumerate(steps):
            dec[:, j, : j + 1] = st.decoder_self[i]
        tensors[f"decoder_self.{i}"] = dec
    if logits and steps and all(st.logits is not None for st in steps):
        tensors["steps.logits"] = torch.stack([st.logits for st in steps]).half().contiguous()  # (T, vocab)
    if attribution is not None:
        tensors["attribution.source"] = attribution.source.float().contiguous()  # (T, S)
        tensors["attribution.target"] = attribution.target.float().contiguous()  # (T, T)
    meta = {
        "text": source.text,
        "pieces": source.pieces,
        "translation": translation,
        "model": model,
        "n_layers": n_layers,
        "encoder_layers": len(source.encoder_self),
        "sizes": [s, t],
        "steps": [
            {
                "index": st.index,
                "piece": st.piece,
                "logprob": st.logprob,
                "forced": st.forced,
                "candidates": [[c.token, c.piece, c.prob, c.logprob] for c in st.candidates],
            }
            for st in steps
        ],
        "attribution": None if attribution is None else attribution.describe(),
    }
    metadata = {"format": FORMAT, "format_version": str(FORMAT_VERSION), "trace": json.dumps(meta, ensure_ascii=False)}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata=metadata)
    return path


def _read(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The checkpoint reader's checks (missing, truncated, corrupt), as a DataError about a trace."""
    try:
        return read_weights(path)
    except CheckpointError as exc:
        raise DataError(f"{exc} (reading a tt trace file)") from None


def load_trace(path: str | Path) -> TraceFile:
    """Read a trace file back into SourceTrace + StepTraces, without the model."""
    path = Path(path)
    tensors, metadata = _read(path)
    check_format(
        path,
        metadata,
        fmt=FORMAT,
        newest=FORMAT_VERSION,
        what="tt trace file",
        version_label="trace format version",
        error=DataError,
    )
    try:
        meta = json.loads(metadata.get("trace", ""))
        s, t = (int(x) for x in meta["sizes"])
        n_layers, n_enc = int(meta["n_layers"]), int(meta["encoder_layers"])
        step_meta = meta["steps"]
        pieces = [str(p) for p in meta["pieces"]]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: bad trace metadata ({type(exc).__name__}: {exc})") from None

    def tensor(name: str, shape: tuple[int, ...] | None = None, last: int | None = None) -> torch.Tensor:
        if name not in tensors:
            raise DataError(f"{path}: tensor {name} is missing")
        x = tensors[name]
        if (shape is not None and tuple(x.shape) != shape) or (last is not None and x.shape[-1] != last):
            raise DataError(f"{path}: tensor {name} has shape {tuple(x.shape)}, expected {shape}")
        return x

    src_tokens = tensor("source.tokens", (s,)).tolist()
    out_tokens = tensor("steps.tokens", (t,)).tolist()
    if len(pieces) != s or len(step_meta) != t:
        raise DataError(f"{path}: metadata lists {len(pieces)} pieces and {len(step_meta)} steps, tensors {s} and {t}")
    encoder_self = [tensor(f"encoder_self.{i}") for i in range(n_enc)]
    h = encoder_self[0].size(0) if encoder_self else (tensors["cross.0"].size(0) if "cross.0" in tensors else 0)
    for i, w in enumerate(encoder_self):
        tensor(f"encoder_self.{i}", (h, s, s))
    cross = [tensor(f"cross.{i}", (h, t, s)) for i in range(n_layers)]
    dec = [tensor(f"decoder_self.{i}", (h, t, t)) for i in range(n_layers)]
    logits = tensors.get("steps.logits")
    if logits is not None and (logits.dim() != 2 or logits.size(0) != t):
        raise DataError(f"{path}: tensor steps.logits has shape {tuple(logits.shape)}, expected ({t}, vocab)")
    source = SourceTrace(text=str(meta.get("text", "")), tokens=src_tokens, pieces=pieces, encoder_self=encoder_self)
    steps = []
    try:
        for j, (token, m) in enumerate(zip(out_tokens, step_meta)):
            steps.append(
                StepTrace(
                    index=int(m["index"]),
                    token=token,
                    piece=str(m["piece"]),
                    logprob=float(m["logprob"]),
                    candidates=[Candidate(int(c[0]), str(c[1]), float(c[2]), float(c[3])) for c in m["candidates"]],
                    forced=bool(m.get("forced", False)),
                    decoder_self=[w[:, j, : j + 1] for w in dec],
                    cross=[w[:, j] for w in cross],
                    logits=None if logits is None else logits[j].float(),
                )
            )
        attribution = None
        if meta.get("attribution") is not None:
            attribution = Attribution.from_description(
                meta["attribution"], tensor("attribution.source", (t, s)), tensor("attribution.target", (t, t))
            )
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise DataError(f"{path}: bad trace metadata ({type(exc).__name__}: {exc})") from None
    return TraceFile(source, steps, str(meta.get("translation", "")), attribution, str(meta.get("model", "")))
