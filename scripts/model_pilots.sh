#!/usr/bin/env bash
# The model issue's pilots: architectures compared at equal CPU time on the corpus-scale data
# (Europarl v7 + Tatoeba + Multi30k + WMT news 2008-2011/2015, mixed at T=2; dev newstest2013).
# One thread per pilot and --max-cpu-time, so pilots sharing a busy machine still get equal budgets.
# The first pilot builds the 16k tokenizer and the token cache; the others reuse both.
#
#   bash scripts/model_pilots.sh [BUDGET]        # BUDGET defaults to 20m of CPU time per pilot
#   python scripts/learning_curve.py runs/pilots/* --last
set -euo pipefail
cd "$(dirname "$0")/.."
D=${TT_SHARED_DATA:-../shared/data}
N=$D/news
BUDGET=${1:-20m}
OUT=runs/pilots
DATA=(--data "$D/europarl/europarl-v7" --data "$D/tatoeba-fra-eng/fra-eng.tsv" --data "$D/multi30k/train"
  --data "news=$N/news-test2008,$N/newssyscomb2009,$N/newstest2009,$N/newstest2010,$N/newstest2011,$N/newsdiscusstest2015"
  --data-weight 1 --data-weight 1 --data-weight 0.5 --data-weight 1 --mix-temperature 2
  --valid "$N/newstest2013" --valid-per-mille 10 --test-per-mille 15
  --noise-case 0.01 --noise-accents 0.02 --cache-dir "$OUT/cache")
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
