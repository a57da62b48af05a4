"""What a training run is asked to do: `tt train`'s options as one dataclass (saved as train_config.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.model.config import ModelConfig, preset


@dataclass
class TrainConfig:
    data: list[str]  # TSV files or prefixes P (P.fr + P.en)
    out: str  # the run directory
    valid: list[str] = field(default_factory=list)  # explicit validation data; else split off
    preset: str = "small"
    model_overrides: dict[str, Any] = field(default_factory=dict)  # any ModelConfig field
    src_lang: str = "fr"
    tgt_lang: str = "en"
    swap: bool = False  # train target→source: every --data/--valid pair read the other way round
    vocab_size: int = 8000
    byte_fallback: bool = False  # the trained vocabulary writes a character it lacks as UTF-8 bytes, not <unk>
    spm_model: str | None = None  # reuse an existing SentencePiece model instead of training one
    init_from: str | None = None  # fine-tune: start from this model directory's weights, config and tokenizer
    strict: bool = True  # a malformed line is an error; False skips and counts it
    max_pieces: int = 128  # drop pairs with more pieces than this on either side (the model's own
    # max_len, its positional table, is ModelConfig.max_len; runs saved before the rename say max_len)
    max_ratio: float = 3.0  # drop pairs whose length ratio exceeds this
    dedup: bool = True  # drop exact repeats of a (source, target) pair
    clean: bool = True  # the cleaning rules of core/data/clean.py (each counted in the log)
    cache_dir: str | None = None  # tokenized shards (core/data/cache.py); None = <out>/cache
    data_weights: list[float] = field(default_factory=list)  # one per --data: its weight in the mix
    mix_temperature: float = 1.0  # 1 = corpora in their own proportions; larger evens them out (core/data/mix.py)
    valid_max: int = 1000  # held-out pairs per corpus used for validation (0 = all)
    spm_sample: int = 1_000_000  # sentences the tokenizer is trained on, drawn as the mixing draws
    noise_case: float = 0.0  # share of pairs added in capitals and with a lower-case source (core/data/augment.py)
    noise_accents: float = 0.0  # share of pairs added with an accent-less source
    # share of training pairs whose protected spans (URLs, dates, code…) become <ph0>… on both sides
    # (core/data/placeholders.py); > 0 puts the pieces in the vocabulary and the model's card
    placeholders: float = 0.0
    valid_per_mille: int = 10  # held out for validation (by sentence hash) when --valid is not given
    test_per_mille: int = 0  # held out as a test set, written to the run directory as test.<lang>
    max_tokens: int = 4096  # batch budget: source + target pieces, padding included
    lr_scale: float = 1.0  # multiplies the paper's d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
    warmup: int = 4000
    cooldown: int = 0  # the last this many steps of the step budget: the learning rate falls linearly to 0
    label_smoothing: float = 0.1
    clip_norm: float = 0.0  # 0 = no clipping
    accumulate: int = 1  # batches per optimizer step
    device: str = "auto"
    precision: str = "fp32"  # auto | fp32 | bf16 | fp16; `tt train` passes auto, which setup() settles
    compile: bool = False
    max_steps: int = 0  # 0 = no limit
    epochs: float = 0.0  # 0 = no limit
    max_time: float = 0.0  # seconds; 0 = no limit
    max_cpu_time: float = 0.0  # seconds of this process's CPU time; 0 = no limit (fair budgets on a shared machine)
    valid_every: int = 1000  # steps
    save_every: int = 1000  # steps
    keep_last: int = 5
    log_every: int = 50  # steps between lines in metrics.jsonl (1 = every step)
    bleu_sample: int = 200  # validation sentences translated greedily for BLEU/chrF
    tensorboard: bool = False  # also log to TensorBoard event files in <out>/tensorboard (core/train/tensorboard.py)
    seed: int = 1
    threads: int = 0  # torch intra-op threads on CPU; 0 = torch's default
    align_links: str | None = None  # Pharaoh links per training pair: guided alignment (core/train/align_loss.py)
    align_layer: int = -2  # the decoder layer whose head is guided (Garg et al. 2019 use the penultimate)
    align_head: int = 0  # an index; `tt train --align-head` counts from 1
    align_weight: float = 0.05  # λ: the alignment loss's weight next to the translation loss (Garg et al.'s value)
    align_full_context: bool = (
        False  # the guided head reads the whole target (a second, unmasked decoder pass; Garg et al. §4.3)
    )
    concat: float = 0.0  # add this many joined examples per training example (core/train/prepare.py: join_for_length)
    concat_max: int = 4  # a joined example holds 2 .. this many pairs

    def model_config(self, vocab_size: int) -> ModelConfig:
        overrides = {k: v for k, v in self.model_overrides.items() if v is not None}
        overrides.setdefault("max_len", max(self.max_pieces + 2, preset(self.preset).max_len))
        return preset(self.preset, vocab_size=vocab_size, **overrides)
