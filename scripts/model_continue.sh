#!/usr/bin/env bash
# Continued training of the shipped model (weights/) on the corpus-scale mix
# (Europarl v7 + Tatoeba + Multi30k + WMT news, T=2; dev newstest2013), keeping its architecture and vocabulary.
# Why this and not a fresh run: this project's machine is a fresh one every session, so a run directory does not
# outlive the session it started in; the only training state that carries over is what is committed. A run that
# beats the shipped model on every set is shipped into weights/ (`scripts/ship_weights.py`; docs/model.md), and
# the next run continues from there.
#
#   bash scripts/model_continue.sh [TIME [OPTION…]]  # TIME of wall clock in all (default 2h), in the background;
#                                                   # resumes runs/c1, OPTIONs (tt train's) override its settings
#   tt runs show runs/c1 --x hours  # BLEU against CPU hours so far (--table: the numbers)
#   bash scripts/model_continue.sh 1h40m --d-ff 2048   # a new run that first widens the FFNs (core/model/grow.py)
#   OUT=runs/c2 CACHE=runs/cache bash scripts/model_continue.sh 3h   # where the disk kept the run that made
#       weights/: resume it (Adam moments, schedule and data position) to 3 h of wall time in all, rather
#       than warm a fresh optimizer up again from weights/ (docs/model.md, session 6: that cost 0.09 of
#       validation loss over its first 1,000 steps)
# The run imports parts of tt as it goes (validation decodes): edits to this working tree reach it, and a
# half-made edit can stop it at its next validation (session 10 lost 25 minutes so). When you will keep working
# in the tree, start it from a clone that shares the runs:
#   git clone -q . ../tt-run && ln -s "$PWD/runs" ../tt-run/runs && (cd ../tt-run && OUT=runs/c2 … bash scripts/model_continue.sh …)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/c1}
TIME=${1:-2h}
shift $(($# > 0 ? 1 : 0))
CACHE=${CACHE:-$OUT/cache}
# From the shipped model, with the mix and learning rate its last run ended with (Tatoeba ~40 % of the pieces,
# ≈2e-4): the first run's opening from the Tatoeba-only model (Tatoeba 1.5, peak 8e-4) cost Tatoeba 11 BLEU
# (docs/model.md).
INIT=${INIT:-weights}
DEFAULT_WEIGHTS="0.5 6 2 1.5" LR=(--warmup 1000 --lr-scale 0.15)
WEIGHTS=${WEIGHTS:-$DEFAULT_WEIGHTS} NOISE_CASE=${NOISE_CASE:-0.03} NOISE_ACCENTS=${NOISE_ACCENTS:-0.03}
. scripts/model_data.sh
mkdir -p "$(dirname "$OUT")"
LAUNCH=(torchrun --standalone --nproc-per-node "${PROCS:-2}" -m tt_cli.main train --out "$OUT" --threads 1)
if [ -d "$OUT/checkpoints" ]; then
  ARGS=(--resume --max-time "$TIME" "$@")
else
  ARGS=("${DATA[@]}" --init-from "$INIT" --dropout 0 --attention-dropout 0 "${LR[@]}"
    --valid-every 1000 --save-every 250 --keep-last 8 --bleu-sample 200 --log-every 50 --max-time "$TIME" "$@")
fi
OMP_NUM_THREADS=1 nohup nice -n "${NICE:-0}" "${LAUNCH[@]}" "${ARGS[@]}" >> "$OUT.log" 2>&1 &
echo "training in the background: $OUT (log: $OUT.log)"
