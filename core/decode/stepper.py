"""Greedy decoding of ONE sentence, one step at a time, over the key/value cache (`tt inspect`).

A `Stepper` encodes the source once, then each `.step()` feeds one target piece to the decoder and
keeps what that step saw in a `StepTrace`: the top-k of the next-token distribution, the raw
logits, and the decoder's masked self-attention and cross-attention for that step's query.
`.back()` trims the cache by one position instead of re-decoding, so stepping either way is cheap.
`.branch(at, token)` is the what-if: the same prefix, another piece at step `at`, decoding on.
"""

from __future__ import annotations

import torch

from core.checkpoint import LoadedModel
from core.decode.method import EXTRA_LEN
from core.decode.search import output_limits
from core.decode.source import prepare_source
from core.decode.trace import Candidate, SourceTrace, StepTrace, source_trace, step_trace, top_candidates
from core.errors import TTError
from core.model.attention import HeadMask
from core.model.transformer import DecoderState, Encoded


class Stepper:
    """Step-by-step greedy decoding of one sentence, with forcing, back-stepping and branches.

    Invariant: the decoder cache holds exactly `len(self.steps)` target positions, the inputs
    BOS, y_0 … y_{t-1} that produced steps 0 … t.
    """

    @torch.inference_mode()
    def __init__(
        self,
        loaded: LoadedModel,
        text: str,
        *,
        top_k: int = 10,
        extra_len: int = EXTRA_LEN,
        head_mask: HeadMask | None = None,
        _encoded: tuple[SourceTrace, Encoded, list[str]] | None = None,
    ) -> None:
        self.loaded = loaded
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer
        self.cfg = loaded.cfg
        self.top_k = top_k  # candidates kept in each StepTrace
        self.head_mask = head_mask  # heads switched off in every step (None: the model as trained)
        if _encoded is None:
            _encoded = self._encode(text)
        self.source, self.encoded, self.warnings = _encoded
        src = torch.tensor([self.source.tokens])  # (1, S)
        self.limit = int(output_limits(self.model, src, None, extra_len)[0])  # where greedy stops too
        self.extra_len = extra_len
        self.steps: list[StepTrace] = []
        self.state = self.model.start_state(self.encoded)

    def _encode(self, text: str) -> tuple[SourceTrace, Encoded, list[str]]:
        prepared = prepare_source(self.tokenizer, text, self.cfg.max_len)  # the rule `tt translate` uses
        if not prepared.ids:
            raise TTError("nothing to inspect: the sentence is empty")
        device = next(self.model.parameters()).device
        src = torch.tensor([prepared.ids], dtype=torch.long, device=device)  # (1, S)
        enc = self.model.encode(src, need_weights=True, head_mask=self.head_mask)
        source = source_trace(self.tokenizer, text, prepared.ids, enc)
        return source, Encoded(enc.memory, enc.src_mask, None), prepared.warnings

    # ------------------------------------------------------------------------------ reading
    @property
    def tokens(self) -> list[int]:
        """Output piece ids so far, without EOS."""
        return [s.token for s in self.steps if s.token != self.cfg.eos_id]

    @property
    def finished(self) -> bool:
        if not self.steps:
            return False
        return self.steps[-1].token == self.cfg.eos_id or len(self.steps) >= self.limit

    @property
    def output_text(self) -> str:
        return self.tokenizer.decode(self.tokens)

    @property
    def target_inputs(self) -> list[int]:
        """What the decoder was fed so far: BOS, then every chosen piece but the last."""
        return [self.cfg.bos_id] + [s.token for s in self.steps[:-1]]

    @property
    def score(self) -> float:
        """Sum of the chosen pieces' log-probabilities (EOS included once produced)."""
        return sum(s.logprob for s in self.steps)

    def candidates(self, step: StepTrace, *, top_k: int | None = None, temperature: float = 1.0) -> list[Candidate]:
        """Re-shape a step's distribution live (a view's temperature and top-k controls)."""
        if step.logits is None:
            return step.candidates
        return top_candidates(step.logits, self.tokenizer, top_k or self.top_k, temperature)

    # ------------------------------------------------------------------------------ moving
    @torch.inference_mode()
    def step(self, force: int | None = None) -> StepTrace | None:
        """Decode one more piece: the most probable one, or `force` (a piece id). None when finished."""
        if self.finished:
            return None
        if force is not None and not 0 <= force < self.cfg.vocab_size:
            raise TTError(f"piece id {force} is outside the vocabulary (0..{self.cfg.vocab_size - 1})")
        t = len(self.steps)
        previous = self.cfg.bos_id if t == 0 else self.steps[-1].token
        device = self.encoded.memory.device
        step_input = torch.tensor([[previous]], dtype=torch.long, device=device)  # (1, 1)
        out = self.model.decode(step_input, self.encoded, state=self.state, need_weights=True, head_mask=self.head_mask)
        logits = out.logits[0, -1]  # (vocab,)
        token = int(logits.argmax()) if force is None else int(force)
        new = step_trace(
            self.tokenizer,
            t,
            token,
            logits,
            [a.weights[0, :, -1] for a in out.self_attention],  # per layer (h, t+1)
            [a.weights[0, :, -1] for a in out.cross_attention],  # per layer (h, S)
            top_k=self.top_k,
            forced=force is not None,
        )
        self.steps.append(new)
        return new

    @torch.inference_mode()
    def back(self) -> bool:
        """Undo the last step (its cache position too). False when there is nothing to undo."""
        if not self.steps:
            return False
        self.steps.pop()
        self._trim_cache(len(self.steps))
        return True

    def run(self) -> list[StepTrace]:
        """Step until EOS or the length limit."""
        while self.step() is not None:
            pass
        return self.steps

    @torch.inference_mode()
    def restart(self) -> None:
        self.steps = []
        self.state = self.model.start_state(self.encoded)

    @torch.inference_mode()
    def branch(self, at: int, token: int) -> Stepper:
        """A new Stepper that shares steps 0 … at-1 with this one and takes `token` at step `at`.

        The shared prefix is fed to the decoder in one call to fill the new cache; its traces
        are the original's (the same computation), so only the new step is decoded afresh.
        """
        if not 0 <= at <= len(self.steps):
            raise TTError(f"cannot branch at step {at}: decoded steps are 0..{len(self.steps)}")
        other = Stepper(
            self.loaded,
            self.source.text,
            top_k=self.top_k,
            extra_len=self.extra_len,
            head_mask=self.head_mask,
            _encoded=(self.source, self.encoded, self.warnings),
        )
        if at > 0:
            prefix = [self.cfg.bos_id] + [s.token for s in self.steps[: at - 1]]
            device = self.encoded.memory.device
            prefix_ids = torch.tensor([prefix], device=device)  # (1, at)
            self.model.decode(prefix_ids, self.encoded, state=other.state, head_mask=self.head_mask)
            other.steps = list(self.steps[:at])
        other.step(force=token)
        return other

    def _trim_cache(self, length: int) -> None:
        state: DecoderState = self.state
        for cache in state.self_attn:
            cache.k = cache.k[:, :, :length]  # (1, h, length, d_k)
            cache.v = cache.v[:, :, :length]
        state.length = length
