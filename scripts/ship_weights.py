"""Build weights/ from a finished training run: average, choose, save fp16, evaluate, write the model card.

    python scripts/ship_weights.py --run runs/shipped --last 5

Every figure in the card comes from `tt eval --json` on the shipped files, so tests/test_weights.py can check
that `tt eval` reproduces it.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.checkpoint import load_model, save_model  # noqa: E402
from core.data import heldout_bucket, read_corpus  # noqa: E402
from core.train import average_checkpoints  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
SAMPLES = [
    "Je suis étudiant.",
    "Il fait froid ce matin.",
    "Où est la gare ?",
    "J'aime lire des livres le soir.",
    "Nous allons à la plage demain.",
    "Pouvez-vous m'aider, s'il vous plaît ?",
    "Le chat dort sur le canapé.",
    "Elle parle trois langues.",
    "Un homme en chemise rouge joue de la guitare.",
    "Deux enfants courent dans un parc.",
]


def tt(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "tt_cli.main", *args], check=True, capture_output=True, text=True, cwd=ROOT)
    return out.stdout


def eval_json(model: Path, src: Path, ref: Path) -> dict:
    return json.loads(tt("eval", "--model", str(model), "--src", str(src), "--ref", str(ref), "--json").strip().splitlines()[-1])


def tatoeba_split(tmp: Path, lo: int, hi: int, name: str) -> tuple[Path, Path, int]:
    pairs = [p for p in read_corpus(SHARED / "tatoeba-fra-eng/fra-eng.tsv") if lo <= heldout_bucket(p.src) < hi]
    src, ref = tmp / f"{name}.fr", tmp / f"{name}.en"
    src.write_text("".join(p.src + "\n" for p in pairs), encoding="utf-8")
    ref.write_text("".join(p.tgt + "\n" for p in pairs), encoding="utf-8")
    return src, ref, len(pairs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", type=Path, default=ROOT / "runs/shipped")
    ap.add_argument("--last", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "weights")
    ap.add_argument("--valid-buckets", default="0,10")
    ap.add_argument("--test-buckets", default="10,25")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    vlo, vhi = map(int, args.valid_buckets.split(","))
    tlo, thi = map(int, args.test_buckets.split(","))
    vsrc, vref, _ = tatoeba_split(tmp, vlo, vhi, "valid")

    # Candidates: the best checkpoint by validation BLEU (the run's top level) and the average of the last N.
    checkpoints = sorted(p for p in (args.run / "checkpoints").iterdir() if p.name.startswith("step_"))
    averaged = average_checkpoints(checkpoints[-args.last :], tmp / "averaged")
    candidates = {"best": args.run, f"average of last {args.last}": averaged}
    valid = {name: eval_json(path, vsrc, vref) for name, path in candidates.items()}
    for name, s in valid.items():
        print(f"valid  {name:24s} BLEU {s['bleu']:.2f}  chrF {s['chrf']:.2f}", file=sys.stderr)
    chosen = max(valid, key=lambda n: valid[n]["bleu"])

    loaded = load_model(candidates[chosen])
    args.out.mkdir(exist_ok=True)
    save_model(loaded.model, loaded.tokenizer, args.out, dtype=torch.float16, extra_metadata={"selected": chosen})

    tsrc, tref, n_test = tatoeba_split(tmp, tlo, thi, "test")
    m30k = SHARED / "multi30k/test_2016_flickr"
    results = {
        "tatoeba-test": ({"source": "tatoeba-heldout", "file": "tatoeba-fra-eng/fra-eng.tsv", "buckets": [tlo, thi],
                          "sentences": n_test}, eval_json(args.out, tsrc, tref)),
        "multi30k-test2016": ({"source": "files", "file": "multi30k/test_2016_flickr",
                               "sentences": sum(1 for _ in open(str(m30k) + ".fr", encoding="utf-8"))},
                              eval_json(args.out, Path(str(m30k) + ".fr"), Path(str(m30k) + ".en"))),
    }
    samples = tt("translate", "--model", str(args.out), *SAMPLES).splitlines()
    info = json.loads((checkpoints[-1] / "trainer.json").read_text())
    card = {
        "model_config": loaded.cfg.to_dict(),
        "selected": chosen,
        "valid": valid,
        "train_steps": info["step"],
        "train_seconds": round(info["elapsed"]),
        "train_config": info["train_config"],
        "hardware": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, CPU only",
        "test_sets": {name: {**spec, "bleu": r["bleu"], "chrf": r["chrf"], "bleu_signature": r.get("bleu_signature"),
                             "chrf_signature": r.get("chrf_signature"), "sentences_per_second": r.get("sentences_per_second")}
                      for name, (spec, r) in results.items()},
        "samples": list(zip(SAMPLES, samples)),
        "size_bytes": (args.out / "model.safetensors").stat().st_size,
        "parameters": loaded.model.num_parameters(),
    }
    (args.out / "card.json").write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: card[k] for k in ("selected", "test_sets")}, indent=1), file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
