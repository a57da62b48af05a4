# The model issue's training data as `tt train` options (sourced by model_pilots.sh, model_long_run.sh
# and model_continue.sh):
# Europarl v7 + Tatoeba + Multi30k + WMT news 2008-2011/2015, mixed at temperature 2; dev newstest2013;
# per-corpus held-out sets; a little case and accent noise on the source side; the token cache in
# $OUT/cache (the pilots') so every run with the 16k tokenizer shares it. WEIGHTS, NOISE_CASE and NOISE_ACCENTS
# override the corpus weights (Europarl, Tatoeba, Multi30k, news) and the noise shares.
D=${TT_SHARED_DATA:-../shared/data}
N=$D/news
DATA=(--data "$D/europarl/europarl-v7" --data "$D/tatoeba-fra-eng/fra-eng.tsv" --data "$D/multi30k/train"
  --data "news=$N/news-test2008,$N/newssyscomb2009,$N/newstest2009,$N/newstest2010,$N/newstest2011,$N/newsdiscusstest2015"
  $(for w in ${WEIGHTS:-1 1 0.5 1}; do echo --data-weight "$w"; done) --mix-temperature 2
  --valid "$N/newstest2013" --valid-per-mille 10 --test-per-mille 15
  --noise-case "${NOISE_CASE:-0.01}" --noise-accents "${NOISE_ACCENTS:-0.02}" --cache-dir "${CACHE:-runs/pilots/cache}")
