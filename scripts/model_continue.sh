#!/usr/bin/env bash
# The model issue's continued training: the shipped model (weights/) trained further on the corpus-scale mix
# (Europarl v7 + Tatoeba + Multi30k + WMT news, T=2; dev newstest2013), keeping its architecture and vocabulary.
# Why this and not runs/m1: this project's machine is a fresh one every session, so a run directory does not
# outlive the session it started in; the only training state that carries over is what is committed. The shipped
# weights are that state: each session continues them, and ships the result when scripts/ship_weights.py finds it
# no worse on Tatoeba and Multi30k and better elsewhere (docs/model.md).
#
#   bash scripts/model_continue.sh [TIME]       # TIME of wall clock (default 2h), in the background; resumes runs/c1
#   python scripts/learning_curve.py runs/c1    # BLEU against CPU hours so far
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/c1}
TIME=${1:-2h}
CACHE=${CACHE:-$OUT/cache}
WEIGHTS=${WEIGHTS:-1 1.5 0.5 1.5} NOISE_CASE=${NOISE_CASE:-0.03} NOISE_ACCENTS=${NOISE_ACCENTS:-0.03}
. scripts/model_data.sh
mkdir -p "$(dirname "$OUT")"
LAUNCH=(torchrun --standalone --nproc-per-node "${PROCS:-2}" -m tt_cli.main train --out "$OUT" --threads 1)
if [ -d "$OUT/checkpoints" ]; then
  ARGS=(--resume --max-time "$TIME")
else
  ARGS=("${DATA[@]}" --init-from "${INIT:-weights}" --dropout 0 --attention-dropout 0 --warmup 1500 --lr-scale 0.5
    --valid-every 1000 --save-every 250 --keep-last 8 --bleu-sample 200 --log-every 50 --max-time "$TIME")
fi
OMP_NUM_THREADS=1 nohup nice -n "${NICE:-0}" "${LAUNCH[@]}" "${ARGS[@]}" >> "$OUT.log" 2>&1 &
echo "training in the background: $OUT (log: $OUT.log)"
