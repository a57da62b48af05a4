"""How to decode: the one record of the decoding options (TranslateOptions) that the command line, the
REPL, the API, a warm `tt translate`'s request and the server's batcher all carry, and the method a caller's
flags ask for. Light: no torch, so `tt --help`, a warm `tt translate` and the server's request parsing stay
cheap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.errors import ConfigError

Method = Literal["beam", "greedy", "sample"]
METHODS: tuple[Method, ...] = ("beam", "greedy", "sample")
# λ of `--rerank` (core.decode.rerank): the channel model's weight, chosen on newstest2013 in both directions.
CHANNEL_WEIGHT = 0.15
EXTRA_LEN = 50  # output may run this many pieces past the source length (§6.1)


def method_of(greedy: bool, sample: bool = False) -> str:
    """The decoding method --greedy and --sample (or a request's greedy/sample fields) ask for: beam search
    when neither."""
    if greedy and sample:
        raise ConfigError("--greedy and --sample exclude each other")
    return "sample" if sample else "greedy" if greedy else "beam"


@dataclass(frozen=True)
class TranslateOptions:
    """How to decode. The defaults are the paper's (§6.1): beam 4, length penalty α = 0.6."""

    beam: int = 4
    alpha: float = 0.6  # GNMT length penalty ((5 + |Y|) / 6)^α on beam scores
    n_best: int = 1  # hypotheses kept per sentence (beam search only)
    method: Method = "beam"  # beam search, greedy search, or sampling (temperature, top_k, top_p, seed)
    temperature: float = 1.0
    top_k: int = 0  # 0 = no top-k cut
    top_p: float = 1.0  # 1 = no nucleus cut
    seed: int | None = None
    batch_size: int = 32  # sentences per forward pass (each expands into `beam` rows)
    extra_len: int = EXTRA_LEN
    with_attention: bool = False  # also return the StepTraces: every attention matrix (a teacher-forced pass)
    n_candidates: int = 5  # top-k candidates kept in each StepTrace
    rerank: float = 0.0  # λ of core.decode.rerank: the beam's hypotheses reranked with the reverse model; 0 = off

    def validate(self) -> TranslateOptions:
        problems = []
        if self.method not in METHODS:
            problems.append(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.beam < 1:
            problems.append(f"--beam must be at least 1, got {self.beam}")
        if self.n_best < 1:
            problems.append(f"--n-best must be at least 1, got {self.n_best}")
        if self.n_best > 1 and self.method != "beam":
            problems.append("--n-best needs beam search (not --greedy or --sample)")
        if self.n_best > max(self.beam, 1) and self.method == "beam":
            problems.append(f"--n-best ({self.n_best}) cannot exceed --beam ({self.beam})")
        from core.decode.search import check_sampling  # torch: a request's options travel without it

        try:
            check_sampling(self.temperature, self.top_k, self.top_p)
        except ConfigError as exc:
            problems.append(str(exc))
        if self.rerank < 0:
            problems.append(f"rerank weight must be non-negative, got {self.rerank}")
        if self.rerank > 0 and self.method != "beam":
            problems.append("--rerank needs beam search (not --greedy or --sample)")
        if self.alpha < 0:
            problems.append(f"--alpha must be non-negative, got {self.alpha}")
        if self.batch_size < 1:
            problems.append(f"--batch-size must be at least 1, got {self.batch_size}")
        if problems:
            raise ConfigError("; ".join(problems))
        return self

    @property
    def search(self) -> Method:
        """The search that runs: beam search with one beam is greedy search."""
        return "greedy" if self.method == "beam" and self.beam == 1 else self.method
