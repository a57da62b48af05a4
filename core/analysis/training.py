"""The notes' training claims — label smoothing and warm-up — read from three short controlled runs.

They need training, so they are not measured on a loaded model: scripts/controlled_runs.py trains a baseline
(ε_ls 0.1, 400 warm-up steps), a run without label smoothing and a run without warm-up, all else equal, and
writes each run's test BLEU to results.json beside them. `controlled_claims(directory)` reads those runs back
(each run's last validation record in its metrics.jsonl, and results.json when it is there) and gives the two
claims with their figures and verdicts; `tt analyze claims --runs DIR` prints them with the rest.
"""

from __future__ import annotations

import json
from pathlib import Path

from core.analysis.verdict import DEPENDS, FAILS, HOLDS, Claim
from core.errors import TTError

RUNS = ("baseline", "no-smoothing", "no-warmup")
BLEU_GAIN = 0.5  # BLEU points that count as "improves BLEU" (below it, run-to-run noise of a short run)
LOSS_GAP = 0.1  # validation-loss nats that count as warm-up "helping"


def _last_valid(run: Path) -> dict:
    metrics = run / "metrics.jsonl"
    if not metrics.exists():
        raise TTError(f"{metrics}: missing — train the runs with scripts/controlled_runs.py --out {run.parent}")
    records = []
    for number, line in enumerate(metrics.read_text(encoding="utf-8").splitlines(), 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise TTError(f"{metrics}:{number}: not a JSON record") from None
        if record.get("event") == "valid":
            records.append(record)
    if not records:
        raise TTError(f"{metrics}: no validation record yet (the run validates every --valid-every steps)")
    return records[-1]


def _bleu(directory: Path, valid: dict[str, dict]) -> tuple[dict[str, float], str]:
    """Test BLEU from results.json when the script wrote it, else the runs' last validation BLEU."""
    results = directory / "results.json"
    if results.exists():
        try:
            data = json.loads(results.read_text(encoding="utf-8"))
            return {name: float(data[name]["bleu"]) for name in RUNS}, data.get("bleu_on", "test BLEU")
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise TTError(f"{results}: not the results of scripts/controlled_runs.py") from None
    return {name: float(valid[name].get("bleu", 0.0)) for name in RUNS}, "validation BLEU (greedy sample)"


def controlled_claims(directory: str | Path) -> list[Claim]:
    """Label smoothing and warm-up, from the three runs of scripts/controlled_runs.py in `directory`."""
    directory = Path(directory)
    valid = {name: _last_valid(directory / name) for name in RUNS}
    bleu, bleu_on = _bleu(directory, valid)
    loss = {name: float(valid[name]["valid_loss"]) for name in RUNS}
    step = min(int(valid[name]["step"]) for name in RUNS)
    return [_smoothing(loss, bleu, bleu_on, step), _warmup(loss, bleu, bleu_on, step)]


def _smoothing(loss: dict[str, float], bleu: dict[str, float], bleu_on: str, step: int) -> Claim:
    costs = loss["baseline"] > loss["no-smoothing"]
    gains = bleu["baseline"] - bleu["no-smoothing"] >= BLEU_GAIN
    verdict = HOLDS if costs and gains else DEPENDS if costs or gains else FAILS
    why = {
        HOLDS: "higher validation loss and more BLEU with ε_ls 0.1, as the paper's Table 3 (D)",
        DEPENDS: "one half shows: "
        + ("the loss cost, not the BLEU gain" if costs else "the BLEU gain, not the loss cost")
        + f" (a gain under {BLEU_GAIN} BLEU is within a short run's noise)",
        FAILS: "neither the loss cost nor the BLEU gain shows",
    }[verdict]
    return Claim(
        "label_smoothing",
        "label smoothing hurts perplexity but improves BLEU",
        "001 (hyper-parameters)",
        f"ε_ls 0.1 vs 0 at step {step}: validation loss {loss['baseline']:.3f} vs {loss['no-smoothing']:.3f}; "
        f"{bleu_on} {bleu['baseline']:.1f} vs {bleu['no-smoothing']:.1f}",
        verdict,
        why,
        {
            "loss": {k: loss[k] for k in ("baseline", "no-smoothing")},
            "bleu": {k: bleu[k] for k in ("baseline", "no-smoothing")},
            "bleu_on": bleu_on,
        },
    )


def _warmup(loss: dict[str, float], bleu: dict[str, float], bleu_on: str, step: int) -> Claim:
    helps = loss["no-warmup"] - loss["baseline"] >= LOSS_GAP or bleu["baseline"] - bleu["no-warmup"] >= BLEU_GAIN
    return Claim(
        "warmup",
        "warm-up keeps the early, noisy steps from swinging the weights (LR rises linearly, then decays)",
        "001 (learning-rate schedule)",
        f"400 warm-up steps vs none at step {step}: validation loss {loss['baseline']:.3f} vs {loss['no-warmup']:.3f}; "
        f"{bleu_on} {bleu['baseline']:.1f} vs {bleu['no-warmup']:.1f}",
        HOLDS if helps else FAILS,
        "the run with warm-up ends lower in loss or higher in BLEU" if helps else "the run without warm-up is as good",
        {
            "loss": {k: loss[k] for k in ("baseline", "no-warmup")},
            "bleu": {k: bleu[k] for k in ("baseline", "no-warmup")},
            "bleu_on": bleu_on,
        },
    )
