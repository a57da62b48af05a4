#!/usr/bin/env bash
# The model issue's long run: the chosen shape (6+2 layers, d_model 256, 16k vocabulary; docs/model.md says
# why), two one-thread DDP processes (faster than one process of two threads on a small CPU), no dropout
# (the run sees its data less than once), started from pilot pB's step-400 checkpoint. Run it again after
# any interruption: it resumes exactly where the last checkpoint left it.
#
#   bash scripts/model_long_run.sh            # start, or resume runs/m1, in the background
#   tt runs show runs/m1 --x hours  # BLEU against CPU hours so far (--table: the numbers)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=runs/m1
. scripts/model_data.sh
LAUNCH=(torchrun --standalone --nproc-per-node "${PROCS:-2}" -m tt_cli.main train --out "$OUT" --threads 1)
if [ -d "$OUT/checkpoints" ]; then
  ARGS=(--resume)
else
  ARGS=("${DATA[@]}" --init-from runs/pilots/pB-6x2-d256/checkpoints/step_00000400
    --dropout 0 --attention-dropout 0 --warmup 300 --lr-scale 0.7
    --valid-every 500 --save-every 100 --bleu-sample 200 --log-every 20 --max-time 500h)
fi
OMP_NUM_THREADS=1 nohup nice -n 10 "${LAUNCH[@]}" "${ARGS[@]}" >> "$OUT.log" 2>&1 &
# torchrun starts each rank in a session of its own, and with the kernel's autogroup scheduling a session's
# nice value is what counts between sessions: give the ranks' groups a low priority too, so the run only
# takes what the machine's other work leaves.
# Only the ranks' own groups: torchrun itself matches too, and it shares this shell's group (the caller's work).
( sleep 30; ours=$(cut -d' ' -f1 /proc/self/autogroup)
  for p in $(pgrep -f -- "train --out $OUT "); do
    [ "$(cut -d' ' -f1 "/proc/$p/autogroup" 2>/dev/null)" = "$ours" ] || echo 15 > "/proc/$p/autogroup" 2>/dev/null || true
  done ) &
echo "training in the background: $OUT (log: $OUT.log)"
