"""`tt train`: one command from parallel text to a model directory `tt translate --model` loads."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from tt_cli.errors import EXIT_USAGE, fail
from tt_cli.options import DeviceOpt, ThreadsOpt, in_panel, layer_head_indices, set_threads

NO_DATA = (
    "no training data: pass --data FILE.tsv (source<TAB>target per line) or --data PREFIX "
    "(PREFIX.fr + PREFIX.en), or fetch a corpus with `tt data get tatoeba`"
)
EXIT_BY_STATUS = {"interrupted": 130, "terminated": 143}  # 128 + the signal's number, as shells report it

# Option name -> ModelConfig field (they go to TrainConfig.model_overrides).
MODEL_OPTIONS = {
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
# Option name -> TrainConfig field, where the names differ.
TRAIN_OPTIONS = {"skip_bad_lines": "strict", "data_weight": "data_weights"}
# What a run saved before an option existed did without it: its --resume keeps doing without.
LEGACY_DEFAULTS = {"clean": False, "dedup": False}
CLI_ONLY = {"ctx", "resume", "quiet", "plain"}
TrainDeviceOpt = in_panel(DeviceOpt, "Training")
TrainThreadsOpt = in_panel(ThreadsOpt, "Training")


class Precision(str, Enum):
    auto = "auto"
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"


def parse_duration(text: str | None, option: str = "--max-time") -> float:
    """'5400', '90s', '45m', '2h', '1h30m' -> seconds."""
    from core.errors import ConfigError

    if not text:
        return 0.0
    text = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    match = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?", text)
    if not match or not any(match.groups()):
        raise ConfigError(f"{option} {text!r}: give seconds or a duration like 90m, 2h or 1h30m")
    h, m, s = (float(g) if g else 0.0 for g in match.groups())
    return h * 3600 + m * 60 + s


class Notices:
    """What the start of a run says that the user did not ask for: a warmup the run never finishes
    (the learning rate stays near zero), a smaller vocabulary than --vocab-size (SentencePiece stops
    when the text holds no more pieces); and the step it began at."""

    def __init__(self, cfg, err, quiet: bool) -> None:
        self.cfg, self.err, self.quiet, self.start_step = cfg, err, quiet, None

    def __call__(self, event) -> None:
        if event.kind != "start" or self.start_step is not None:
            return
        self.start_step = event.step
        if self.quiet:  # only errors and the result
            return
        learned = (event.data.get("model_config") or {}).get("vocab_size")
        trained_here = not (event.data.get("resumed") or self.cfg.spm_model or self.cfg.init_from)
        cfg = self.cfg
        if not event.data.get("resumed") and cfg.max_steps and cfg.warmup >= cfg.max_steps:
            self.err.print(
                f"tt: note: --warmup {cfg.warmup} is not shorter than --max-steps {cfg.max_steps}: the learning "
                "rate stays on its ramp near zero and the model learns little (an untrained model ends every "
                f"translation at once: empty lines); try --warmup {max(1, cfg.max_steps // 10)}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        if trained_here and learned is not None and learned < self.cfg.vocab_size:
            self.err.print(
                f"tt: note: the vocabulary has {learned} pieces, fewer than --vocab-size {self.cfg.vocab_size}: "
                "the training text holds no more (more text, or a smaller --vocab-size, makes them agree)",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )


def _config_from_options(ctx: typer.Context, options: dict[str, Any]):  # noqa: C901 - one independent mapping per option, each a line
    """A TrainConfig from the options; with --resume, the run's stored one with the given options on top."""
    from dataclasses import fields, replace

    from core.errors import CheckpointError
    from core.train.config import TrainConfig
    from core.train.state import list_checkpoints, read_trainer_info

    def value(name: str) -> Any:
        v = options[name]
        if isinstance(v, Enum):
            v = v.value
        if name == "skip_bad_lines":
            return not v
        if name in ("max_time", "max_cpu_time"):
            return parse_duration(v, "--" + name.replace("_", "-"))
        if name in ("data", "valid"):
            return [str(p) for p in v or []]
        if name == "data_weight":
            return list(v or [])
        # --align-layer and --align-head count from 1; TrainConfig keeps indices
        if name == "align_layer":
            return layer_head_indices(v, None, "align-")[0]
        if name == "align_head":
            return layer_head_indices(-1, v, "align-")[1]
        if name in ("spm_model", "align_links", "init_from", "cache_dir"):
            return str(v) if v else None
        if name == "out":
            return str(v)
        return v

    def typed(name: str) -> bool:
        # By name: typer 0.29 vendors click, so its ParameterSource enum is private.
        source = ctx.get_parameter_source(name)
        return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")

    given = {name for name in options if name not in CLI_ONLY and typed(name)}
    if options["resume"]:
        found = list_checkpoints(options["out"])
        if not found:
            raise CheckpointError(f"{options['out']}: nothing to resume (no checkpoints/ in the run directory)")
        stored = read_trainer_info(found[-1]).get("train_config", {})
        if "max_len" in stored:  # runs started before TrainConfig.max_len became max_pieces
            stored.setdefault("max_pieces", stored.pop("max_len"))
        known = {f.name for f in fields(TrainConfig)}
        cfg = TrainConfig(**{**LEGACY_DEFAULTS, **{k: v for k, v in stored.items() if k in known}})
        names = given  # the run's own settings, except what this command line changes
    else:
        if not options["data"]:
            from core.errors import DataError

            raise DataError(NO_DATA)
        cfg = TrainConfig(data=[], out="")
        names = {n for n in options if n not in CLI_ONLY}
    overrides, changes = dict(cfg.model_overrides), {}
    for name in names:
        if name in MODEL_OPTIONS:
            if options[name] is not None:
                overrides[MODEL_OPTIONS[name]] = value(name)
        else:
            changes[TRAIN_OPTIONS.get(name, name)] = value(name)
    return replace(cfg, **{**changes, "model_overrides": overrides, "out": str(options["out"])})


def train(
    ctx: typer.Context,
    data: Annotated[
        list[Path] | None,
        typer.Option(
            "--data",
            "-d",
            help="Training data: a TSV file (source<TAB>target) or a prefix P with P.fr + P.en; plain, .gz, .xz or .bz2. Repeat for several corpora; NAME=P1,P2 trains several files as one corpus.",
            rich_help_panel="Data",
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The run directory; the best model lands at its top level.")
    ] = Path("runs/default"),
    valid: Annotated[
        list[Path] | None,
        typer.Option(
            "--valid",
            help="Validation data (same forms as --data); without it, a hash-based share of --data is held out.",
            rich_help_panel="Data",
        ),
    ] = None,
    src_lang: Annotated[
        str,
        typer.Option(
            help="Source language: the suffix of prefix data (P.fr); a TSV named by its languages (fra-eng.tsv) is read the way round it asks for.",
            rich_help_panel="Data",
        ),
    ] = "fr",
    tgt_lang: Annotated[
        str,
        typer.Option(
            help="Target language, as --src-lang. --src-lang en --tgt-lang fr trains English→French from the same data.",
            rich_help_panel="Data",
        ),
    ] = "en",
    swap: Annotated[
        bool,
        typer.Option(
            "--swap",
            help="Train the other direction: each pair's second side (a TSV's second column) becomes the source. --src-lang/--tgt-lang do the same for prefix data and for a TSV named by its languages.",
            rich_help_panel="Data",
        ),
    ] = False,
    skip_bad_lines: Annotated[
        bool,
        typer.Option(
            "--skip-bad-lines",
            help="Skip and count malformed lines instead of stopping at the first.",
            rich_help_panel="Data",
        ),
    ] = False,
    max_pieces: Annotated[
        int,
        typer.Option(help="Drop training pairs longer than this many pieces on either side.", rich_help_panel="Data"),
    ] = 128,
    max_ratio: Annotated[
        float, typer.Option(help="Drop training pairs whose length ratio exceeds this.", rich_help_panel="Data")
    ] = 3.0,
    dedup: Annotated[
        bool, typer.Option("--dedup/--no-dedup", help="Drop repeated (source, target) pairs.", rich_help_panel="Data")
    ] = True,
    clean: Annotated[
        bool,
        typer.Option(
            "--clean/--no-clean",
            help="Drop empty, one-sided, over-long, unequal, untranslated and wrong-language pairs, and restore Europarl's lost 'œ'; each rule counted in the log.",
            rich_help_panel="Data",
        ),
    ] = True,
    data_weight: Annotated[
        list[float] | None,
        typer.Option(
            "--data-weight",
            help="A weight per --data corpus, in order, multiplying its share of each epoch.",
            rich_help_panel="Data",
        ),
    ] = None,
    mix_temperature: Annotated[
        float,
        typer.Option(
            help="Corpus mixing: 1 keeps the corpora's own proportions; 5 moves toward equal shares, so a small corpus is not drowned by a large one.",
            rich_help_panel="Data",
        ),
    ] = 1.0,
    valid_max: Annotated[
        int,
        typer.Option(help="Held-out pairs per corpus used for validation (0 = all).", rich_help_panel="Data"),
    ] = 1000,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where the tokenized corpora are kept (default: OUT/cache); runs with the same tokenizer can share one.",
            rich_help_panel="Data",
        ),
    ] = None,
    spm_sample: Annotated[
        int,
        typer.Option(help="Sentences the tokenizer is trained on, drawn as the mixing draws.", rich_help_panel="Data"),
    ] = 1_000_000,
    noise_case: Annotated[
        float,
        typer.Option(
            help="Share of pairs added in capitals, and again with a lower-case source (robust to how people type).",
            rich_help_panel="Data",
        ),
    ] = 0.0,
    noise_accents: Annotated[
        float,
        typer.Option(help="Share of pairs added with the accents of the source dropped.", rich_help_panel="Data"),
    ] = 0.0,
    placeholders: Annotated[
        float,
        typer.Option(
            help="Share of training pairs (0-1, e.g. 0.15) whose URLs, e-mail, dates, times, code, markup… found in "
            "both sides become <ph0>…<ph9> there, pieces the model learns to copy and tt translate then uses "
            "(its card lists them). With --init-from a shipped model, its vocabulary and embeddings grow by the "
            "10 pieces.",
            min=0.0,
            max=1.0,
            rich_help_panel="Data",
        ),
    ] = 0.0,
    valid_per_mille: Annotated[
        int,
        typer.Option(
            help="Share of --data held out for validation, per mille (without --valid).", rich_help_panel="Data"
        ),
    ] = 10,
    test_per_mille: Annotated[
        int,
        typer.Option(
            help="Share held out as a test set, written to the run dir as test.fr/test.en.", rich_help_panel="Data"
        ),
    ] = 0,
    vocab_size: Annotated[
        int,
        typer.Option(
            help="Pieces in the joint SentencePiece vocabulary trained on the training text.", rich_help_panel="Data"
        ),
    ] = 8000,
    byte_fallback: Annotated[
        bool,
        typer.Option(
            "--byte-fallback",
            help="The trained vocabulary writes a character it lacks as its UTF-8 bytes instead of <unk>: no "
            "character is lost (256 of its pieces are bytes).",
            rich_help_panel="Data",
        ),
    ] = False,
    spm_model: Annotated[
        Path | None, typer.Option(help="Use this SentencePiece model instead of training one.", rich_help_panel="Data")
    ] = None,
    init_from: Annotated[
        Path | None,
        typer.Option(
            help="Fine-tune: start from this model directory (its weights, architecture and vocabulary; a fresh optimizer). Use a short --warmup and a small --lr-scale.",
            rich_help_panel="Model",
        ),
    ] = None,
    preset: Annotated[
        str,
        typer.Option(
            help="Model size: tiny, small, base (the paper's base), big, mini (a first run in minutes) or student (6+2 layers, the CPU shape of docs/model.md).",
            rich_help_panel="Model",
        ),
    ] = "small",
    d_model: Annotated[int | None, typer.Option(help="Width of the residual stream.", rich_help_panel="Model")] = None,
    heads: Annotated[int | None, typer.Option(help="Attention heads h.", rich_help_panel="Model")] = None,
    encoder_layers: Annotated[int | None, typer.Option(help="Encoder layers N.", rich_help_panel="Model")] = None,
    decoder_layers: Annotated[int | None, typer.Option(help="Decoder layers N.", rich_help_panel="Model")] = None,
    d_ff: Annotated[
        int | None,
        typer.Option(
            help="Inner width of the feed-forward network. With --init-from: a wider one grows the model's FFN "
            "without changing its outputs (core/model/grow.py).",
            rich_help_panel="Model",
        ),
    ] = None,
    dropout: Annotated[
        float | None, typer.Option(help="P_drop on sub-layer outputs and embeddings.", rich_help_panel="Model")
    ] = None,
    attention_dropout: Annotated[
        float | None, typer.Option(help="Dropout on the attention weights.", rich_help_panel="Model")
    ] = None,
    max_len: Annotated[
        int | None, typer.Option(help="Longest sequence the model takes, in pieces.", rich_help_panel="Model")
    ] = None,
    positional: Annotated[
        str | None, typer.Option(help="sinusoidal or learned positions.", rich_help_panel="Model")
    ] = None,
    norm: Annotated[
        str | None, typer.Option(help="post (the paper's Add & Norm) or pre.", rich_help_panel="Model")
    ] = None,
    share_embeddings: Annotated[
        bool | None,
        typer.Option(
            "--share-embeddings/--no-share-embeddings",
            help="One matrix for source, target and output (§3.4).",
            rich_help_panel="Model",
        ),
    ] = None,
    max_tokens: Annotated[
        int,
        typer.Option(help="Batch budget in pieces (source + target, padding included).", rich_help_panel="Training"),
    ] = 4096,
    label_smoothing: Annotated[float, typer.Option(help="ε_ls of §5.4.", rich_help_panel="Training")] = 0.1,
    warmup: Annotated[
        int, typer.Option(help="Warm-up steps of the learning-rate schedule (§5.3).", rich_help_panel="Training")
    ] = 4000,
    lr_scale: Annotated[
        float, typer.Option(help="Multiplies the paper's learning-rate schedule.", rich_help_panel="Training")
    ] = 1.0,
    cooldown: Annotated[
        int,
        typer.Option(
            help="End on a cool-down: over the last this many steps before --max-steps (or --epochs) the learning rate falls in a straight line to 0 (0 = off). With --resume, ends a long run: --max-steps STEP+N --cooldown N.",
            rich_help_panel="Training",
        ),
    ] = 0,
    clip_norm: Annotated[
        float, typer.Option(help="Clip the gradient norm to this (0 = off).", rich_help_panel="Training")
    ] = 0.0,
    accumulate: Annotated[int, typer.Option(help="Batches per optimizer step.", rich_help_panel="Training")] = 1,
    device: TrainDeviceOpt = "auto",
    precision: Annotated[
        Precision,
        typer.Option(
            help="auto = bf16 where the CPU (AVX512-BF16, AMX) or GPU computes it natively, else fp32; or fp32, bf16, fp16 (fp16 needs CUDA). The first output line says which.",
            rich_help_panel="Training",
        ),
    ] = Precision.auto,
    compile: Annotated[
        bool,
        typer.Option(
            "--compile", help="torch.compile the model (slow start, faster steps on GPU).", rich_help_panel="Training"
        ),
    ] = False,
    seed: Annotated[int, typer.Option(help="Seeds weights, dropout and batch order.", rich_help_panel="Training")] = 1,
    threads: TrainThreadsOpt = 0,
    concat: Annotated[
        float,
        typer.Option(
            help="Add this many examples per training pair (0.5 = half as many again) made of 2..--concat-max random pairs side by side: long inputs for a short-sentence corpus.",
            rich_help_panel="Data",
        ),
    ] = 0.0,
    concat_max: Annotated[
        int, typer.Option(help="Most pairs in one joined example (--concat).", rich_help_panel="Data")
    ] = 4,
    align_links: Annotated[
        Path | None,
        typer.Option(
            help="Guided alignment: Pharaoh links ('i-j', 0-based words), one line per pair of --data (see scripts/silver_links.py).",
            rich_help_panel="Alignment",
        ),
    ] = None,
    align_layer: Annotated[
        int,
        typer.Option(
            help="Decoder layer of the guided head, counted from 1 (-2 = the penultimate).", rich_help_panel="Alignment"
        ),
    ] = -2,
    align_head: Annotated[int, typer.Option(help="The guided head, counted from 1.", rich_help_panel="Alignment")] = 1,
    align_weight: Annotated[
        float, typer.Option(help="Weight λ of the alignment loss.", rich_help_panel="Alignment")
    ] = 0.05,
    align_full_context: Annotated[
        bool,
        typer.Option(
            "--align-full-context",
            help="Train the guided head on a second decoder pass without the look-ahead mask, so it reads the whole target (Garg et al. 2019, §4.3); `tt align` reads it the same way.",
            rich_help_panel="Alignment",
        ),
    ] = False,
    max_steps: Annotated[
        int, typer.Option(help="Stop after this many steps (0 = no limit).", rich_help_panel="Budget")
    ] = 0,
    epochs: Annotated[
        float, typer.Option(help="Stop after this many passes over the data (0 = no limit).", rich_help_panel="Budget")
    ] = 0.0,
    max_time: Annotated[
        str | None, typer.Option(help="Stop after this long: seconds, or 90m, 2h, 1h30m.", rich_help_panel="Budget")
    ] = None,
    max_cpu_time: Annotated[
        str | None,
        typer.Option(
            help="Stop after this much CPU time of the run (all threads; same forms as --max-time): equal budgets on a shared machine.",
            rich_help_panel="Budget",
        ),
    ] = None,
    valid_every: Annotated[
        int,
        typer.Option(
            help="Validate every this many steps (0 = never; the model is then the last weights).",
            rich_help_panel="Checkpoints",
        ),
    ] = 1000,
    bleu_sample: Annotated[
        int, typer.Option(help="Validation sentences translated for BLEU/chrF.", rich_help_panel="Checkpoints")
    ] = 200,
    save_every: Annotated[
        int, typer.Option(help="Checkpoint every this many steps (0 = only at the end).", rich_help_panel="Checkpoints")
    ] = 1000,
    keep_last: Annotated[int, typer.Option(help="Checkpoints to keep (0 = all).", rich_help_panel="Checkpoints")] = 5,
    log_every: Annotated[
        int, typer.Option(help="Steps between lines of metrics.jsonl.", rich_help_panel="Checkpoints")
    ] = 50,
    tensorboard: Annotated[
        bool,
        typer.Option(
            "--tensorboard",
            help="Also log to TensorBoard (OUT/tensorboard: loss, lr, grad norm, tokens/s, each validation set, "
            "the config): tensorboard --logdir OUT. Needs the tensorboard extra: pip install 'tt[tensorboard]'.",
            rich_help_panel="Checkpoints",
        ),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue the run in --out from its last checkpoint, with its own settings (options given here override them).",
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress display; only errors and the result.")
    ] = False,
    plain: Annotated[
        bool,
        typer.Option(
            "--plain",
            help="On a terminal too, a line per logged step instead of the live learning curve and progress bar "
            "(as in a log file).",
        ),
    ] = False,
) -> None:
    """Train a Transformer on parallel text; print the model directory it writes.

    On a terminal the learning curve (training loss, each validation set's loss and BLEU) is drawn live
    above the progress bar; `tt runs show OUT` draws it again later. Under torchrun every process
    trains on its own share of the batches (DDP); only the first writes. Ctrl-C or SIGTERM saves a
    checkpoint first; --resume continues exactly from it.
    """
    options = dict(locals())  # first, so it holds exactly the parameters
    from rich.console import Console

    from core.train.trainer import Trainer
    from tt_cli.progress import TrainProgress, duration

    if byte_fallback and (spm_model or init_from):
        given = "--spm-model" if spm_model else "--init-from"
        raise fail(f"--byte-fallback shapes the vocabulary tt train trains; {given} brings its own", EXIT_USAGE)
    set_threads(threads, few=False)
    cfg = _config_from_options(ctx, options)
    err = Console(stderr=True)
    notices = Notices(cfg, err, quiet)
    with TrainProgress(err, quiet, plain=plain, name=Path(cfg.out).name) as progress:
        trainer = Trainer(cfg, [progress, notices], resume=resume)
        result = trainer.run()
    status, step = result["status"], result["step"]
    if resume and status == "finished" and step == notices.start_step and cfg.max_steps and step >= cfg.max_steps:
        err.print(
            f"tt: the run is already at --max-steps {cfg.max_steps}: nothing to train; "
            f"give a larger --max-steps to go on (tt train --out {cfg.out} --resume --max-steps N)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        print(cfg.out)
        return
    if not trainer.is_main:  # rank 0 speaks for the run; the others only report how it ended
        raise typer.Exit(EXIT_BY_STATUS.get(status, 0))
    if status in EXIT_BY_STATUS:
        err.print(
            f"tt: {status} at step {step}; checkpoint saved. Continue with: tt train --out {cfg.out} --resume",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_BY_STATUS[status])
    if not quiet:
        err.print(
            f"{status} at step {step} after {duration(result.get('elapsed'))}; translate with: tt translate --model {cfg.out}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    print(cfg.out)
