#!/usr/bin/env bash
# The model issue's pilots: architectures compared at equal CPU time on the corpus-scale data
# (Europarl v7 + Tatoeba + Multi30k + WMT news 2008-2011/2015, mixed at T=2; dev newstest2013).
# One thread per pilot and --max-cpu-time, so pilots sharing a busy machine still get equal budgets.
# The first pilot builds the 16k tokenizer and the token cache; the others reuse both.
#
#   bash scripts/model_pilots.sh [BUDGET]        # BUDGET defaults to 20m of CPU time per pilot
#   tt runs runs/pilots                          # each pilot's last validation, best step, CPU hours
#   tt runs show runs/pilots/* --x hours         # their curves side by side at equal CPU time
set -euo pipefail
cd "$(dirname "$0")/.."
BUDGET=${1:-20m}
OUT=runs/pilots
. scripts/model_data.sh  # DATA=(…): the corpora, their mixing and the dev set
COMMON=(--threads 1 --max-cpu-time "$BUDGET" --valid-every 400 --save-every 100 --warmup 500 --lr-scale 0.6
  --bleu-sample 100 --log-every 20)
mkdir -p "$OUT"
if [ ! -f "$OUT/spm16k.model" ]; then  # tokenizer + cache once (a 2-core machine: about half an hour)
  tt train "${DATA[@]}" --vocab-size 16000 --out "$OUT/prepare" --max-steps 1 --valid-every 0 --quiet
  cp "$OUT/prepare/spm.model" "$OUT/spm16k.model"
fi
pilot() {
  name=$1; shift
  nohup nice -n 5 tt train "${DATA[@]}" --spm-model "$OUT/spm16k.model" "${COMMON[@]}" --out "$OUT/$name" "$@" \
    > "$OUT/$name.log" 2>&1 &
}
pilot pA-3x3-d256 --encoder-layers 3 --decoder-layers 3
pilot pB-6x2-d256 --encoder-layers 6 --decoder-layers 2
pilot pC-6x2-d384 --encoder-layers 6 --decoder-layers 2 --d-model 384 --heads 6 --d-ff 1536
wait
