"""Training (§5): label-smoothed cross-entropy, Adam with warm-up + inverse-sqrt decay, token-budget
batches, autocast (bf16/fp16), DDP under torchrun, exact resume, periodic validation with BLEU/chrF.

Core never prints: progress goes to the callbacks the caller passes (the CLI's progress bar, a
test's list) and to `metrics.jsonl` in the run directory.
"""

from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from core.card import LANGUAGES_KEY, config_languages
from core.checkpoint import placeholder_metadata, save_model
from core.data.mix import epoch_indices
from core.data.placeholders import PLACEHOLDER_TOKENS
from core.data.readers import collate, token_batches
from core.device import autocast_context, describe_cpu, resolve_device, resolve_precision
from core.errors import CheckpointError, ConfigError, DataError
from core.model.config import ModelConfig
from core.model.transformer import Transformer
from core.train.config import TrainConfig
from core.train.lock import RunLock, lock_run_dir
from core.train.prepare import Prepared, prepare_data  # noqa: F401 - re-exported
from core.train.state import (  # noqa: F401 - TRAINER_* and average_checkpoints are re-exported
    TRAINER_JSON,
    TRAINER_STATE,
    average_checkpoints,
    checkpoint_config,
    clean_partial_checkpoints,
    init_digest,
    list_checkpoints,
    read_checkpoint,
    truncate_metrics,
    write_checkpoint,
)


@dataclass
class TrainEvent:
    kind: str  # "start" | "step" | "valid" | "checkpoint" | "end"
    step: int
    data: dict[str, Any]


ADAM_BETAS = (0.9, 0.98)  # §5.3: β2 below the usual 0.999, so the second moment forgets faster
ADAM_EPS = 1e-9  # §5.3


def noam_lr(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)  (§5.3)."""
    step = max(step, 1)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def cooldown_factor(step: int, max_steps: int, cooldown: int) -> float:
    """1, then over the last `cooldown` steps before `max_steps` a straight line down to 0 (1/cooldown at the last
    step): the decay that ends a warmup-stable-decay schedule (Hägele et al. 2024). The paper's schedule never
    reaches 0; ending a run on a cool-down anneals the weights where checkpoint averaging only approximates it."""
    if not cooldown or not max_steps:
        return 1.0
    return min(1.0, max(0.0, (max_steps - step + 1) / cooldown))


def label_smoothed_loss(
    logits: torch.Tensor, target: torch.Tensor, pad_id: int, epsilon: float
) -> tuple[torch.Tensor, int]:
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


def _bleu_chrf(scores: Any) -> dict[str, float]:
    return {"bleu": scores.bleu, "chrf": scores.chrf}


# ----------------------------------------------------------------------------------- the loop
STOP_STATUS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


# --init-from: the model options a fine-tune may set differently from the pre-training's, and the ones it may
# grow without changing what the model computes (core/model/grow.py); the rest of the architecture is the
# loaded model's.
FINE_TUNE_MAY_CHANGE = ("dropout", "attention_dropout")
FINE_TUNE_MAY_GROW = ("d_ff", "n_encoder_layers")


class Trainer:
    """Trains one run directory. `run()` returns a summary dict; `status` in it says why it stopped:

    finished (a step/epoch budget), max_time, interrupted (SIGINT), terminated (SIGTERM), stopped
    (`request_stop()`). Every way out saves a checkpoint at a step boundary, so --resume is exact.
    """

    def __init__(
        self, cfg: TrainConfig, callbacks: list[Callable[[TrainEvent], None]] | None = None, resume: bool = False
    ):
        self.cfg = cfg
        self.callbacks = callbacks or []
        self.run_dir = Path(cfg.out)
        self.resume = resume
        self.rank, self.world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
        self.is_main = self.rank == 0
        self.stop_requested: str | None = None
        self.lock: RunLock | None = None  # held from setup() to the end of run()

    def request_stop(self, reason: str = "stopped") -> None:
        """Finish the current step, save a checkpoint and return (safe from another thread)."""
        self.stop_requested = reason

    def emit(self, kind: str, step: int, **data: Any) -> None:
        if not self.is_main:
            return
        event = TrainEvent(kind, step, data)
        if kind in ("start", "valid", "checkpoint", "end") or (kind == "step" and data.get("log")):
            with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as f:
                f.write(
                    json.dumps({"event": kind, "step": step, **{k: v for k, v in data.items() if k != "log"}}) + "\n"
                )
        for cb in self.callbacks:
            cb(event)

    # -- setup -------------------------------------------------------------------------------
    def setup(self) -> None:  # noqa: C901 - the run's setup in the order it happens (device, data, model, optimizer, resume)
        cfg = self.cfg
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        if self.world > 1 and not torch.distributed.is_initialized():
            backend = "nccl" if torch.cuda.is_available() and cfg.device.startswith(("auto", "cuda")) else "gloo"
            if backend == "nccl":
                torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
            torch.distributed.init_process_group(backend=backend)
        self.device = resolve_device(cfg.device)
        # "auto" becomes what this device runs natively; checkpoints then record it, so --resume keeps it.
        cfg.precision = resolve_precision(self.device, cfg.precision)
        self.lock = lock_run_dir(self.run_dir, is_main=self.is_main, world=self.world, device=self.device)
        if self.resume and not self.latest_checkpoint():
            raise CheckpointError(f"{self.run_dir}: nothing to resume (no checkpoints/ in the run directory)")
        if not self.resume and self.checkpoints():
            raise ConfigError(
                f"{self.run_dir} already holds a training run; use --resume to continue it or choose another --out"
            )
        # (config, weights) to fine-tune. A resumed fine-tune is its checkpoint's model: the --init-from
        # directory is not read again, so it may have changed or gone since the run started.
        init = self.init_model() if cfg.init_from and not self.resume else None
        # The bytes the run started from (what --init-from held then), so runs said to continue one model can be
        # told apart when another was shipped into the same path between them (ship_weights --soup-with).
        self.init_digest = init_digest(cfg.init_from) if init else None
        # Rank 0 trains the tokenizer; the others wait and load it, so all agree on the vocabulary.
        if self.is_main:
            self.data = prepare_data(cfg, self.run_dir, True, reuse_tokenizer=self.resume)
        if self.world > 1:
            torch.distributed.barrier()
            if not self.is_main:
                self.data = prepare_data(cfg, self.run_dir, False, reuse_tokenizer=True)
        if init:
            init = self.fit_vocab(*init)
            self.model_cfg = init[0]
        elif self.resume and cfg.init_from:  # from the weights file's metadata; the weights load below
            self.model_cfg = checkpoint_config(self.latest_checkpoint())
        else:
            self.model_cfg = cfg.model_config(self.data.tokenizer.vocab_size)
        self.guide = None  # guided alignment (core/train/align_loss.py), with --align-links
        if cfg.align_links:
            from core.train.align_loss import GuidedAlignment

            if self.world > 1:
                raise ConfigError("--align-links runs in one process (it reads attention weights past DDP's forward)")
            self.guide = GuidedAlignment.build(
                cfg, self.data.tokenizer, self.model_cfg.n_decoder_layers, self.model_cfg.h
            )
        torch.manual_seed(cfg.seed)
        self.model = Transformer(self.model_cfg)
        if init:
            self.model.load_state_dict(init[1])
        self.model = self.model.to(self.device)
        if self.world > 1:  # same initial weights everywhere, but each rank its own dropout masks
            torch.manual_seed(cfg.seed + 1000 * self.rank)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.0, betas=ADAM_BETAS, eps=ADAM_EPS)
        self.scaler = torch.amp.GradScaler("cuda") if cfg.precision == "fp16" else None
        self.step, self.epoch, self.batch_in_epoch = 0, 0, 0
        self.best_score: float | None = None
        self.elapsed_before = 0.0
        self.cpu_before = 0.0  # CPU seconds of the run before this process (a resumed run)
        self.cpu_others = 0.0  # under DDP: the other ranks' CPU seconds, learned at each step's agreement
        if self.resume:
            latest = self.latest_checkpoint()
            info = read_checkpoint(latest, self.model, self.optimizer, self.device, self.scaler)
            self.step, self.epoch, self.batch_in_epoch = info["step"], info["epoch"], info["batch_in_epoch"]
            self.best_score = info.get("best_score")
            self.init_digest = info.get("init_digest")  # absent in runs started before it was recorded
            self.elapsed_before = info.get("elapsed", 0.0)
            self.cpu_before = info.get("cpu_time", 0.0)
            if self.is_main:
                clean_partial_checkpoints(self.run_dir)
                truncate_metrics(self.run_dir / "metrics.jsonl", self.step)
        self.net = self.model
        if self.world > 1:
            from torch.nn.parallel import DistributedDataParallel

            self.net = DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None
            )
        if cfg.compile:
            self.net = torch.compile(self.net)

    def init_model(self) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
        """--init-from: the model to fine-tune. Its architecture and tokenizer are the run's."""
        from core.checkpoint import TOKENIZER_FILE, load_model

        cfg = self.cfg
        loaded = load_model(cfg.init_from)
        own = loaded.cfg.to_dict()
        differ = sorted(
            k
            for k, v in cfg.model_overrides.items()
            if v is not None and k not in FINE_TUNE_MAY_CHANGE + FINE_TUNE_MAY_GROW and own.get(k) != v
        )
        if differ:
            raise ConfigError(
                f"--init-from {cfg.init_from}: the architecture is the model's own; drop {', '.join(differ)}"
            )
        spm = Path(cfg.init_from) / TOKENIZER_FILE
        if cfg.spm_model and Path(cfg.spm_model).read_bytes() != spm.read_bytes():
            raise ConfigError(
                f"--spm-model {cfg.spm_model} differs from {spm}; a fine-tune keeps the model's vocabulary"
            )
        cfg.spm_model = str(spm)
        overrides = {k: cfg.model_overrides[k] for k in FINE_TUNE_MAY_CHANGE if cfg.model_overrides.get(k) is not None}
        model_cfg, state = replace(loaded.cfg, **overrides), loaded.model.state_dict()
        from core.model.grow import deepen_encoder, widen_ffn

        for field, grow in (("d_ff", widen_ffn), ("n_encoder_layers", deepen_encoder)):
            if cfg.model_overrides.get(field) is not None:
                try:
                    model_cfg, state = grow(state, model_cfg, cfg.model_overrides[field], seed=cfg.seed)
                except ValueError as exc:
                    raise ConfigError(f"--init-from {cfg.init_from}: {exc}") from None
        return model_cfg, state

    def fit_vocab(
        self, model_cfg: ModelConfig, state: dict[str, torch.Tensor]
    ) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
        """--init-from with pieces the run's vocabulary added (--placeholders): the model grows their rows."""
        from core.model.grow import grow_vocab

        try:
            return grow_vocab(state, model_cfg, self.data.tokenizer.vocab_size, seed=self.cfg.seed)
        except ValueError as exc:
            raise ConfigError(f"--init-from {self.cfg.init_from}: {exc}") from None

    @property
    def model_metadata(self) -> dict[str, str]:
        """What every model this run writes says of itself beyond its config: its direction (so a run directory
        translates the right way round without a card) and the placeholders it learned."""
        return {
            LANGUAGES_KEY: "-".join(config_languages(vars(self.cfg))),
            **placeholder_metadata(PLACEHOLDER_TOKENS if self.cfg.placeholders else ()),
        }

    # -- checkpoints ---------------------------------------------------------------------------
    def checkpoints(self) -> list[Path]:
        return list_checkpoints(self.run_dir)

    def latest_checkpoint(self) -> Path | None:
        found = self.checkpoints()
        return found[-1] if found else None

    def save_checkpoint(self) -> Path:
        """model dir + optimizer/RNG state + data position, in a temp dir renamed into place."""
        info = {
            "step": self.step,
            "epoch": self.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "best_score": self.best_score,
            **self.clocks(),
            "train_config": asdict(self.cfg),
            **({"init_digest": self.init_digest} if self.init_digest else {}),
        }
        final = write_checkpoint(
            self.run_dir,
            self.step,
            self.model,
            self.data.tokenizer,
            self.optimizer,
            info,
            cuda_device=self.device if self.device.type == "cuda" else None,
            scaler=self.scaler,
            keep_last=self.cfg.keep_last,
            metadata=self.model_metadata,
        )
        self.emit("checkpoint", self.step, path=str(final))
        return final

    # -- validation ----------------------------------------------------------------------------
    @torch.no_grad()
    def validate(self) -> dict[str, Any]:
        """Loss over every validation set and BLEU/chrF on a greedy sample of each. The top-level
        numbers (which choose the best model) are those of the --valid sets, or of all sets without them."""
        from core.evaluate import corpus_scores

        sets = self.data.valid_sets
        primary = sets[: len(self.cfg.valid)] if self.cfg.valid and len(sets) >= len(self.cfg.valid) else sets
        chosen = {id(v) for v in primary}
        per_sample = max(1, self.cfg.bleu_sample // max(len(primary), 1)) if self.cfg.bleu_sample else 0
        self.model.eval()
        per_set, loss_sum, token_sum, hyps, refs = {}, 0.0, 0, [], []
        for v in sets:
            loss, tokens = self._valid_loss(v.examples)
            numbers = {"valid_loss": loss / max(tokens, 1)}
            if per_sample:
                h = self._greedy_sample(v.examples[:per_sample])
                r = [p.tgt for p in v.pairs[: len(h)]]
                numbers.update(_bleu_chrf(corpus_scores(h, [r])))
                if id(v) in chosen:
                    hyps, refs = hyps + h, refs + r
            if id(v) in chosen:
                loss_sum, token_sum = loss_sum + loss, token_sum + tokens
            per_set[v.name] = numbers
        mean = loss_sum / max(token_sum, 1)
        result = {"valid_loss": mean, "valid_ppl": math.exp(min(mean, 50))}
        if hyps:
            result.update(_bleu_chrf(corpus_scores(hyps, [refs])))
        if len(sets) > 1:
            result["sets"] = per_set
        self.model.train()
        return result

    def _valid_loss(self, examples: list[Any]) -> tuple[float, int]:
        cfg, pad = self.cfg, self.model_cfg.pad_id
        total, tokens = 0.0, 0
        lens = [len(e.src) for e in examples]
        for batch in token_batches(
            lens, [len(e.tgt) for e in examples], cfg.max_tokens, seed=0, epoch=0, shuffle=False
        ):
            src, tgt_in, tgt_out = (t.to(self.device) for t in collate([examples[i] for i in batch], pad))
            with autocast_context(self.device, cfg.precision):
                logits = self.model(src, tgt_in)
            loss, n = label_smoothed_loss(logits, tgt_out, pad, 0.0)
            total, tokens = total + float(loss), tokens + n
        return total, tokens

    @torch.no_grad()
    def _ready_validation(self) -> None:
        """Validation's decode and scores, run once on one sentence before the first step: every module it imports
        and the C step's library are loaded now, so code installed or edited during a run of hours never meets, at
        a validation, the code the run started with (a run that imported a newer core/model/step.py beside its older
        transformer.py stopped there; docs/model.md, session 44), and a decoder that cannot run fails in seconds."""
        sets = self.data.valid_sets
        if not (self.is_main and self.cfg.bleu_sample and sets and sets[0].examples):
            return
        from core.evaluate import corpus_scores

        self.model.eval()
        try:
            hyps = self._greedy_sample(sets[0].examples[:1])
        finally:
            self.model.train()
        corpus_scores(hyps, [hyps])

    def _greedy_sample(self, examples: list[Any]) -> list[str]:
        from core.decode.search import greedy, pad_batch

        hyps = []
        for start in range(0, len(examples), 64):
            chunk = examples[start : start + 64]
            src = pad_batch([e.src for e in chunk], self.model_cfg.pad_id, self.device)
            hyps += [self.data.tokenizer.decode(h.tokens) for h in greedy(self.model, src)]
        return hyps

    def clocks(self) -> dict[str, float]:
        """Wall and CPU seconds the run has spent so far, resumed starts included (for learning curves)."""
        return {
            "elapsed": self.elapsed_before + time.time() - self.t_start,
            "cpu_time": self.cpu_before + self.cpu_others + time.process_time() - self.cpu_start,
        }

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
            metadata = {"step": str(self.step), **self.model_metadata}
            save_model(self.model, self.data.tokenizer, self.run_dir, extra_metadata=metadata)
        self.emit("valid", self.step, best=improved, **scores, **self.clocks())
        if self.world > 1:
            torch.distributed.barrier()

    # -- the loop ------------------------------------------------------------------------------
    def batches_for_epoch(self, epoch: int) -> list[list[int]]:
        train, counts = self.data.train, self.data.mix_counts
        src_lens, tgt_lens = train.src_lens(), train.tgt_lens()
        if counts is None:  # every example once, in place
            batches = token_batches(src_lens, tgt_lens, self.cfg.max_tokens, seed=self.cfg.seed, epoch=epoch)
        else:  # this epoch's draw from each corpus (core/data/mix.py)
            drawn = epoch_indices(self.data.corpus_sizes, counts, seed=self.cfg.seed, epoch=epoch)
            batches = token_batches(
                src_lens[drawn], tgt_lens[drawn], self.cfg.max_tokens, seed=self.cfg.seed, epoch=epoch
            )
            drawn = drawn.tolist()
            batches = [[drawn[i] for i in b] for b in batches]
        # Every rank takes every world-th batch; all ranks get the same count so steps stay in lock-step.
        usable = len(batches) - len(batches) % self.world
        if usable == 0:
            raise DataError(
                f"{len(batches)} batch(es) per epoch cannot be shared by {self.world} processes; use more data or a smaller --max-tokens"
            )
        return batches[self.rank : usable : self.world]

    def _on_signal(self, signum: int, frame: Any) -> None:
        if signum == signal.SIGINT and self.stop_requested == "interrupted":
            raise KeyboardInterrupt  # a second Ctrl-C: stop now, without the checkpoint
        self.stop_requested = STOP_STATUS.get(signum, "stopped")

    def _install_signal_handlers(self) -> dict[int, Any]:
        """SIGINT/SIGTERM ask for a stop at the next step boundary (a checkpoint, then exit).

        Only the main thread may set handlers. A SIGINT that the parent set to ignored (a job
        started with `&` by a script) stays ignored, as the shell meant.
        """
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous = {}
        for sig in STOP_STATUS:
            old = signal.getsignal(sig)
            if sig == signal.SIGINT and old == signal.SIG_IGN:
                continue
            previous[sig] = old
            signal.signal(sig, self._on_signal)
        return previous

    def _should_stop(self, max_steps: int) -> str | None:
        """Why to stop before the next step, or None. Under DDP the ranks agree (any one stops all)."""
        reason, clocks = None, self.clocks()
        if max_steps and self.step >= max_steps:
            reason = "finished"
        elif self.cfg.max_time and clocks["elapsed"] >= self.cfg.max_time:
            reason = "max_time"
        elif self.cfg.max_cpu_time and clocks["cpu_time"] >= self.cfg.max_cpu_time:
            reason = "max_time"
        elif self.stop_requested:
            reason = self.stop_requested
        if self.world > 1:
            # One all-reduce agrees on the stop (MAX of the codes) and sums the ranks' CPU seconds,
            # so cpu_time and --max-cpu-time count the whole run, not rank 0 alone.
            codes = ["finished", "max_time", "interrupted", "terminated", "stopped"]
            mine = time.process_time() - self.cpu_start
            flag = torch.zeros(self.world + 1, dtype=torch.float64, device=self.device)
            flag[0] = codes.index(reason) + 1 if reason else 0
            flag[1 + self.rank] = mine
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            self.cpu_others = float(flag[1:].sum()) - mine
            reason = codes[int(flag[0]) - 1] if int(flag[0]) else None
            if reason is None and self.cfg.max_cpu_time and self.clocks()["cpu_time"] >= self.cfg.max_cpu_time:
                reason = "max_time"  # every rank holds the same sum, so all of them stop here
        return reason

    def train_step(self, epoch_batches: list[list[int]], max_steps: int = 0) -> tuple[dict[str, Any], list[list[int]]]:
        """One optimizer step over `accumulate` batches; returns its numbers and the epoch's batches.
        max_steps: the run's step budget (0 = none), which a --cooldown counts back from."""
        cfg, pad = self.cfg, self.model_cfg.pad_id
        lr = noam_lr(self.step + 1, self.model_cfg.d_model, cfg.warmup, cfg.lr_scale)
        lr *= cooldown_factor(self.step + 1, max_steps, cfg.cooldown)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        loss_sum, n_tokens, n_in, align_sum, align_rows = 0.0, 0, 0, 0.0, 0
        for micro in range(cfg.accumulate):
            if self.batch_in_epoch >= len(epoch_batches):
                self.epoch, self.batch_in_epoch = self.epoch + 1, 0
                epoch_batches = self.batches_for_epoch(self.epoch)
            batch = [self.data.train[i] for i in epoch_batches[self.batch_in_epoch]]
            self.batch_in_epoch += 1
            src, tgt_in, tgt_out = (t.to(self.device, non_blocking=True) for t in collate(batch, pad))
            # Gradients are all-reduced only on the last micro-batch of an accumulated step.
            sync = micro == cfg.accumulate - 1 or self.world == 1
            ctx = nullcontext() if sync or not hasattr(self.net, "no_sync") else self.net.no_sync()
            with ctx:
                with autocast_context(self.device, cfg.precision):
                    if self.guide is None:
                        logits = self.net(src, tgt_in)
                    else:
                        logits, head_attention = self.guide.forward(self.model, src, tgt_in)
                loss, n = label_smoothed_loss(logits, tgt_out, pad, cfg.label_smoothing)
                # Mean over this batch's real target tokens; DDP then averages the ranks.
                scaled = loss / (max(n, 1) * cfg.accumulate)
                if self.guide is not None:  # + λ · the mean cross-entropy over rows that have links
                    a_loss, a_rows = self.guide.loss(head_attention, batch)
                    scaled = scaled + cfg.align_weight * a_loss / (max(a_rows, 1) * cfg.accumulate)
                    align_sum, align_rows = align_sum + float(a_loss.detach()), align_rows + a_rows
                (self.scaler.scale(scaled) if self.scaler else scaled).backward()
            loss_sum += float(loss.detach())
            n_tokens += n
            n_in += int((src != pad).sum()) + int((tgt_in != pad).sum())
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        grad_norm = self._grad_norm()
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        if self.world > 1:  # the log counts every rank's tokens; ranks' batches differ in size
            count = torch.tensor([n_in], device=self.device)
            torch.distributed.all_reduce(count)
            n_in = int(count.item())
        numbers = {"loss": loss_sum / max(n_tokens, 1), "lr": lr, "tokens": n_in, "grad_norm": grad_norm}
        if self.guide is not None:
            numbers["align_loss"] = align_sum / max(align_rows, 1)
        return numbers, epoch_batches

    def _grad_norm(self) -> float:
        """The gradients' global L2 norm before clipping (--clip-norm clips it here): a rise warns of divergence."""
        params = [p for p in self.model.parameters() if p.grad is not None]
        if self.cfg.clip_norm > 0:
            return float(torch.nn.utils.clip_grad_norm_(params, self.cfg.clip_norm))
        if not params:
            return 0.0
        norms = torch.stack([torch.linalg.vector_norm(p.grad.detach().float()) for p in params])
        return float(torch.linalg.vector_norm(norms))

    def run(self) -> dict[str, Any]:
        try:
            return self._run()
        finally:
            if self.lock is not None:
                self.lock.release()
            # Here, not at the end of the loop: a setup that fails (a refused lock) must end it too,
            # or gloo aborts the process at exit.
            if self.world > 1 and torch.distributed.is_initialized():
                torch.distributed.destroy_process_group()

    def _run(self) -> dict[str, Any]:  # noqa: C901 - the training loop: its stops and schedules read best in one place
        cfg = self.cfg
        # Before setup: reading and encoding a large corpus takes minutes, and this needs none of it.
        if not cfg.max_steps and not cfg.epochs and not cfg.max_time and not cfg.max_cpu_time:
            raise ConfigError("give a budget: --max-steps, --epochs, --max-time or --max-cpu-time")
        if cfg.cooldown < 0:
            raise ConfigError(f"--cooldown must be 0 or more steps, not {cfg.cooldown}")
        if cfg.cooldown and not cfg.max_steps and not cfg.epochs:
            raise ConfigError("--cooldown counts back from the step budget: give --max-steps or --epochs")
        if cfg.tensorboard:
            from core.train.tensorboard import check_available

            check_available()  # before minutes of reading data
        self.setup()
        cfg = self.cfg
        if cfg.tensorboard and self.is_main:
            from core.train.tensorboard import TensorBoardLog

            self.callbacks = [*self.callbacks, TensorBoardLog(self.run_dir, asdict(cfg))]
        self._ready_validation()
        self.t_start, self.cpu_start = time.time(), time.process_time()
        start_step = self.step
        self.emit(
            "start",
            self.step,
            params=self.model.num_parameters(),
            device=str(self.device),
            cpu=describe_cpu(),
            world=self.world,
            precision=cfg.precision,
            resumed=self.resume,
            model_config=self.model_cfg.to_dict(),
            **self.data.stats,
        )
        self.model.train()
        last: dict[str, Any] = {}
        window_tokens, window_start = 0, time.time()
        epoch_batches = self.batches_for_epoch(self.epoch)
        steps_per_epoch = max(1, len(epoch_batches) // cfg.accumulate)
        max_steps = cfg.max_steps or (math.ceil(cfg.epochs * steps_per_epoch) if cfg.epochs else 0)
        previous_handlers = self._install_signal_handlers()
        try:
            while not (status := self._should_stop(max_steps)):
                numbers, epoch_batches = self.train_step(epoch_batches, max_steps)
                window_tokens += numbers["tokens"]
                now = time.time()
                log = self.step % max(cfg.log_every, 1) == 0 or self.step == 1
                clocks = self.clocks()
                elapsed = clocks["elapsed"]
                per_step = (now - self.t_start) / (self.step - start_step)
                eta = (max_steps - self.step) * per_step if max_steps else None
                if cfg.max_time:
                    eta = min(eta if eta is not None else math.inf, max(cfg.max_time - elapsed, 0.0))
                last = {
                    **numbers,
                    "tokens_per_s": window_tokens / max(now - window_start, 1e-9),
                    "epoch": self.epoch,
                    **clocks,
                    "eta": eta,
                    "max_steps": max_steps,
                    "log": log,
                }
                self.emit("step", self.step, **last)
                if log:
                    window_tokens, window_start = 0, now
                if cfg.valid_every and self.step % cfg.valid_every == 0:
                    self.do_validation()
                if cfg.save_every and self.step % cfg.save_every == 0 and self.is_main:
                    self.save_checkpoint()
            # A stop request means "out now": skip the last validation (it can take minutes).
            if status in ("finished", "max_time") and cfg.valid_every and self.step % cfg.valid_every:
                self.do_validation()
            if self.is_main and (not self.checkpoints() or self.checkpoints()[-1].name != f"step_{self.step:08d}"):
                self.save_checkpoint()
            if self.is_main and (not cfg.valid_every or not (self.run_dir / "model.safetensors").exists()):
                # no validation: the last weights
                save_model(self.model, self.data.tokenizer, self.run_dir, extra_metadata=self.model_metadata)
            self.emit("end", self.step, status=status, elapsed=self.elapsed_before + time.time() - self.t_start)
        finally:
            for sig, handler in previous_handlers.items():
                signal.signal(sig, handler)
        return {
            "status": status,
            "step": self.step,
            "run_dir": str(self.run_dir),
            **{k: v for k, v in last.items() if k != "log"},
        }
