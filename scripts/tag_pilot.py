"""One model with a target-language tag, or two models? A pilot at equal CPU time (the model issue, item 1).

Johnson et al. (2017) train one model on both directions, each source line opening with a tag that names the
language to write (`<2en> Je suis étudiant.`, `<2fr> I am a student.`). Against two one-way models it halves the
weights a user downloads; the question is what it costs in quality for the same CPU time. The pilot trains three
models from scratch, one thread each, on the same pairs and vocabulary (the shipped 8k one):

    fren   French→English, MINUTES of CPU time
    enfr   English→French, MINUTES
    tagged both directions, tags on the source, 2×MINUTES (the CPU the two one-way models spend together)

    python scripts/tag_pilot.py prepare runs/tagpilot        # the pairs, cleaned once, in both layouts
    bash runs/tagpilot/train.sh 20                            # the three runs (written by `prepare`), from scratch
    INIT=weights LR=0.1 bash runs/tagpilot/train.sh 10        # or all three from the shipped fr→en model
    python scripts/tag_pilot.py evaluate runs/tagpilot        # greedy BLEU per direction, a Markdown table

The pairs are a fixed sample of every corpus but the back-translated ones, cleaned for French→English by the
training pipeline's own rules (core/data/clean.py) and given to every run with --no-clean, so the three see the same
text. Evaluation: the first 500 lines of newstest2013 and FLORES-101 dev, greedy, the model alone (`--raw`).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.data.clean import CleanRules, clean_pairs  # noqa: E402
from core.data.readers import Pair, read_corpus  # noqa: E402
from core.files import atomic_write_bytes  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
NEWS = DATA / "news"
# (corpus, pairs drawn): the mix the shipped fr→en model trains on, in about its proportions.
SAMPLE = (
    ("europarl/europarl-v7", 120_000),
    ("hansard/hansard36", 60_000),
    ("tatoeba-fra-eng/fra-eng.tsv", 120_000),
    ("multi30k/train", 29_000),
    ("subtitles/opensubtitles-lcpt", 60_000),
    ("news/news-test2008", None),
    ("news/newssyscomb2009", None),
    ("news/newstest2009", None),
    ("news/newstest2010", None),
    ("news/newstest2011", None),
    ("news/newsdiscusstest2015", None),
    ("news/ntrex128", None),
)
TAG = {"en": "<2en> ", "fr": "<2fr> "}
EVAL_SETS = {"newstest2013": NEWS / "newstest2013", "FLORES-101 dev": NEWS / "flores101-dev"}
EVAL_LINES = 500
RUNS = ("fren", "enfr", "tagged")


def _sample(spec: str, n: int | None, rng: random.Random) -> list[Pair]:
    pairs = list(read_corpus(DATA / spec, src_lang="fr", tgt_lang="en"))
    if n is not None and n < len(pairs):
        pairs = rng.sample(pairs, n)
    return pairs


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, "".join(line + "\n" for line in lines).encode("utf-8"))


def prepare(out: Path, seed: int) -> None:
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for spec, n in SAMPLE:
        got = _sample(spec, n, rng)
        print(f"{spec}: {len(got):,} pairs", file=sys.stderr)
        pairs += got
    counts: Counter[str] = Counter()
    pairs = list(clean_pairs(pairs, CleanRules(), counts, "fr", "en"))
    rng.shuffle(pairs)
    print(f"kept {len(pairs):,} pairs after cleaning ({dict(counts)})", file=sys.stderr)
    data = out / "data"
    _write(data / "pairs.fr", [p.src for p in pairs])
    _write(data / "pairs.en", [p.tgt for p in pairs])
    both = [(TAG["en"] + p.src, p.tgt) for p in pairs] + [(TAG["fr"] + p.tgt, p.src) for p in pairs]
    rng.shuffle(both)
    _write(data / "both.src", [s for s, _ in both])
    _write(data / "both.tgt", [t for _, t in both])
    # Validation during training: newstest2013 past the evaluation lines, each direction (tagged: both at once).
    fr = (NEWS / "newstest2013.fr").read_text(encoding="utf-8").splitlines()[EVAL_LINES : EVAL_LINES + 500]
    en = (NEWS / "newstest2013.en").read_text(encoding="utf-8").splitlines()[EVAL_LINES : EVAL_LINES + 500]
    _write(data / "valid.fr", fr)
    _write(data / "valid.en", en)
    _write(data / "valid.src", [TAG["en"] + s for s in fr] + [TAG["fr"] + s for s in en])
    _write(data / "valid.tgt", en + fr)
    (out / "train.sh").write_text(_train_script(out), encoding="utf-8")
    print(f"wrote {data}; next: bash {out / 'train.sh'} MINUTES", file=sys.stderr)


def _train_script(out: Path) -> str:
    common = (
        "${SHAPE[@]} --no-clean --threads 1 --precision ${PRECISION:-auto} "
        "--warmup 400 --lr-scale ${LR:-1} --valid-every 250 --save-every 250 --keep-last 2 --bleu-sample 0 --valid-max 1000 --plain"
    )
    d = out / "data"
    return f"""#!/usr/bin/env bash
# Written by scripts/tag_pilot.py prepare: the three pilot runs, one thread each, at equal CPU time.
set -euo pipefail
cd "{ROOT}"
B=${{1:-20}}   # CPU minutes per one-way model; the tagged model gets the two budgets together
# From scratch in the student shape, or with INIT=DIR all three from one model (its shape and vocabulary; LR=0.1
# then keeps a converged model from being knocked off its optimum).
SHAPE=(--preset student --spm-model weights/spm.model)
if [ -n "${{INIT:-}}" ]; then SHAPE=(--init-from "$INIT"); fi
run() {{ name=$1; budget=$2; shift 2; nohup nice -n ${{NICE:-3}} tt train {common} --max-cpu-time "$budget" --out {out}/$name "$@" \\
  > {out}/$name.log 2>&1 & }}
run fren "${{B}}m" --data {d}/pairs --valid {d}/valid --src-lang fr --tgt-lang en
run enfr "${{B}}m" --data {d}/pairs --valid {d}/valid --src-lang en --tgt-lang fr
wait
run tagged "$((2 * B))m" --data {d}/both --valid {d}/valid --src-lang src --tgt-lang tgt
wait
"""


def _bleu(hyps: list[str], refs: list[str]) -> float:
    import sacrebleu

    return sacrebleu.corpus_bleu(hyps, [refs]).score


def _translate(model: Path, lines: list[str]) -> list[str]:
    """The model alone (--raw: no text pipeline, so no direction to give; the tagged model's tag picks it)."""
    done = subprocess.run(
        ["tt", "translate", "-m", str(model), "--raw", "--no-split", "--greedy"]
        + ["--batch-size", "32", "--threads", "1"],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{model}: tt translate failed: {done.stderr.strip()}")
    return done.stdout.splitlines()


def evaluate(out: Path) -> None:
    rows = []
    for src, tgt in (("fr", "en"), ("en", "fr")):
        for name, prefix in EVAL_SETS.items():
            source = Path(f"{prefix}.{src}").read_text(encoding="utf-8").splitlines()[:EVAL_LINES]
            refs = Path(f"{prefix}.{tgt}").read_text(encoding="utf-8").splitlines()[:EVAL_LINES]
            one_way = out / f"{src}{tgt}"
            alone = _bleu(_translate(one_way, source), refs)
            tagged_lines = [TAG[tgt] + s for s in source]
            tagged = _bleu(_translate(out / "tagged", tagged_lines), refs)
            rows.append(f"| {src}→{tgt} | {name} | {alone:.1f} | {tagged:.1f} | {tagged - alone:+.1f} |")
            print(rows[-1], file=sys.stderr)
    sizes = {name: sum(f.stat().st_size for f in (out / name).glob("*.safetensors")) / 1e6 for name in RUNS}
    print("| direction | set (first 500 lines, greedy) | two models | one tagged model | tagged − two |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(rows))
    print(
        f"\nweights: two models {sizes['fren'] + sizes['enfr']:.1f} MB together, the tagged one {sizes['tagged']:.1f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="sample, clean and write the pilot's pairs and train.sh")
    p.add_argument("out", type=Path)
    p.add_argument("--seed", type=int, default=41)
    e = sub.add_parser("evaluate", help="greedy BLEU of the three runs, per direction")
    e.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.out, args.seed)
    else:
        evaluate(args.out)


if __name__ == "__main__":
    main()
