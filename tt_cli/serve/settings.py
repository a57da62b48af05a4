"""What a server is allowed to do: every limit and knob of `tt serve` in one frozen record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

# Ceilings a request cannot raise: each hypothesis costs a decoder row, so a beam of thousands would
# stall every other client.
MAX_BEAM = 16
MAX_ALTERNATIVES = 8


@dataclass(frozen=True)
class ServeSettings:
    batch_size: int = 32  # sentences decoded together, at most (1 = one request per decode call)
    batch_wait_s: float = 0.005  # how long the first request of a batch waits for others to join it
    queue_size: int = 512  # sentences accepted and not yet answered; beyond it requests get 503
    max_chars: int = 5000  # characters per request (all of q)
    max_sentences: int = 128  # sentences per request (text lines or HTML text runs)
    timeout_s: float = 60.0  # a request not answered by then gets 504
    # A request's head (line and headers) and then its body must each arrive within this; 408 and closed beyond.
    read_timeout_s: float = 30.0
    api_keys: frozenset[str] = frozenset()  # empty = no key needed
    # Origins a browser page may call from: any, as LibreTranslate answers; empty = no CORS headers.
    cors_origins: tuple[str, ...] = ("*",)
    files_kept_s: float = 600.0  # how long a translated file (/translate_file) can be downloaded
    log: TextIO | None = None  # where the JSON-lines log goes (None = stderr)
    retry_after_s: int = 1  # the Retry-After of a 503
    url: str = ""  # where the server listens, for the log
    announce: bool = False  # tell this user's `tt translate` where the server is (serve.announce)

    @property
    def job_sentences(self) -> int:
        """The most sentences the text pipeline hands the batcher as one job: a full request's worth, the most
        the queue is sure to hold (problems() wants queue_size >= max_sentences)."""
        return self.max_sentences

    @property
    def max_body_bytes(self) -> int:
        # Room for max_chars characters written as \uXXXX\uXXXX escapes, plus the other fields.
        return 12 * self.max_chars + 65536

    def problems(self) -> list[str]:
        """What is wrong with these settings, in the words of `tt serve`'s options."""
        out = []
        if self.batch_size < 1:
            out.append(f"--batch-size must be at least 1, got {self.batch_size}")
        if self.batch_wait_s < 0:
            out.append(f"--batch-wait must be non-negative, got {self.batch_wait_s * 1000:g}")
        if self.max_chars < 1:
            out.append(f"--max-chars must be at least 1, got {self.max_chars}")
        if self.max_sentences < 1:
            out.append(f"--max-sentences must be at least 1, got {self.max_sentences}")
        if self.queue_size < self.max_sentences:
            out.append(
                f"--queue-size ({self.queue_size}) must hold at least one full request (--max-sentences {self.max_sentences})"
            )
        if self.timeout_s <= 0:
            out.append(f"--timeout must be positive, got {self.timeout_s:g}")
        if self.read_timeout_s <= 0:
            out.append(f"--read-timeout must be positive, got {self.read_timeout_s:g}")
        return out
