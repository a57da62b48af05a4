"""`tt eval`: translate a test set and score it against references with sacreBLEU (BLEU and chrF)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from core.decode.method import method_of
from tt_cli.errors import EXIT_USAGE, fail
from tt_cli.options import (
    AlphaOpt,
    BatchOpt,
    BeamOpt,
    DeviceOpt,
    ErrorsChoice,
    ErrorsOpt,
    EvalQuantizeOpt,
    GreedyOpt,
    ModelOpt,
    RerankOpt,
    ThreadsOpt,
    load_model_in,
    model_of_direction,
    set_threads,
)

if TYPE_CHECKING:
    from core.evaluate import Scores


def _read_all(path: Path, errors: str) -> list[str]:
    from core.decode.translate import read_lines
    from core.errors import DataError

    if not path.is_file():
        raise DataError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    with open(path, "rb") as f:
        return list(read_lines(f, str(path), errors))


def evaluate(
    src: Annotated[Optional[Path], typer.Option("--src", help="Source sentences (French), one per line.")] = None,
    ref: Annotated[
        Optional[list[Path]],
        typer.Option("--ref", help="Reference translations, line-aligned with --src; repeat for several."),
    ] = None,
    model: ModelOpt = None,
    source: Annotated[
        Optional[str], typer.Option("--from", help="Source language (fr, en): the shipped model of that direction.")
    ] = None,
    target: Annotated[Optional[str], typer.Option("--to", help="Target language (en, fr), as --from.")] = None,
    device: DeviceOpt = "auto",
    beam: BeamOpt = 4,
    alpha: AlphaOpt = 0.6,
    greedy: GreedyOpt = False,
    rerank: RerankOpt = False,
    batch_size: BatchOpt = 32,
    threads: ThreadsOpt = 0,
    quantize: EvalQuantizeOpt = None,
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="Also write the translations to FILE (atomically; - = stdout)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the table.")] = False,
    errors: ErrorsOpt = ErrorsChoice.strict,
    testset: Annotated[
        Optional[str],
        typer.Option(
            "--testset",
            "-t",
            help="Score on a standard test set instead of --src/--ref, through sacreBLEU's own data: e.g. wmt14 "
            "(newstest2014), wmt15, wmt13. sacreBLEU fetches it once into $SACREBLEU (default ~/.sacrebleu).",
        ),
    ] = None,
    langpair: Annotated[str, typer.Option("--langpair", "-l", help="The --testset's language pair.")] = "fr-en",
) -> None:
    """Translate --src (or a --testset) and score it against --ref with sacreBLEU: corpus BLEU and chrF
    with their signatures, time taken and sentences per second. Defaults: beam 4, α 0.6; the model is
    --model, else $TT_MODEL, else the shipped one.

    Exit codes: 0 ok · 1 bad input, model or option · 2 usage · 130 interrupted.
    """
    from core.decode.method import CHANNEL_WEIGHT
    from core.decode.translate import TranslateOptions

    options = TranslateOptions(
        beam=beam,
        alpha=alpha,
        method=method_of(greedy),
        batch_size=batch_size,
        rerank=CHANNEL_WEIGHT if rerank else 0.0,
    ).validate()
    if output is not None:
        from core.files import check_output

        check_output(output)  # before the translating, not after it
    model = model_of_direction(model, source, target)
    if source and target and langpair == "fr-en":  # a --testset in the direction asked
        langpair = f"{source}-{target}"
    sources, references = _inputs(src, ref, testset, langpair, errors.value)
    set_threads(threads, few=False)
    from core.card import fast_mode

    mode = fast_mode(quantize.value) if quantize else None
    report = run(load_model_in(model, device, mode, reverse=rerank), sources, references, options, mode)
    if output is not None:
        from core.files import atomic_write_bytes

        atomic_write_bytes(output, "".join(h + "\n" for h in report.hypotheses).encode("utf-8"))
    (_write_json if json_out else _write_table)(report, options, testset and (testset, langpair))


def _inputs(src: Path | None, ref: list[Path] | None, testset: str | None, langpair: str, errors: str):
    """Sources and reference sets, read and checked before the (slow) model load: a mismatch fails at once."""
    from core.errors import DataError

    if testset is not None:
        if src is not None or ref:
            raise fail("give --testset or --src/--ref, not both", EXIT_USAGE)
        from core.data.testsets import load_testset

        loaded_set = load_testset(testset, langpair)
        return loaded_set.sources, loaded_set.references
    if src is None or not ref:
        raise fail("give --src FILE and --ref FILE, or --testset NAME (e.g. --testset wmt14)", EXIT_USAGE)
    sources = _read_all(src, errors)
    if not sources:
        raise DataError(f"{src}: empty, nothing to evaluate")
    references = [_read_all(r, errors) for r in ref]
    for path, lines in zip(ref, references):
        if len(lines) != len(sources):
            raise DataError(f"{path} has {len(lines)} lines but {src} has {len(sources)}; they must be line-aligned")
    return sources, references


@dataclass(frozen=True)
class Report:
    hypotheses: list[str]
    scores: Scores
    seconds: float
    model: Path
    quantize: str | None = None  # the --quantize mode scored; None: the fp32 model

    @property
    def rate(self) -> float:
        """Sentences per second."""
        return len(self.hypotheses) / self.seconds if self.seconds > 0 else float("inf")


def run(loaded, sources: list[str], references: list[list[str]], options, quantize: str | None = None) -> Report:
    """Translate `sources` (a progress bar on stderr when it is a terminal) and score them."""
    from core.decode.translate import translate_lines
    from core.evaluate import corpus_scores
    from tt_cli.progress import line_progress

    hypotheses: list[str] = []
    warnings = 0
    start = time.perf_counter()
    progress = line_progress(len(sources))
    with progress:
        task = progress.add_task("translate", total=len(sources))
        for t in translate_lines(loaded, sources, options):
            hypotheses.append(t.text)
            warnings += len(t.warnings)
            progress.advance(task)
    seconds = time.perf_counter() - start
    if warnings:
        print(f"tt: warning: {warnings} input line(s) were cleaned or truncated (see tt translate)", file=sys.stderr)
    return Report(hypotheses, corpus_scores(hypotheses, references), seconds, loaded.path, quantize)


def _write_json(report: Report, options, testset: tuple[str, str] | None) -> None:
    scores = report.scores
    result = {
        "bleu": scores.bleu,
        "chrf": scores.chrf,
        "bleu_signature": scores.bleu_signature,
        "chrf_signature": scores.chrf_signature,
        "sentences": len(report.hypotheses),
        "seconds": round(report.seconds, 3),
        "sentences_per_second": round(report.rate, 2),
        "model": str(report.model),
        "quantize": report.quantize,
        **({"testset": testset[0], "langpair": testset[1]} if testset else {}),
        "decoding": {
            "method": options.search,
            "beam": options.beam if options.search == "beam" else None,
            "alpha": options.alpha if options.search == "beam" else None,
            **({"rerank": options.rerank} if options.rerank else {}),  # λ of --rerank
        },
    }
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")


def _write_table(report: Report, options, testset: tuple[str, str] | None) -> None:
    scores = report.scores
    decoding = "greedy" if options.search == "greedy" else f"beam {options.beam}, α {options.alpha}"
    if options.rerank:
        decoding += f", reranked by the reverse model (λ {options.rerank})"
    if testset:
        decoding += f", {testset[0]} {testset[1]}"
    sys.stdout.write(
        f"BLEU  {scores.bleu:6.2f}  {scores.bleu_signature}\n"
        f"chrF  {scores.chrf:6.2f}  {scores.chrf_signature}\n"
        f"{len(report.hypotheses)} sentences in {report.seconds:.1f} s ({report.rate:.1f} sentences/s, {decoding}, "
        f"{report.model})\n"
    )
