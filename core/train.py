"""Training (§5): label-smoothed cross-entropy, Adam with warm-up + inverse-sqrt decay, token-budget
batches, autocast (bf16/fp16), DDP under torchrun, exact resume, periodic validation with BLEU/chrF.

Core never prints: progress goes to the callbacks the caller passes (the CLI's progress bar, a
test's list) and to `metrics.jsonl` in the run directory.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from core.checkpoint import atomic_path, atomic_write_bytes, load_model, read_weights, save_model
from core.config import ModelConfig, preset
from core.data import Example, Pair, ReadStats, collate, length_ok, read_corpus, split_heldout, token_batches
from core.errors import CheckpointError, ConfigError, DataError
from core.model import Transformer
from core.tokenizer import Tokenizer

TRAINER_STATE = "trainer.safetensors"
TRAINER_JSON = "trainer.json"


@dataclass
class TrainConfig:
    data: list[str]  # TSV files or prefixes P (P.fr + P.en)
    out: str  # the run directory
    valid: list[str] = field(default_factory=list)  # explicit validation data; else split off
    preset: str = "small"
    model_overrides: dict[str, Any] = field(default_factory=dict)  # any ModelConfig field
    src_lang: str = "fr"
    tgt_lang: str = "en"
    vocab_size: int = 8000
    spm_model: str | None = None  # reuse an existing SentencePiece model instead of training one
    strict: bool = True  # a malformed line is an error; False skips and counts it
    max_len: int = 128  # drop pairs with more pieces than this on either side
    max_ratio: float = 3.0  # drop pairs whose length ratio exceeds this
    dedup: bool = False
    valid_per_mille: int = 10  # held out for validation (by sentence hash) when --valid is not given
    test_per_mille: int = 0  # held out as a test set, written to the run directory as test.<lang>
    max_tokens: int = 4096  # batch budget: source + target pieces, padding included
    lr_scale: float = 1.0  # multiplies the paper's d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
    warmup: int = 4000
    label_smoothing: float = 0.1
    clip_norm: float = 0.0  # 0 = no clipping
    accumulate: int = 1  # batches per optimizer step
    device: str = "auto"
    precision: str = "fp32"  # fp32 | bf16 | fp16
    compile: bool = False
    max_steps: int = 0  # 0 = no limit
    epochs: float = 0.0  # 0 = no limit
    max_time: float = 0.0  # seconds; 0 = no limit
    valid_every: int = 1000  # steps
    save_every: int = 1000  # steps
    keep_last: int = 5
    bleu_sample: int = 200  # validation sentences translated greedily for BLEU/chrF
    seed: int = 1
    threads: int = 0  # torch intra-op threads on CPU; 0 = torch's default

    def model_config(self, vocab_size: int) -> ModelConfig:
        overrides = {k: v for k, v in self.model_overrides.items() if v is not None}
        overrides.setdefault("max_len", max(self.max_len + 2, preset(self.preset).max_len))
        return preset(self.preset, vocab_size=vocab_size, **overrides)


@dataclass
class TrainEvent:
    kind: str  # "start" | "step" | "valid" | "checkpoint" | "end"
    step: int
    data: dict[str, Any]


def noam_lr(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)  (§5.3)."""
    step = max(step, 1)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"unknown device {name!r}; use auto, cpu, cuda, cuda:N or mps") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda asked for, but no CUDA GPU is available")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("--device mps asked for, but MPS is not available")
    return device


def autocast_context(device: torch.device, precision: str):
    if precision == "fp32":
        return nullcontext()
    if precision not in ("bf16", "fp16"):
        raise ConfigError(f"unknown precision {precision!r}; use fp32, bf16 or fp16")
    if precision == "fp16" and device.type != "cuda":
        raise ConfigError("fp16 needs a CUDA GPU; on CPU use --precision bf16")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def label_smoothed_loss(logits: torch.Tensor, target: torch.Tensor, pad_id: int, epsilon: float) -> tuple[torch.Tensor, int]:
    """Summed cross-entropy against (1-ε)·one-hot + ε/V (§5.4), pad positions ignored.

    Returns (sum over real tokens, number of real tokens).
    """
    loss = F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        target.reshape(-1),
        ignore_index=pad_id,
        label_smoothing=epsilon,
        reduction="sum",
    )
    return loss, int((target != pad_id).sum())


# ---------------------------------------------------------------------------------------- data
@dataclass
class Prepared:
    tokenizer: Tokenizer
    train: list[Example]
    valid: list[Example]
    valid_pairs: list[Pair]
    stats: dict[str, int]


def prepare_data(cfg: TrainConfig, run_dir: Path, is_main: bool = True) -> Prepared:
    """Read, split, (train the tokenizer), encode and filter. Deterministic for a given config."""
    stats = ReadStats()
    pairs: list[Pair] = []
    for spec in cfg.data:
        pairs.extend(read_corpus(spec, src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang, strict=cfg.strict, stats=stats))
    if not pairs:
        raise DataError("the training data holds no sentence pairs")
    if cfg.dedup:
        seen, unique = set(), []
        for p in pairs:
            if (p.src, p.tgt) not in seen:
                seen.add((p.src, p.tgt))
                unique.append(p)
        stats.skipped_duplicate = len(pairs) - len(unique)
        pairs = unique
    if cfg.valid:
        valid_pairs = [p for spec in cfg.valid for p in read_corpus(spec, src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang, strict=cfg.strict)]
    else:
        pairs, valid_pairs, test_pairs = split_heldout(pairs, cfg.valid_per_mille, cfg.test_per_mille)
        if not valid_pairs:  # a tiny corpus: hold out a few pairs all the same
            pairs, valid_pairs = pairs[: -max(1, len(pairs) // 10)], pairs[-max(1, len(pairs) // 10) :]
        if test_pairs and is_main:
            run_dir.mkdir(parents=True, exist_ok=True)
            for lang, side in ((cfg.src_lang, "src"), (cfg.tgt_lang, "tgt")):
                text = "".join(getattr(p, side) + "\n" for p in test_pairs)
                atomic_write_bytes(run_dir / f"test.{lang}", text.encode("utf-8"))

    spm_path = run_dir / "spm.model"
    if cfg.spm_model:
        tokenizer = Tokenizer.load(cfg.spm_model)
    elif spm_path.exists():  # resuming: the run's own tokenizer
        tokenizer = Tokenizer.load(spm_path)
    else:
        tokenizer = Tokenizer.train((s for p in pairs for s in (p.src, p.tgt)), cfg.vocab_size)
    if is_main and not spm_path.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(spm_path, tokenizer.proto)

    def encode(ps: list[Pair], filtered: bool) -> list[Example]:
        srcs = tokenizer.encode_batch([p.src for p in ps])
        tgts = tokenizer.encode_batch([p.tgt for p in ps])
        out = []
        for s, t in zip(srcs, tgts):
            if filtered and not length_ok(len(s) + 1, len(t) + 1, cfg.max_len, cfg.max_ratio):
                stats.skipped_filtered += 1
                continue
            out.append(Example(s[: cfg.max_len] + [tokenizer.sp.eos_id()], [tokenizer.sp.bos_id()] + t[: cfg.max_len] + [tokenizer.sp.eos_id()]))
        return out

    train = encode(pairs, True)
    valid = encode(valid_pairs, False)
    if not train:
        raise DataError(f"no training pairs left after the length filters (--max-len {cfg.max_len}, --max-ratio {cfg.max_ratio})")
    counts = {
        "pairs_read": stats.read,
        "train_pairs": len(train),
        "valid_pairs": len(valid),
        "skipped_malformed": stats.skipped_malformed,
        "skipped_filtered": stats.skipped_filtered,
        "skipped_duplicate": stats.skipped_duplicate,
    }
    return Prepared(tokenizer, train, valid, valid_pairs, counts)


# ----------------------------------------------------------------------------------- the loop
class Trainer:
    def __init__(self, cfg: TrainConfig, callbacks: list[Callable[[TrainEvent], None]] | None = None, resume: bool = False):
        self.cfg = cfg
        self.callbacks = callbacks or []
        self.run_dir = Path(cfg.out)
        self.resume = resume
        self.rank, self.world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
        self.is_main = self.rank == 0
        self.stop_requested = False

    def emit(self, kind: str, step: int, **data: Any) -> None:
        if not self.is_main:
            return
        event = TrainEvent(kind, step, data)
        if kind in ("start", "valid", "checkpoint", "end") or (kind == "step" and data.get("log")):
            with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps({"event": kind, "step": step, **{k: v for k, v in data.items() if k != "log"}}) + "\n")
        for cb in self.callbacks:
            cb(event)

    # -- setup -------------------------------------------------------------------------------
    def setup(self) -> None:
        cfg = self.cfg
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        if self.world > 1 and not torch.distributed.is_initialized():
            backend = "nccl" if torch.cuda.is_available() and cfg.device in ("auto", "cuda") else "gloo"
            if backend == "nccl":
                torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
            torch.distributed.init_process_group(backend=backend)
        self.device = resolve_device(cfg.device)
        autocast_context(self.device, cfg.precision)  # validates precision against the device early
        if self.is_main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.world > 1:
            torch.distributed.barrier()
        if self.resume and not self.latest_checkpoint():
            raise CheckpointError(f"{self.run_dir}: nothing to resume (no checkpoints/ in the run directory)")
        if not self.resume and (self.run_dir / "checkpoints").exists() and any((self.run_dir / "checkpoints").iterdir()):
            raise ConfigError(f"{self.run_dir} already holds a training run; use --resume to continue it or choose another --out")
        # Rank 0 trains the tokenizer; the others wait and load it, so all agree on the vocabulary.
        if self.is_main:
            self.data = prepare_data(cfg, self.run_dir, True)
        if self.world > 1:
            torch.distributed.barrier()
            if not self.is_main:
                self.data = prepare_data(cfg, self.run_dir, False)
        self.model_cfg = cfg.model_config(self.data.tokenizer.vocab_size)
        torch.manual_seed(cfg.seed)
        self.model = Transformer(self.model_cfg).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
        self.scaler = torch.amp.GradScaler("cuda") if cfg.precision == "fp16" else None
        self.step, self.epoch, self.batch_in_epoch = 0, 0, 0
        self.best_score: float | None = None
        self.elapsed_before = 0.0
        if self.resume:
            self.load_checkpoint(self.latest_checkpoint())
        self.net = self.model
        if self.world > 1:
            from torch.nn.parallel import DistributedDataParallel

            self.net = DistributedDataParallel(self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        if cfg.compile:
            self.net = torch.compile(self.net)

    # -- checkpoints ---------------------------------------------------------------------------
    def checkpoints(self) -> list[Path]:
        root = self.run_dir / "checkpoints"
        if not root.exists():
            return []
        return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("step_") and (p / TRAINER_JSON).exists())

    def latest_checkpoint(self) -> Path | None:
        found = self.checkpoints()
        return found[-1] if found else None

    def save_checkpoint(self) -> Path:
        """model dir + optimizer/RNG state + data position, in a temp dir renamed into place."""
        root = self.run_dir / "checkpoints"
        final = root / f"step_{self.step:08d}"
        tmp = root / f".tmp_step_{self.step:08d}"
        shutil.rmtree(tmp, ignore_errors=True)
        save_model(self.model, self.data.tokenizer, tmp)
        from safetensors.torch import save_file

        tensors: dict[str, torch.Tensor] = {"rng.cpu": torch.get_rng_state()}
        if self.device.type == "cuda":
            tensors["rng.cuda"] = torch.cuda.get_rng_state(self.device)
        opt = self.optimizer.state_dict()
        for index, state in opt["state"].items():
            for key, value in state.items():
                tensors[f"optim.{index}.{key}"] = value.detach().cpu().contiguous() if torch.is_tensor(value) else torch.tensor(value)
        if self.scaler is not None:
            tensors["scaler.scale"] = self.scaler.get_scale() * torch.ones(())
        save_file(tensors, str(tmp / TRAINER_STATE))
        info = {
            "step": self.step,
            "epoch": self.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "best_score": self.best_score,
            "elapsed": self.elapsed_before + (time.time() - self.t_start),
            "train_config": asdict(self.cfg),
        }
        (tmp / TRAINER_JSON).write_text(json.dumps(info, indent=1))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        for old in self.checkpoints()[: -self.cfg.keep_last] if self.cfg.keep_last > 0 else []:
            shutil.rmtree(old, ignore_errors=True)
        self.emit("checkpoint", self.step, path=str(final))
        return final

    def load_checkpoint(self, path: Path) -> None:
        loaded = load_model(path)
        if loaded.cfg != self.model_cfg:
            raise CheckpointError(f"{path}: the checkpoint's model config differs from this run's options")
        self.model.load_state_dict(loaded.model.state_dict())
        tensors, _ = read_weights(path / TRAINER_STATE)
        info = json.loads((path / TRAINER_JSON).read_text())
        opt = self.optimizer.state_dict()
        state: dict[int, dict[str, torch.Tensor]] = {}
        for name, value in tensors.items():
            if name.startswith("optim."):
                _, index, key = name.split(".", 2)
                state.setdefault(int(index), {})[key] = value.to(self.device) if key != "step" else value
        opt["state"] = state
        self.optimizer.load_state_dict(opt)
        torch.set_rng_state(tensors["rng.cpu"])
        if "rng.cuda" in tensors and self.device.type == "cuda":
            torch.cuda.set_rng_state(tensors["rng.cuda"], self.device)
        if self.scaler is not None and "scaler.scale" in tensors:
            self.scaler.update(float(tensors["scaler.scale"]))
        self.step, self.epoch, self.batch_in_epoch = info["step"], info["epoch"], info["batch_in_epoch"]
        self.best_score = info.get("best_score")
        self.elapsed_before = info.get("elapsed", 0.0)

    # -- validation ----------------------------------------------------------------------------
    @torch.no_grad()
    def validate(self) -> dict[str, float]:
        from core.decoding import greedy, pad_batch
        from core.evaluate import corpus_scores

        model, cfg, pad = self.model, self.cfg, self.model_cfg.pad_id
        model.eval()
        total, tokens = 0.0, 0
        lens = [len(e.src) for e in self.data.valid]
        for batch in token_batches(lens, [len(e.tgt) for e in self.data.valid], cfg.max_tokens, seed=0, epoch=0, shuffle=False):
            src, tgt_in, tgt_out = (t.to(self.device) for t in collate([self.data.valid[i] for i in batch], pad))
            with autocast_context(self.device, cfg.precision):
                logits = model(src, tgt_in)
            loss, n = label_smoothed_loss(logits, tgt_out, pad, 0.0)
            total, tokens = total + float(loss), tokens + n
        result = {"valid_loss": total / max(tokens, 1), "valid_ppl": math.exp(min(total / max(tokens, 1), 50))}
        sample = self.data.valid[: cfg.bleu_sample]
        if sample:
            hyps = []
            for start in range(0, len(sample), 64):
                chunk = sample[start : start + 64]
                src = pad_batch([e.src for e in chunk], pad, self.device)
                hyps += [self.data.tokenizer.decode(h.tokens) for h in greedy(model, src)]
            refs = [p.tgt for p in self.data.valid_pairs[: len(sample)]]
            scores = corpus_scores(hyps, [refs])
            result.update(bleu=scores.bleu, chrf=scores.chrf)
        model.train()
        return result

    # -- the loop ------------------------------------------------------------------------------
    def batches_for_epoch(self, epoch: int) -> list[list[int]]:
        train = self.data.train
        batches = token_batches([len(e.src) for e in train], [len(e.tgt) for e in train], self.cfg.max_tokens, seed=self.cfg.seed, epoch=epoch)
        # Every rank takes every world-th batch; all ranks get the same count so steps stay in lock-step.
        usable = len(batches) - len(batches) % self.world
        return batches[self.rank : usable : self.world]

    def run(self) -> dict[str, Any]:
        self.setup()
        cfg, model_cfg = self.cfg, self.model_cfg
        pad = model_cfg.pad_id
        self.t_start = time.time()
        self.emit(
            "start", self.step, params=self.model.num_parameters(), device=str(self.device), world=self.world,
            resumed=self.resume, model_config=model_cfg.to_dict(), **self.data.stats,
        )
        self.model.train()
        status, last = "finished", {}
        window_tokens, window_start = 0, time.time()
        epoch_batches = self.batches_for_epoch(self.epoch)
        steps_per_epoch = max(1, len(epoch_batches) // cfg.accumulate)
        max_steps = cfg.max_steps or (math.ceil(cfg.epochs * steps_per_epoch) if cfg.epochs else 0)
        if not max_steps and not cfg.max_time:
            raise ConfigError("give a budget: --max-steps, --epochs or --max-time")
        try:
            while True:
                if max_steps and self.step >= max_steps:
                    break
                if cfg.max_time and self.elapsed_before + time.time() - self.t_start >= cfg.max_time:
                    status = "max_time"
                    break
                if self.stop_requested:
                    status = "stopped"
                    break
                lr = noam_lr(self.step + 1, model_cfg.d_model, cfg.warmup, cfg.lr_scale)
                for group in self.optimizer.param_groups:
                    group["lr"] = lr
                loss_sum, n_tokens, n_in = 0.0, 0, 0
                for micro in range(cfg.accumulate):
                    if self.batch_in_epoch >= len(epoch_batches):
                        self.epoch, self.batch_in_epoch = self.epoch + 1, 0
                        epoch_batches = self.batches_for_epoch(self.epoch)
                    batch = [self.data.train[i] for i in epoch_batches[self.batch_in_epoch]]
                    self.batch_in_epoch += 1
                    src, tgt_in, tgt_out = (t.to(self.device, non_blocking=True) for t in collate(batch, pad))
                    sync = micro == cfg.accumulate - 1 or self.world == 1
                    ctx = nullcontext() if sync or not hasattr(self.net, "no_sync") else self.net.no_sync()
                    with ctx:
                        with autocast_context(self.device, cfg.precision):
                            logits = self.net(src, tgt_in)
                        loss, n = label_smoothed_loss(logits, tgt_out, pad, cfg.label_smoothing)
                        # Mean over this batch's real target tokens; DDP then averages the ranks.
                        scaled = loss / (max(n, 1) * cfg.accumulate)
                        (self.scaler.scale(scaled) if self.scaler else scaled).backward()
                    loss_sum += float(loss.detach())
                    n_tokens += n
                    n_in += int((src != pad).sum()) + int((tgt_in != pad).sum())
                if self.scaler:
                    self.scaler.unscale_(self.optimizer)
                if cfg.clip_norm > 0:
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
                if self.scaler:
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.step += 1
                window_tokens += n_in * self.world
                log = self.step % 50 == 0 or self.step == 1
                now = time.time()
                tok_s = window_tokens / max(now - window_start, 1e-9)
                elapsed = self.elapsed_before + now - self.t_start
                eta = None
                if max_steps:
                    eta = (max_steps - self.step) * (now - self.t_start) / max(1, self.step - self._first_step())
                last = {"loss": loss_sum / max(n_tokens, 1), "lr": lr, "tokens_per_s": tok_s, "epoch": self.epoch, "elapsed": elapsed,
                        "eta": eta, "max_steps": max_steps, "log": log}
                self.emit("step", self.step, **last)
                if log:
                    window_tokens, window_start = 0, now
                if cfg.valid_every and self.step % cfg.valid_every == 0:
                    self.do_validation()
                if cfg.save_every and self.step % cfg.save_every == 0 and self.is_main:
                    self.save_checkpoint()
        except KeyboardInterrupt:
            status = "interrupted"
        if self.is_main and (not self.checkpoints() or self.checkpoints()[-1].name != f"step_{self.step:08d}"):
            self.save_checkpoint()
        if status != "interrupted" and cfg.valid_every and (self.step % cfg.valid_every):
            self.do_validation()
        if self.is_main and not (self.run_dir / "model.safetensors").exists():
            save_model(self.model, self.data.tokenizer, self.run_dir)  # no validation ran: the last weights
        self.emit("end", self.step, status=status, elapsed=self.elapsed_before + time.time() - self.t_start)
        if self.world > 1 and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        return {"status": status, "step": self.step, **{k: v for k, v in last.items() if k != "log"}}

    def _first_step(self) -> int:
        if not hasattr(self, "_start_step"):
            self._start_step = self.step - 1
        return self._start_step

    def do_validation(self) -> None:
        if not self.is_main:
            if self.world > 1:
                torch.distributed.barrier()
            return
        scores = self.validate()
        # Keep the best model (by BLEU when measured, else by validation loss) at the run's top level.
        score = scores.get("bleu", -scores["valid_loss"])
        improved = self.best_score is None or score > self.best_score
        if improved:
            self.best_score = score
            save_model(self.model, self.data.tokenizer, self.run_dir, extra_metadata={"step": str(self.step)})
        self.emit("valid", self.step, best=improved, **scores)
        if self.world > 1:
            torch.distributed.barrier()


def average_checkpoints(paths: list[Path], out: Path) -> Path:
    """Average the weights of several checkpoints of one run (§6.1: the last 5 or 20)."""
    if not paths:
        raise CheckpointError("no checkpoints to average")
    loaded = [load_model(p) for p in paths]
    first = loaded[0]
    for other in loaded[1:]:
        if other.cfg != first.cfg:
            raise CheckpointError(f"{other.path}: a different model config from {first.path}; cannot average")
    states = [m.model.state_dict() for m in loaded]
    averaged = {k: sum(s[k].float() for s in states) / len(states) for k in states[0]}
    first.model.load_state_dict(averaged)
    return save_model(first.model, first.tokenizer, out, extra_metadata={"averaged": ",".join(p.name for p in paths)})
