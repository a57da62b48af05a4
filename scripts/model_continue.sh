#!/usr/bin/env bash
# The model issue's continued training: the shipped model (weights/), or the model in training (weights/next),
# trained further on the corpus-scale mix
# (Europarl v7 + Tatoeba + Multi30k + WMT news, T=2; dev newstest2013), keeping its architecture and vocabulary.
# Why this and not runs/m1: this project's machine is a fresh one every session, so a run directory does not
# outlive the session it started in; the only training state that carries over is what is committed. So each
# session continues weights/next (the first: the shipped weights), commits the result there, and ships it into
# weights/ once it passes the model issue's bars (docs/model.md).
#
#   bash scripts/model_continue.sh [TIME [OPTION…]]  # TIME of wall clock in all (default 2h), in the background;
#                                                   # resumes runs/c1, OPTIONs (tt train's) override its settings
#   tt runs show runs/c1 --x hours  # BLEU against CPU hours so far (--table: the numbers)
#   bash scripts/model_continue.sh 1h40m --d-ff 2048   # a new run that first widens the FFNs (core/model/grow.py)
#   OUT=runs/c2 CACHE=runs/cache bash scripts/model_continue.sh 3h   # where the disk kept the run that made
#       weights/next: resume it (Adam moments, schedule and data position) to 3 h of wall time in all, rather
#       than warm a fresh optimizer up again from weights/next (docs/model.md, session 6: that cost 0.09 of
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
# Start from weights/next (the model in training, committed at the end of each session) when there is one, else
# from the shipped model. From weights/next: the mix and learning rate the first run ended with (Tatoeba ~40 % of
# the pieces, ≈2e-4), since the first run's opening (Tatoeba 1.5, peak 8e-4) cost Tatoeba 11 BLEU (docs/model.md).
INIT=${INIT:-$([ -f weights/next/model.safetensors ] && echo weights/next || echo weights)}
if [ "$INIT" = weights/next ]; then
  DEFAULT_WEIGHTS="0.5 6 2 1.5" LR=(--warmup 1000 --lr-scale 0.15)
else
  DEFAULT_WEIGHTS="1 1.5 0.5 1.5" LR=(--warmup 1500 --lr-scale 0.5)
fi
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
