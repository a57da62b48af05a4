"""Build weights/ from a finished training run: average, choose, save fp16, evaluate, write the model card.

    python scripts/ship_weights.py --run runs/shipped --last 5
    python scripts/ship_weights.py --card-only      # re-measure the limits section of the shipped model, re-render
    python scripts/ship_weights.py --promote runs/try   # ship a model shipped into a copy first (--out runs/try)

A run started with `tt train --init-from weights` (a fine-tune, e.g. with guided alignment) keeps the
base model's training record in the card (card["base"]) and adds its own (card["fine_tune"]); a run started from a
model that was itself continued (the shipped model today) keeps that model's record too, earliest first
(card["earlier_fine_tunes"]), so every run on the way stays in the card; the model it replaces in weights/ (or
weights/en-fr) goes into the card's history (card["history"]: its figures and the commit that holds its weights). The
Alignment section is measured here: `tt align --find-heads` on the Hansards trial set stores the rule
with the new model, then the stored rule, the earlier rule and the diagonal are scored with `tt align --gold`.

Every figure in the card comes from `tt eval --json` on the shipped files, so tests/core/test_weights.py can check
that `tt eval` reproduces it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.card import config_languages  # noqa: E402
from core.checkpoint import (  # noqa: E402
    PLACEHOLDER_KEY,
    LoadedModel,
    load_model,
    placeholder_metadata,
    placeholder_tokens,
    save_model,
    shipped_models,
)
from core.data.readers import heldout_range, read_corpus, write_aligned  # noqa: E402
from core.device import describe_cpu  # noqa: E402
from core.files import atomic_write_bytes  # noqa: E402
from core.train.runs import METRICS, read_run  # noqa: E402
from core.train.state import checkpoint_config, list_checkpoints, read_trainer_info  # noqa: E402
from core.train.trainer import average_checkpoints  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
# The direction of the model being shipped (--src-lang/--tgt-lang): the suffixes of every test file, and which
# side of a Tatoeba pair is the source. weights/ itself is fr→en; another direction goes in weights/SRC-TGT.
LANGS = ["fr", "en"]
LANGUAGE_NAMES = {"fr": "French", "en": "English"}
# English→French: the same kinds of sentence, written for the card.
SAMPLES_EN = [
    "I am a student.",
    "It is cold this morning.",
    "Where is the train station?",
    "I like reading books in the evening.",
    "We are going to the beach tomorrow.",
    "Can you help me, please?",
    "The cat is sleeping on the sofa.",
    "She speaks three languages.",
    "A man in a red shirt is playing the guitar.",
    "Two children are running in a park.",
]
HARD_EN = [
    ("The government announced on Tuesday a tax increase for large companies.", "news"),
    ("The central bank decided to keep its interest rates unchanged.", "formal"),
    ("My brother, who has lived in Lyon for ten years, is coming to see us.", "a name"),
    ("Angela Merkel met Emmanuel Macron in Berlin.", "names"),
    ("She was born in 1987.", "a number"),
    ("The train leaves at 2:35 pm.", "a time"),
    ("Parliament adopted the text at first reading by 312 votes to 198.", "parliament, numbers"),
]


def suffixes() -> tuple[str, str]:
    return f".{LANGS[0]}", f".{LANGS[1]}"


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
# The card's "where it fails" table: (French, what kind of text). Written for the card, not taken from a test set.
HARD = [
    ("Le gouvernement a annoncé mardi une hausse des impôts sur les grandes entreprises.", "news"),
    ("La banque centrale a décidé de maintenir ses taux d'intérêt inchangés.", "formal"),
    ("Mon frère, qui habite à Lyon depuis dix ans, vient nous voir.", "a name"),
    ("Angela Merkel a rencontré Emmanuel Macron à Berlin.", "names"),
    ("Elle est née en 1987.", "a number"),
    ("Le train part à 14 h 35.", "a time"),
    ("Les députés ont adopté le texte en première lecture par 312 voix contre 198.", "parliament, numbers"),
]
# Out-of-domain sample (news and parliamentary style) written for the card with our own references.
OOD = ROOT / "docs" / "ood" / "ood"


def tt(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "tt_cli.main", *args], check=True, capture_output=True, text=True, cwd=ROOT
    )
    return out.stdout


def tt_git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True, cwd=ROOT).stdout.strip()


def eval_json(model: Path, src: Path, ref: Path, *options: str) -> dict:
    return json.loads(
        tt("eval", "--model", str(model), "--src", str(src), "--ref", str(ref), "--json", *options)
        .strip()
        .splitlines()[-1]
    )


PRECISION_TOLERANCE = 0.3  # int8 becomes the default only if no set loses more (issue 46; docs/precision.md)


def measure_precision(model: Path, results: dict) -> dict:
    """The card's `precision` record: each test set scored again through `tt eval --quantize int8` against its
    fp32 score, and the default the rule gives: int8 where it keeps every set within the tolerance, else fp32 (what
    `tt translate` and `tt serve` then run this model in: core.card.default_precision)."""
    sets = {}
    for name, (_, fp32, files) in results.items():
        int8 = eval_json(model, *files, "--quantize", "int8")
        if int8.get("quantize") != "int8":
            raise SystemExit(f"ship_weights: tt eval scored {name} in {int8.get('quantize') or 'fp32'}, not int8")
        sets[name] = {
            "fp32": fp32["bleu"],
            "int8": int8["bleu"],
            "fp32_seconds": fp32["seconds"],
            "int8_seconds": int8["seconds"],
        }
    close = all(r["int8"] - r["fp32"] >= -PRECISION_TOLERANCE for r in sets.values())
    return {
        "default": "int8" if close else "fp32",
        "tolerance": PRECISION_TOLERANCE,
        "command": "tt eval --model MODEL --src SRC --ref REF [--quantize int8]",
        "activations": "per input row",  # core/model/fast.py int8_rows; the cards before 2026-11-28: one range per call
        "machine": f"{describe_cpu()}, {torch.get_num_threads()} threads, shared with training (seconds are indicative)",
        "sets": sets,
    }


HANSARDS = SHARED / "hansards-align"


def trial_files(model: Path) -> list[str]:
    """The Hansards trial set as `tt align` options for this model's direction (the gold is French–English)."""
    from core.card import model_languages

    D = HANSARDS
    if model_languages(model) == ("en", "fr"):
        return [
            "--src",
            str(D / "trial.en"),
            "--tgt",
            str(D / "trial.fr"),
            "--gold",
            str(D / "trial.wa"),
            "--gold-order",
            "src-tgt",
        ]
    return ["--src", str(D / "trial.fr"), "--tgt", str(D / "trial.en"), "--gold", str(D / "trial.wa")]


def align_score(model: Path, *options: str) -> dict:
    """AER, precision, recall (percent) of `tt align` on the Hansards trial set with these options."""
    out = subprocess.run(
        [sys.executable, "-m", "tt_cli.main", "align", "--model", str(model), *trial_files(model), *options],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    m = re.search(r"AER ([\d.]+)\s+precision ([\d.]+)\s+recall ([\d.]+)", out.stderr)
    if not m:
        raise SystemExit(f"ship_weights: no AER line in tt align's output: {out.stderr.strip()}")
    return {"aer": float(m[1]), "precision": float(m[2]), "recall": float(m[3])}


def n_decoder_layers(model: Path) -> int:
    from core.checkpoint import load_model

    return load_model(model, device="cpu").cfg.n_decoder_layers


def reverse_of(model: Path, given: Path | None) -> Path | None:
    """The model of the other direction to combine links with: --reverse-model, else the shipped one."""
    from core.card import model_languages
    from core.checkpoint import shipped_models

    found = given or shipped_models().get(model_languages(model)[::-1])
    return None if found is None else Path(os.path.relpath(found, ROOT))


def store_alignment(model: Path, reverse: Path | None) -> None:
    """Find and store the model's rule (and, with `reverse`, how both directions combine) in model/alignment.json."""
    both = ["--reverse-model", str(reverse)] if reverse else []
    # --save-to is explicit: without it the shipped model (weights/) is never written
    tt("align", "--model", str(model), "--find-heads", *trial_files(model), *both, "--save-to", str(model))


def one_tree(a: Path, b: Path) -> bool:
    """Whether one directory holds the other (weights/ and weights/en-fr; runs/try and runs/try/en-fr)."""
    a, b = Path(a).resolve(), Path(b).resolve()
    return a.is_relative_to(b) or b.is_relative_to(a)


def store_alignments(model: Path, reverse: Path | None) -> None:
    """Store the model's alignment.json and, where the other direction's model lies in the same tree (both
    shipped, or both in one try directory), that model's again: its combination includes this model. A model
    written elsewhere (--out runs/try) never touches the shipped directories."""
    from core.align.links import read_alignment

    store_alignment(model, reverse)
    if reverse is not None and one_tree(model, reverse) and read_alignment(reverse) is not None:
        store_alignment(reverse, model)


def measure_alignment(model: Path, previous: dict, reverse: Path | None = None) -> dict:
    """The card's Alignment section: find and store the rule (and how the two directions combine, with the
    model of the other direction), then score what `tt align` does beside the model alone and the baselines.
    The other direction's own alignment.json is stored again too: its combination includes this model."""
    from core.align.links import load_rule, read_alignment

    reverse = reverse_of(model, reverse)
    store_alignments(model, reverse)
    stored = read_alignment(model)
    pairs = len((HANSARDS / "trial.fr").read_text(encoding="utf-8").splitlines())
    combined = stored.symmetrize if stored else None
    return {
        "rule": load_rule(model).describe(n_decoder_layers(model)),
        "pairs": pairs,
        **align_score(model),  # what `tt align` does: both directions combined where alignment.json says so
        "one_model": align_score(model, "--one-model"),
        "earlier_aer": align_score(model, "--method", "plain", "--one-model")["aer"],
        "diagonal_aer": align_score(model, "--method", "diagonal")["aer"],
        # eflomal is measured by the recipe in docs/alignment.md (it needs the `align` extra).
        "eflomal_aer": previous.get("eflomal_aer"),
        **({"symmetrized": {"reverse_model": str(reverse), "method": combined["method"]}} if combined else {}),
    }


def tatoeba_split(tmp: Path, lo: int, hi: int, name: str) -> tuple[Path, Path, int]:
    pairs = heldout_range(read_corpus(SHARED / "tatoeba-fra-eng/fra-eng.tsv"), lo, hi)  # buckets of the French side
    src, ref = (tmp / f"{name}{suffix}" for suffix in suffixes())
    write_aligned(pairs, *((src, ref) if LANGS[0] == "fr" else (ref, src)))
    return src, ref, len(pairs)


# Larger test sets of the model issue (WMT news, FLORES-101 dev), scored in full for the card; CI re-scores their
# first CHECK_LINES lines against the figure stored with them ("check"), so the suite stays short.
NEWS_SETS = {
    "newstest2013": "news/newstest2013",
    "newstest2012": "news/newstest2012",
    "flores101-dev": "news/flores101-dev",
}
CHECK_LINES = 200


def head_files(src: Path, ref: Path, n: int, tmp: Path, name: str) -> tuple[Path, Path]:
    """The first n lines of a source and its reference, as files in tmp."""
    out = []
    for path, suffix in zip((src, ref), suffixes()):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[:n]
        target = tmp / f"{name}{suffix}"
        target.write_text("".join(lines), encoding="utf-8")
        out.append(target)
    return out[0], out[1]


def news_results(model: Path, tmp: Path) -> dict:
    """The card's entries for NEWS_SETS: full scores, and the CI check on the first CHECK_LINES lines."""
    results = {}
    for name, file in NEWS_SETS.items():
        src, ref = (SHARED / f"{file}{suffix}" for suffix in suffixes())
        full = eval_json(model, src, ref)
        check = eval_json(model, *head_files(src, ref, CHECK_LINES, tmp, f"check-{name}"))
        spec = {"source": "files", "file": file, "sentences": full["sentences"]}
        spec["check"] = {"sentences": CHECK_LINES, "bleu": check["bleu"], "chrf": check["chrf"]}
        results[name] = (spec, full, (src, ref))
    return results


def write_card(out: Path, card: dict) -> None:
    """A model directory's card.json and the README.md rendered from it."""
    atomic_write_bytes(out / "card.json", (json.dumps(card, indent=1, ensure_ascii=False) + "\n").encode())
    atomic_write_bytes(out / "README.md", render_readme(out, card).encode())


PROMOTED = ("model.safetensors", "alignment.json")


def promote(trial: Path, out: Path, commit: str) -> dict:
    """Ship the model of a try directory (a `--out` elsewhere) into `out`: its files and card come in, and the card's
    history is the one a ship straight into `out` writes, the replaced model (at `commit`) first, then its history."""
    missing = [name for name in ("card.json", "model.safetensors") if not (trial / name).is_file()]
    if missing or trial.resolve() == out.resolve():
        what = f"no {' or '.join(missing)} (ship a run into it first: --out {trial})" if missing else "is --out itself"
        raise SystemExit(f"ship_weights.py: --promote {trial}: {what}")
    card = json.loads((trial / "card.json").read_text(encoding="utf-8"))
    previous = json.loads((out / "card.json").read_text(encoding="utf-8")) if (out / "card.json").exists() else {}
    record_replaced(card, previous, commit)
    if "alignment" in card:  # the key order of a straight ship: history before alignment
        card["alignment"] = card.pop("alignment")
    for name in PROMOTED:
        if (trial / name).exists():
            atomic_write_bytes(out / name, (trial / name).read_bytes())
    write_card(out, card)
    return card


def card_results(model: Path, card: dict, tmp: Path) -> dict:
    """The card's test sets scored again in fp32 by `model` (for `measure_precision`): name -> (spec, eval, files)."""
    results = {}
    for name, spec in card["test_sets"].items():
        if spec["source"] == "tatoeba-heldout":
            files = tatoeba_split(tmp, *spec["buckets"], name)[:2]
        else:
            files = tuple(SHARED / f"{spec['file']}{suffix}" for suffix in suffixes())
        results[name] = (spec, eval_json(model, *files), files)
    return results


def measure_limits(model: Path) -> dict:
    """The card's limits section: the out-of-domain score and the HARD sentences as translated, by the
    model alone (`--raw`) and by `tt translate` as a user runs it (the text pipeline around the model)."""
    src, ref = suffixes()
    ood = eval_json(model, Path(f"{OOD}{src}"), Path(f"{OOD}{ref}"))
    hard = HARD if LANGS[0] == "fr" else HARD_EN
    sources = [fr for fr, _ in hard]
    # fp32, the exact model, whatever precision a card in `model` (the one being replaced) chose
    alone = tt("translate", "--local", "--precision", "fp32", "--raw", "--model", str(model), *sources).splitlines()
    piped = tt("translate", "--local", "--precision", "fp32", "--model", str(model), *sources).splitlines()
    return {
        "ood": {
            "src": f"{OOD.relative_to(ROOT)}{src}",
            "ref": f"{OOD.relative_to(ROOT)}{ref}",
            "sentences": ood["sentences"],
            "bleu": ood["bleu"],
            "chrf": ood["chrf"],
            "bleu_signature": ood["bleu_signature"],
        },
        "hard": [[fr, en, kind, text] for (fr, kind), en, text in zip(hard, alone, piped)],
    }


def hard_translations(card: dict) -> tuple[bool, list[list[str]]]:
    """Whether the card's hard sentences carry `tt translate`'s column, and each row's French and
    translations: [French, the model alone(, `tt translate`)]. Rows are [French, alone, kind(, tt translate)];
    cards measured before the pipeline's column have three."""
    rows = card["limits"]["hard"]
    return all(len(row) == 4 for row in rows), [row[:2] + row[3:] for row in rows]


def save_shipped(candidate: Path, out: Path, chosen: str) -> tuple[LoadedModel, tuple[str, ...]]:
    """The chosen model written to `out` in fp16, the placeholders it learned (tt train --placeholders) in its
    weights' metadata, so the samples and limits translated before card.json is written use them too; returns the
    model and those placeholders (for the card's `placeholder_tokens`)."""
    loaded = load_model(candidate)
    tokens = placeholder_tokens(candidate, loaded.metadata)
    metadata = {"selected": chosen, **placeholder_metadata(tokens)}
    save_model(loaded.model, loaded.tokenizer, out, dtype=torch.float16, extra_metadata=metadata)
    return loaded, tokens


def render_limits(card: dict) -> str:
    if "limits" not in card:
        return ""
    lim, ood = card["limits"], card["limits"]["ood"]
    piped, translations = hard_translations(card)
    hard = "\n".join(f"| {' | '.join(cells)} | {row[2]} |" for cells, row in zip(translations, lim["hard"]))
    source = LANGUAGE_NAMES[card.get("languages", ["fr"])[0]]
    header = (
        f"| {source} | the model alone | `tt translate` | kind |\n|---|---|---|---|"
        if piped
        else f"| {source} | tt translate | kind |\n|---|---|---|"
    )
    if corpus_scale(card):
        news = card["test_sets"].get("newstest2013", {})
        intro = f"""Best at short everyday sentences and image captions (the test sets above); parliamentary and news text
now translates too, though well behind the peers above (newstest2013: {news.get("bleu", 0):.1f} BLEU). Long sentences, names,
figures and rare words are where it still fails most — sentences written for this card, as it translates them:
"""
    else:
        intro = """Good at short everyday sentences and image captions, what it was trained on: the samples and test sets above.
It fails on long formal or news text, names, numbers and rare words: it drops words, cuts or merges figures, and
spells unknown names and words from pieces it knows:
"""
    after = (
        "\n`tt translate` runs the text pipeline around the model (numbers, names, URLs and emoji copied, case kept);\n"
        "the model alone is `tt translate --raw`. Both in fp32 (`--precision fp32`), the exact model.\n"
        if piped
        else ""
    )
    return f"""## What it is good at / where it fails

{intro}
{header}
{hard}
{after}
Measured out of domain: **{ood["bleu"]:.1f} BLEU, {ood["chrf"]:.1f} chrF** on {ood["sentences"]} news and parliamentary sentences
written for this card with our own reference translations (not taken from any test set), against
{card["test_sets"]["tatoeba-test"]["bleu"]:.1f} BLEU on held-out Tatoeba. BLEU `{ood["bleu_signature"]}`. Reproduce:

```
tt eval --src {ood["src"]} --ref {ood["ref"]}
```

These sentences are shorter and plainer than real proceedings or newswire: expect lower on real text. To go further,
train longer on in-domain data (`bash scripts/model_continue.sh`, or `--preset base` on one or more GPUs with
`torchrun`) and score on newstest2014 (`tt eval --testset wmt14`); the README walks through it.

"""


def symmetrized(a: dict) -> str:
    sym, alone = a.get("symmetrized"), a.get("one_model")
    if not sym or not alone:
        return ""
    return (
        f"`tt align` combines these links with the other direction's model ({sym['reverse_model']}, its own "
        f"rule) by {sym['method']}, which alignment.json stores because it scored lower there; the model alone "
        f"(`tt align --one-model`) scores AER {alone['aer']:.1f} (precision {alone['precision']:.1f}, recall "
        f"{alone['recall']:.1f}). "
    )


def render_alignment(card: dict) -> str:
    """The card's Alignment section, from card["alignment"] (figures of docs/alignment.md); empty without it."""
    a = card.get("alignment")
    if not a:
        return ""
    data = " ".join((card.get("fine_tune") or card).get("train_config", {}).get("data", []))
    seen = (
        "Its training data includes other Hansards debates (36th Parliament; pairs of held-out sets removed)."
        if "hansard" in data
        else "The model never saw Hansards text."
    )
    eflomal = "" if a.get("eflomal_aer") is None else f"; a statistical aligner (eflomal) scores {a['eflomal_aer']:.1f}"
    return f"""## Alignment

`tt align` and `tt translate --json --align` read word links from this model's cross-attention with the rule
stored in `alignment.json` ({a["rule"]}), found by
`tt align --find-heads` on the {a["pairs"]} gold-aligned English–French Hansards trial pairs of the HLT-NAACL 2003
workshop. On those same {a["pairs"]} pairs (the only gold set on this machine; the rule was chosen on them, so the figure
is optimistic) the alignment error rate is **AER {a["aer"]:.1f}** (precision {a["precision"]:.1f}, recall {a["recall"]:.1f}), against {a["earlier_aer"]:.1f} for the
earlier rule (mean of the last layer's heads, argmax) and {a["diagonal_aer"]:.1f} for a diagonal line{eflomal}. {seen} {symmetrized(a)}Commands and the full comparison:
[docs/alignment.md](../docs/alignment.md).

"""


# What each --data entry of a continued run is, for the card's prose (the first match names it).
CORPUS_NAMES = [
    ("mixed", "mixed web English (its French machine-translated)"),
    ("-bt", "back-translated news"),
    ("/bt", "back-translated news"),  # runs/ftN/bt: reranked output as the synthetic source (session 22)
    ("/ft", "forward-translated news (its own translations as targets)"),  # runs/ftN/ft
    ("fragment", "headings and phrase pairs cut from word-aligned sentences"),  # scripts/fragments.py
    ("europarl", "Europarl"),
    ("hansard", "Canadian Hansards"),
    ("tatoeba", "Tatoeba"),
    ("multi30k", "Multi30k"),
    ("news=", "WMT news"),
    ("subtitles", "OpenSubtitles"),
    ("/un/", "UN"),
]


def corpora_named(data: list[str]) -> str:
    """'Europarl, Tatoeba and WMT news' for a run's --data entries."""
    names = [next((name for key, name in CORPUS_NAMES if key in d.lower()), Path(d.split("=")[0]).name) for d in data]
    names = list(dict.fromkeys(names))
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def run_length_flags(ft: dict, tc: dict) -> str:
    """How the run was stopped, as its own flags said: steps (with the cool-down) where it had them, else time."""
    if tc.get("max_steps"):
        return f"--max-steps {tc['max_steps']}" + (f" --cooldown {tc['cooldown']}" if tc.get("cooldown") else "")
    return f"--max-time {ft['train_seconds']}"


def render_continued(ft: dict, before: tuple[str, str] = ("fr", "en")) -> str:
    """The card's section on one continued-training run: the model above (translating `before`) trained further
    on the corpus-scale mix (scripts/model_continue.sh, a run started with --init-from and without guided
    alignment)."""
    tc = {**ft["train_config"], **ft["train_config"].get("model_overrides", {})}  # dropout lives with the model options
    grow = "".join(  # the FFN widened, the encoder deepened at the start (core/model/grow.py)
        f" --{flag} {tc[key]}"
        for key, flag in (("d_ff", "d-ff"), ("n_encoder_layers", "encoder-layers"))
        if tc.get(key)
    )
    data_flags = " \\\n  ".join(f"--data {d}" for d in tc["data"])
    weights = " ".join(f"--data-weight {w:g}" for w in tc.get("data_weights") or [])
    kept, keep = ft.get("tatoeba_valid"), ft.get("keep_tatoeba")
    options = (
        (f" --interpolate {ft['interpolate']}" if ft.get("interpolate") else "")
        + (f" --keep-tatoeba {keep:g}" if keep is not None else "")
        + (" --mixes-only" if ft.get("mixes_only") else "")
        + (f" --select '{ft['selected']}'" if ft.get("select") else "")
        + (" --int8" if ft.get("int8") else "")
        + "".join(f" --soup-with {s['run']}" for s in ft.get("soup_with", []))
    )
    if kept is None:
        header = "| candidate | dev BLEU | dev chrF |\n|---|---:|---:|"
        valid = "\n".join(f"| {name} | {s['bleu']:.1f} | {s['chrf']:.1f} |" for name, s in ft["valid"].items())
        rule = ""
    else:
        header = "| candidate | dev BLEU | dev chrF | Tatoeba valid BLEU |\n|---|---:|---:|---:|"
        valid = "\n".join(
            f"| {name} | {s['bleu']:.1f} | {s['chrf']:.1f} | {kept[name]['bleu']:.1f} |"
            for name, s in ft["valid"].items()
        )
        valid += f"\n| the shipped model | | | {kept['shipped']['bleu']:.1f} |"
        rule = (
            f" — the best dev BLEU among the candidates whose Tatoeba valid BLEU is at most {keep:g} below the shipped "
            f"model's (`--keep-tatoeba`; the model issue's bound on the everyday sets)"
        )
    if ft.get("mixes_only"):
        rule += (
            " — among" if not rule else ", among"
        ) + " the mixes with the shipped model only (`--mixes-only`; the run's own checkpoints are scored, not shipped)"
    if ft.get("select"):  # named on the command line, not the rule's pick
        best = max(ft["valid"], key=lambda n: ft["valid"][n]["bleu"])
        rule = (
            f" — named with `--select` rather than the best dev BLEU ({best}: "
            f"{ft['valid'][best]['bleu']:.1f}); docs/model.md gives the measurements behind the choice"
            if best != ft["selected"]
            else " — named with `--select`; it is also the best dev BLEU"
        )
    other = tc.get("src_lang", "fr") != "fr"  # an English→French run
    direction = f" --src-lang {tc['src_lang']} --tgt-lang {tc['tgt_lang']}" if other else ""
    turned = (
        f", turned round to translate {LANGUAGE_NAMES[tc['src_lang']]}→{LANGUAGE_NAMES[tc['tgt_lang']]} (the same "
        "pairs read the other way; its shared embeddings and layers are the starting point)"
        if config_languages(tc) != before
        else ""
    )
    ship_out = f" --out weights/{tc['src_lang']}-{tc['tgt_lang']}{direction}" if other else ""
    # one process unless the record says otherwise; records older than "processes" ran torchrun for fr→en
    processes = ft.get("processes", 1 if other else 2)
    extra = (f" --placeholders {tc['placeholders']:g}" if tc.get("placeholders") else "") + (
        f" --precision {tc['precision']}" if tc.get("precision", "auto") != "auto" else ""
    )
    souped = render_soup(ft, tc)
    lines = re.search(r"\(first (\d+) lines\)", ft.get("valid_set", ""))  # --dev-lines as the card records it
    dev_lines = f" --dev-lines {lines[1]}" if lines else ""
    return f"""### Continued training on Europarl and news: {tc["out"]}

The model above was then trained further{turned} from its own weights (`--init-from {tc["init_from"]}`: same architecture and
vocabulary, a fresh optimizer) for {ft["train_steps"]} steps ({ft["train_seconds"] / 3600:.1f} h wall-clock, {"one process" if processes == 1 else f"{processes} processes"} of one thread,
~{tc["max_tokens"]}-piece batches each, {tc["precision"]}) on {corpora_named(tc["data"])} mixed at temperature
{tc["mix_temperature"]:g}, with {tc["noise_case"]:g} of the pairs added in capitals (and again in lower case) and {tc["noise_accents"]:g} without
accents ({"`bash scripts/model_continue.sh`; " if processes > 1 else ""}docs/model.md has the learning curve and why this path):

```
{"tt" if processes == 1 else f"torchrun --standalone --nproc-per-node {processes} -m tt_cli.main"} train --init-from {tc["init_from"]} --threads 1{direction} \\
  {data_flags} \\
  {weights} --mix-temperature {tc["mix_temperature"]:g} --valid {" ".join(tc["valid"])} \\
  --noise-case {tc["noise_case"]:g} --noise-accents {tc["noise_accents"]:g} --dropout {tc["dropout"]:g} --attention-dropout {tc["attention_dropout"]:g}{grow} \\
  --warmup {tc["warmup"]} --lr-scale {tc["lr_scale"]:g} --valid-every {tc["valid_every"]} --save-every {tc["save_every"]} \\
  --keep-last {tc["keep_last"]} {run_length_flags(ft, tc)}{extra} --out {tc["out"]}
python scripts/ship_weights.py --run {tc["out"]} --last 5{ship_out} --dev ../shared/data/news/newstest2013{dev_lines} --news{options}
```

{souped}Candidates scored on {ft.get("valid_set", "the validation set")} (`tt eval`'s defaults: beam 4, α 0.6):

{header}
{valid}

Kept: **{ft["selected"]}**{rule}.

"""


def render_soup(ft: dict, tc: dict) -> str:
    """The paragraph on a soup (`--soup-with`): the other runs averaged with this one; empty without."""
    others = ft.get("soup_with")
    if not others:
        return ""
    listed = "; ".join(
        f"`{s['run']}` ({s['train_steps']} steps, {s['train_seconds'] / 3600:.1f} h, FFN {s['d_ff']})" for s in others
    )
    widths = {s["d_ff"] for s in others} | {tc.get("d_ff") or ft["soup_d_ff"]}
    cut = (
        f"; the units wider runs grew beyond {ft['soup_d_ff']} are left out (core/model/grow.py `narrow_ffn`)"
        if max(widths) > ft["soup_d_ff"]
        else ""
    )
    return (
        f"Its average of the last 5 checkpoints was averaged with those of {len(others)} other "
        f"run{'s' if len(others) > 1 else ''} continued from the same model on other slices of the data — a model "
        f"soup (Wortsman et al. 2022; `--soup-with`): {listed}. The soup keeps the shipped model's shape (FFN "
        f"{ft['soup_d_ff']}){cut}.\n\n"
    )


def render_fine_tune(card: dict) -> str:
    """The card's sections on the runs that trained the model further with --init-from, earliest first; empty for
    a model trained from scratch."""
    sections, before = [], config_languages((card.get("base") or card).get("train_config", {}))
    for ft in fine_tunes(card):
        sections.append(render_guided(ft) if ft["train_config"].get("align_links") else render_continued(ft, before))
        before = config_languages(ft["train_config"])
    return "".join(sections)


def fine_tunes(card: dict) -> list[dict]:
    """The records of the runs that trained the card's model further with --init-from, earliest first."""
    return [*card.get("earlier_fine_tunes", []), *filter(None, [card.get("fine_tune")])]


def runs_before(card: dict, run_config: dict) -> list[dict]:
    """The runs before the one with `run_config` that a new card of its model lists, earliest first: the
    starting model's `fine_tunes`, less a record of this very run (resumed since it was shipped, it is
    one run with a new record, not a second one)."""
    return [ft for ft in fine_tunes(card) if ft["train_config"].get("out") != run_config.get("out")]


def render_guided(ft: dict) -> str:
    """The card's section on a guided-alignment fine-tune (tt train --init-from weights --align-links)."""
    tc = ft["train_config"]
    # train_config keeps indices; the card counts layers and heads from 1, as tt's options and views do
    layer_option = tc["align_layer"] + 1 if tc["align_layer"] >= 0 else tc["align_layer"]
    back = {-1: "the last decoder layer", -2: "the penultimate decoder layer"}
    guided_layer = (
        f"decoder layer {layer_option}" if layer_option > 0 else back.get(layer_option, f"decoder layer {layer_option}")
    )
    data_flags = " ".join(f"--data {d}" for d in tc["data"])
    valid = "\n".join(f"| {name} | {s['bleu']:.1f} | {s['chrf']:.1f} |" for name, s in ft["valid"].items())
    control = ft.get("control")
    control_text = (
        ""
        if not control
        else f"""
The same fine-tune without `--align-links` (`--out {control["run"]}`, everything else equal) scores
{control["bleu"]:.2f} valid BLEU ({control["selected"]}) against {ft["valid"][ft["selected"]]["bleu"]:.2f} with guided alignment: the alignment loss costs
{control["bleu"] - ft["valid"][ft["selected"]]["bleu"]:+.2f} BLEU (issue 10's bound: at most 0.5).
"""
    )
    guided = (
        (
            f"with guided alignment (Garg et al. 2019): one cross-attention head ({guided_layer}, "
            f"head {tc['align_head'] + 1}, weight λ {tc['align_weight']}) is pulled toward word links of the training pairs made by "
            "eflomal (`scripts/silver_links.py`; no gold links, no Hansards text)"
        )
        if tc.get("align_links")
        else "on the same data"
    )
    return f"""### Fine-tuning

The model above was then fine-tuned from its own weights (`--init-from`) for {ft["train_steps"]} steps
({ft["train_seconds"] / 3600:.1f} h) {guided}:

```
python scripts/silver_links.py {data_flags} --out runs/silver.links
tt train --init-from weights {data_flags} --align-links runs/silver.links \\
  --align-layer {layer_option} --align-head {tc["align_head"] + 1} --align-weight {tc["align_weight"]} \\
  --test-per-mille {tc["test_per_mille"]} --warmup {tc["warmup"]} --lr-scale {tc["lr_scale"]} --max-steps {ft["train_steps"]} \\
  --valid-every {tc["valid_every"]} --save-every {tc["save_every"]} --keep-last {tc["keep_last"]} --bleu-sample {tc["bleu_sample"]} --threads {tc["threads"]} --out runs/guided
python scripts/ship_weights.py --run runs/guided --last 5 --control runs/control
```

| candidate | valid BLEU | valid chrF |
|---|---:|---:|
{valid}

Kept: **{ft["selected"]}**.
{control_text}
"""


def corpus_scale(card: dict) -> bool:
    """Whether the model went on to the corpus-scale data of the model issue (Europarl, news)."""
    return any("europarl" in str(d) for ft in fine_tunes(card) for d in ft["train_config"].get("data", []))


NEWER_DATA = {  # a corpus a later run added: its line in the card's Data section
    "hansard": "- **Hansards of the 36th Parliament of Canada** (Germann 2001, USC/ISI release): 1.26 M French–English pairs of\n"
    "  House and Senate debates; pairs with a side in a held-out test set removed.",
    "opensubtitles": "- **OpenSubtitles2018** (Lison & Tiedemann 2016/2018) dialogue, as extracted for the Large-contrastive pronoun\n"
    "  test set (Lopes et al. 2020): 65 k French–English pairs.",
    "ntrex128": "- **NTREX-128** (Federmann et al. 2022): 1,997 WMT19 news sentences with professional French translated from\n"
    "  English, with the news training sets.",
}


def render_more_data(card: dict) -> str:
    if not corpus_scale(card):
        return ""
    used = " ".join(str(d) for ft in fine_tunes(card) for d in ft["train_config"].get("data", []))
    newer = "".join(line + "\n" for key, line in NEWER_DATA.items() if key in used)
    return (
        newer
        + """- **Europarl v7** French–English (Koehn 2005, *Europarl: A Parallel Corpus for Statistical Machine Translation*,
  MT Summit X): ≈2.0 M sentence pairs of European Parliament proceedings, cleaned as docs/data.md says.
- **WMT news test sets** (shared tasks of the Workshop on Statistical Machine Translation): news-test2008,
  newssyscomb2009, newstest2009–2011 and newsdiscusstest2015 as training data; newstest2012 and newstest2013
  held out (decoding choices and development).
- **FLORES-101** dev (Goyal et al. 2022), for evaluation only.
"""
    )


def render_peers(card: dict) -> str:
    if not corpus_scale(card):
        return ""
    if card.get("languages", ["fr", "en"])[0] == "en":
        return """
For context, published figures of other offline en→fr systems on sets this project keeps aside (not measured
here, and not the sets above): newstest2014 — Firefox Translations' tiny model 39.7; FLORES-101 devtest — Firefox's
tiny model 48.5, Argos Translate 42.7.
"""
    return """
For context, published figures of other offline fr→en systems on sets this project keeps aside (not measured
here, and not the sets above): newstest2014 — Firefox Translations' tiny model (16.9 M parameters, int8) 37.2,
Argos Translate 35.3, Google 40.6; FLORES-101 devtest — 42.0, 39.5 and 46.7.
"""


def check_note(card: dict) -> str:
    if not any("check" in spec for spec in card["test_sets"].values()):
        return ""
    return (
        f" (the news and FLORES sets on their first {CHECK_LINES} lines, against the figures stored with them in\n"
        "card.json, so the suite stays short)"
    )


def training_hours(card: dict) -> float:
    """Wall-clock hours of every run that made the model: the first one and each continuation."""
    first = card.get("base") or card
    runs = [ft["train_seconds"] for ft in fine_tunes(card)]
    runs += [s["train_seconds"] for ft in fine_tunes(card) for s in ft.get("soup_with", [])]  # a soup's other runs
    return (first["train_seconds"] + sum(runs)) / 3600


def known_limits_data(card: dict, cfg: dict) -> str:
    if corpus_scale(card):
        return f"""- A {card["parameters"] / 1e6:.1f} M-parameter model trained for {training_hours(card):.0f} hours on two CPU cores: on news it is far behind
  larger models (the peers above), and sentences over {cfg["max_len"]} pieces are truncated (with a warning; `tt translate` splits paragraphs into sentences first)."""
    return f"""- Trained on short, everyday sentences (Tatoeba) and image captions (Multi30k): long, technical or formal text
  translates worse, and sentences over {cfg["max_len"]} pieces are truncated (with a warning)."""


def used_by(card: dict) -> str:
    src, tgt = card.get("languages", ["fr", "en"])
    return (
        "`tt translate` uses it by default"
        if (src, tgt) == ("fr", "en")
        else f"`tt translate --from {src} --to {tgt}` uses it"
    )


def render_card(card: dict) -> str:
    """The model card (weights/README.md), every figure taken from card.json."""
    cfg, tc = card["model_config"], card["train_config"]
    rows = "\n".join(
        f"| {name} | {spec['sentences']} | {spec['bleu']:.1f} | {spec['chrf']:.1f} |"
        for name, spec in card["test_sets"].items()
    )
    sigs = "\n".join(
        f"- {name}: BLEU `{spec['bleu_signature']}`, chrF `{spec['chrf_signature']}`"
        for name, spec in card["test_sets"].items()
    )
    valid = "\n".join(f"| {name} | {s['bleu']:.1f} | {s['chrf']:.1f} |" for name, s in card["valid"].items())
    samples = "\n".join(f"| {fr} | {en} |" for fr, en in card["samples"])
    hours = card["train_seconds"] / 3600
    data_flags = " ".join(f"--data {d}" for d in tc["data"])
    src_name, tgt_name = (LANGUAGE_NAMES[lang] for lang in card.get("languages", ["fr", "en"]))
    return f"""# tt's shipped {src_name}→{tgt_name} model

A `small` Transformer (d_model {cfg["d_model"]}, h {cfg["h"]}, {cfg["n_encoder_layers"]}+{cfg["n_decoder_layers"]} layers,
d_ff {cfg["d_ff"]}, post-norm as in the paper, sinusoidal positions, shared source/target/output embeddings,
{card["parameters"] / 1e6:.1f}M parameters) with a joint SentencePiece vocabulary of {cfg["vocab_size"]} pieces.
Stored in fp16 ({card["size_bytes"] / 1e6:.1f} MB), loaded as fp32. {used_by(card)}; nothing is downloaded.

## Data

- **Tatoeba** French–English pairs as packaged by manythings.org/anki (file of 2017-09-29). License: CC-BY 2.0 France.
  Attribution: www.manythings.org/anki and tatoeba.org. (The data is not included in this repository.)
- **Multi30k** task 1 training set (Elliott et al., 2016), French–English image captions.
{render_more_data(card)}
Held-out splits are chosen by a hash of the French sentence (`core.data.readers.heldout_bucket`, buckets of 1000), so they
depend only on the sentence and every copy of a held-out sentence left training: validation = buckets [0, 10),
test = buckets [10, 25). The Tatoeba test set below is the Tatoeba part of the test buckets.

## Training

Hardware: {card["hardware"]}. Training time: {hours:.1f} h wall-clock ({card["train_steps"]} steps, ~{tc["max_tokens"]}-piece batches,
bf16 autocast), partly shared with other work on the same 2 cores. The run went through `core.train.trainer.Trainer` — the code
behind `tt train` — and is equivalent to:

```
tt train {data_flags} --preset small --vocab-size {tc["vocab_size"]} \\
  --precision {tc["precision"]} --max-tokens {tc["max_tokens"]} --warmup {tc["warmup"]} --lr-scale {tc["lr_scale"]} \\
  --label-smoothing {tc["label_smoothing"]} --valid-per-mille {tc["valid_per_mille"]} --test-per-mille {tc["test_per_mille"]} \\
  --valid-every {tc["valid_every"]} --save-every {tc["save_every"]} --keep-last {tc["keep_last"]} --bleu-sample {tc["bleu_sample"]} \\
  --seed {tc["seed"]} --max-time {card["train_seconds"]} --out runs/shipped
```

It was stopped and resumed (`--resume`) a few times while the machine was shared; resuming is exact. Then
`python scripts/ship_weights.py --run runs/shipped --last 5` compared the best checkpoint (by validation BLEU) with
the average of the last 5 checkpoints (paper §6.1) on the validation set, kept the better one (**{card["selected"]}**),
and saved it in fp16:

| candidate | valid BLEU | valid chrF |
|---|---:|---:|
{valid}

{render_fine_tune(card)}## Results

`tt eval` with the defaults (beam 4, α 0.6), sacreBLEU:

| test set | sentences | BLEU | chrF |
|---|---:|---:|---:|
{rows}

{sigs}

`tests/core/test_weights.py` re-runs `tt eval` on each test set and checks these figures{check_note(card)}.
{render_peers(card)}
{render_alignment(card)}## Samples

| {src_name} | tt translate |
|---|---|
{samples}

{render_limits(card)}{render_precision(card)}{render_history(card)}## Known limits

{known_limits_data(card, cfg)}
- 8k-piece vocabulary: rare names and words are split into many pieces and may be garbled.
- Tatoeba's English often uses contractions ("I'm", "It's"); the model does too.
- No casing or punctuation repair of the input; emoji and scripts other than Latin map to unknown pieces.
"""


# A new model ships when no set the two cards share is worse than the shipped model's by more than this (BLEU).
SHIP_TOLERANCE = 0.5


def regressions(card: dict, shipped: dict, tolerance: float = SHIP_TOLERANCE) -> list[str]:
    """The sets on which `card`'s model is worse than the shipped one's by more than `tolerance` BLEU, as
    "name old → new" (empty: it ships)."""
    old = shipped.get("test_sets", {})
    return [
        f"{name} {old[name]['bleu']:.1f} → {spec['bleu']:.1f}"
        for name, spec in card["test_sets"].items()
        if name in old and old[name]["bleu"] - spec["bleu"] > tolerance
    ]


HISTORY_SETS = ("tatoeba-test", "multi30k-test2016", "newstest2013", "newstest2012", "flores101-dev")


def record_replaced(card: dict, previous: dict, commit: str) -> None:
    """card["history"]: the model it replaces (`previous`, whose weights git holds at `commit`) first, then that
    model's own history; none where nothing was shipped before."""
    card.pop("history", None)
    if previous.get("test_sets"):
        card["history"] = [history_entry(previous, commit), *previous.get("history", [])]


def replaces_shipped(out: Path) -> bool:
    """Whether `out` is a shipped model's directory (weights/, weights/en-fr): a ship there replaces a model that
    the card's history keeps; a ship into a try directory does not."""
    return out.resolve() in {directory.resolve() for directory in shipped_models().values()}


def history_entry(card: dict, commit: str) -> dict:
    """What the card of a model that is being replaced keeps of it: its shape, its figures, and the commit whose
    weights/ holds it (`git show COMMIT:weights/model.safetensors`)."""
    return {
        "commit": commit,
        "model_config": card["model_config"],
        "parameters": card["parameters"],
        "size_bytes": card["size_bytes"],
        "test_sets": {
            name: {k: spec[k] for k in ("sentences", "bleu", "chrf")} for name, spec in card["test_sets"].items()
        },
        "ood": {k: card["limits"]["ood"][k] for k in ("sentences", "bleu", "chrf")},
        "aer": card["alignment"]["aer"],
    }


def render_precision(card: dict) -> str:
    """The card's Precision section: fp32 against int8 on every dev set, and the default that follows from them."""
    pr = card.get("precision")
    if not pr:
        return ""
    rows = "\n".join(
        f"| {name} | {r['fp32']:.2f} | {r['int8']:.2f} | {r['int8'] - r['fp32']:+.2f} | {r['fp32_seconds'] / r['int8_seconds']:.2f}× |"
        for name, r in pr["sets"].items()
    )
    worst = min(r["int8"] - r["fp32"] for r in pr["sets"].values())
    verdict = (
        f"int8 keeps every set within {pr['tolerance']} BLEU here, so `tt translate` and `tt serve` run this model in "
        f"**{pr['default']}** by default (docs/precision.md); `--precision fp32` gives the exact numbers"
        if worst >= -pr["tolerance"]
        else f"int8 loses {-worst:.2f} BLEU on one set, more than the {pr['tolerance']} allowed, so the default stays "
        f"**{pr['default']}**; `--precision int8` is there for speed"
    )
    return f"""## Precision

The same model through `--precision int8` (weights int8 per row, activations quantized {pr.get("activations", "per call")}) against fp32
(`{pr["command"]}`; beam 4, α 0.6; {pr["machine"]}):

| set | fp32 BLEU | int8 BLEU | int8 − fp32 | int8 speed-up |
|---|---:|---:|---:|---:|
{rows}

{verdict}. `tt inspect`, `tt learn` and `tt analyze` always run fp32 (learners read exact numbers).

"""


def render_history(card: dict) -> str:
    """The card's History section: the models shipped before this one, newest first, set against it."""
    history = card.get("history") or []
    if not history:
        return ""
    sets = [name for name in HISTORY_SETS if name in card["test_sets"]]
    head = " | ".join(["model", *sets, "docs/ood", "AER"])
    rows = [
        " | ".join(
            [
                "**this model**",
                *(f"**{card['test_sets'][n]['bleu']:.1f}**" for n in sets),
                f"**{card['limits']['ood']['bleu']:.1f}**",
                f"**{card['alignment']['aer']:.1f}**",
            ]
        )
    ]
    for old in history:
        cfg = old["model_config"]
        rows.append(
            " | ".join(
                [
                    f"`{old['commit']}` (d_ff {cfg['d_ff']}, {old['parameters'] / 1e6:.1f}M)",
                    *(f"{old['test_sets'][n]['bleu']:.1f}" if n in old["test_sets"] else "—" for n in sets),
                    f"{old['ood']['bleu']:.1f}",
                    f"{old['aer']:.1f}",
                ]
            )
        )
    table = "\n".join(f"| {row} |" for row in [head, " | ".join(["---", *["---:"] * (len(sets) + 2)]), *rows])
    home = shipped_models().get(tuple(card.get("languages", ("fr", "en"))), ROOT / "weights")  # weights/en-fr for en→fr
    return f"""## History

The models shipped before this one stay in git history, not in the tree: `git show COMMIT:{home.relative_to(ROOT).as_posix()}/model.safetensors`
(with that commit's `spm.model` and `card.json`) gives each back, and `tt translate --model DIR` runs it. BLEU as its
own card measured it (beam 4, α 0.6, the same sets and signatures; AER on the Hansards trial pairs):

{table}

"""


def render_readme(out: Path, card: dict) -> str:
    """The README of a weights folder: the model card."""
    return render_card(card)


def choose(
    run: Path, checkpoints: list[Path], last: int, averaged_dir: Path, vsrc: Path, vref: Path
) -> tuple[dict[str, Path], dict, str]:
    """A run's candidates — its best checkpoint by validation BLEU (the run's top level) and the average
    of its last `last` `checkpoints` (the run's, oldest first) — scored on the validation split: (candidates,
    scores, the better one)."""
    averaged = average_checkpoints(checkpoints[-last:], averaged_dir)
    candidates = dict(zip(base_names(last), (run, averaged)))
    valid = {name: eval_json(path, vsrc, vref) for name, path in candidates.items()}
    for name, s in valid.items():
        print(f"valid  {run.name}: {name:24s} BLEU {s['bleu']:.2f}  chrF {s['chrf']:.2f}", file=sys.stderr)
    return candidates, valid, max(valid, key=lambda n: valid[n]["bleu"])


def soup_name(last: int, runs: int) -> str:
    """The candidate averaging --run's average of last `last` with those of `runs` more runs (`--soup-with`)."""
    return f"soup of {runs + 1} runs' averages of last {last}"


def soup_refusal(run: Path, info: dict, others: dict[Path, dict]) -> str | None:
    """Why --soup-with's runs cannot be averaged with --run (their trainer.json records, by run): each must continue
    the same model (`--init-from`, and the same bytes where both runs recorded their start's digest) in the same
    direction; None when they can. Runs started before the digest was recorded are compared by path only."""
    config = info["train_config"]
    for other, record in others.items():
        tc = record["train_config"]
        for key, what in (("init_from", "--init-from"), ("src_lang", "--src-lang"), ("tgt_lang", "--tgt-lang")):
            if tc.get(key) != config.get(key):
                return (
                    f"ship_weights: --soup-with {other}: {what} {tc.get(key)} where --run {run} has "
                    f"{config.get(key)}; a soup averages runs continued from one model"
                )
        if info.get("init_digest") and record.get("init_digest") and info["init_digest"] != record["init_digest"]:
            return (
                f"ship_weights: --soup-with {other}: started from other weights in {config.get('init_from')} than "
                f"--run {run} (another model was there then); a soup averages runs continued from one model"
            )
    return None


def start_refusal(run: Path, info: dict) -> str | None:
    """Why --run's card cannot be written: the model it started from (`--init-from`) has no card (another run,
    whose record no card holds), so the card could not say what the model was trained from; None when it can.
    Refused before anything is scored (session 39's run from a run failed there after its scoring)."""
    start = info["train_config"].get("init_from")
    if not start or (ROOT / start / "card.json").is_file():  # --out as the start: the card it replaces
        return None
    return (
        f"ship_weights: --run {run} started from {start}, which has no card.json (a run, not a shipped model); "
        "ship that run first, or continue a shipped model"
    )


def soup(
    candidates: dict[str, Path],
    valid: dict,
    runs: dict[Path, list[Path]],
    last: int,
    d_ff: int,
    tmp: Path,
    vsrc: Path,
    vref: Path,
) -> str:
    """Add the soup (Wortsman et al. 2022) of --run's average of last `last` and each of `runs`' own — runs
    continued from the same model on other data, each with its checkpoints — to `candidates` and `valid`, the mean
    kept at the shipped model's FFN width `d_ff` (units a run grew dropped: core/model/grow.py narrow_ffn); its name."""
    averages = [candidates[base_names(last)[1]]]
    for i, checkpoints in enumerate(runs.values()):
        averages.append(average_checkpoints(checkpoints[-last:], tmp / f"soup-average-{i}"))
    name = soup_name(last, len(runs))
    candidates[name] = average_checkpoints(averages, tmp / "soup", d_ff=d_ff)
    valid[name] = eval_json(candidates[name], vsrc, vref)
    print(f"valid  {name:24s} BLEU {valid[name]['bleu']:.2f}  chrF {valid[name]['chrf']:.2f}", file=sys.stderr)
    return name


def interpolate(
    candidates: dict[str, Path],
    valid: dict,
    chosen: str,
    shares: list[float],
    tmp: Path,
    vsrc: Path,
    vref: Path,
    shipped: Path,
) -> list[str]:
    """Add a·(the chosen candidate) + (1 − a)·the shipped model of its direction (`shipped`: --out) for each share
    a to `candidates` and `valid` (WiSE-FT: back toward the shipped model, for what the continued run forgot;
    tt average --weight); the names added, in order."""
    for a in shares:
        name = mix_name(chosen, a)
        candidates[name] = average_checkpoints([candidates[chosen], shipped], tmp / f"mix-{a:g}", [a, 1 - a])
        valid[name] = eval_json(candidates[name], vsrc, vref)
        print(f"valid  {name:24s} BLEU {valid[name]['bleu']:.2f}  chrF {valid[name]['chrf']:.2f}", file=sys.stderr)
    return [mix_name(chosen, a) for a in shares]


def rule_pool(valid: dict, mixes: list[str], mixes_only: bool) -> dict:
    """The candidates the rule picks among: all of them, or with `mixes_only` (--mixes-only) the mixes with the
    shipped model alone."""
    return {name: valid[name] for name in mixes} if mixes_only else valid


def choose_keeping(valid: dict, kept: dict, floor: float) -> str:
    """The candidate with the best dev BLEU among those whose `kept` BLEU (Tatoeba's valid split) is at least
    `floor`; when none is, the candidate that keeps the most (`kept` also scores the shipped model, which is
    never a candidate)."""
    eligible = [name for name in valid if kept[name]["bleu"] >= floor]
    if not eligible:
        print(f"no candidate keeps Tatoeba valid BLEU ≥ {floor:.2f}: the one closest to it", file=sys.stderr)
        return max(valid, key=lambda n: kept[n]["bleu"])
    return max(eligible, key=lambda n: valid[n]["bleu"])


def base_names(last: int) -> list[str]:
    """A run's candidates, as the valid lines print them: its best checkpoint and the average of its last `last`."""
    return ["best", f"average of last {last}"]


def mix_name(base: str, a: float) -> str:
    """The candidate a·`base` + (1 − a)·the shipped model (`interpolate`)."""
    return f"{base} ×{a:g} + shipped ×{1 - a:g}"


def select(name: str, last: int, shares: list[float], soup_runs: int = 0) -> str:
    """The base candidate `name` is made from (itself, or the one it mixes toward the shipped model) — checked
    before anything is scored; a name that is none of the candidates is a one-line error listing them."""
    names = base_names(last) + ([soup_name(last, soup_runs)] if soup_runs else [])
    bases = {b: b for b in names} | {mix_name(b, a): b for b in names for a in shares}
    if name not in bases:
        sys.exit(f"ship_weights: --select {name!r} is not a candidate; the candidates: {', '.join(map(repr, bases))}")
    return bases[name]


def main() -> None:  # noqa: C901 - a script's main: its steps in order
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", type=Path, default=ROOT / "runs/shipped")
    ap.add_argument("--last", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "weights")
    ap.add_argument("--valid-buckets", default="0,10")
    ap.add_argument("--test-buckets", default="10,25")
    ap.add_argument(
        "--control", type=Path, help="a fine-tune run like --run without --align-links: its valid BLEU goes in the card"
    )
    ap.add_argument(
        "--reverse-model",
        type=Path,
        help="an English→French model (tt train --src-lang en --tgt-lang fr): the card reports the "
        "two directions' links intersected",
    )
    ap.add_argument("--card-only", action="store_true", help="re-measure the limits of --out and re-render its card")
    ap.add_argument(
        "--promote",
        type=Path,
        metavar="DIR",
        help="ship the model of DIR (shipped there first with --out DIR) into --out, the replaced model into the "
        "card's history; then --card-only both directions",
    )
    ap.add_argument(
        "--precision-only",
        action="store_true",
        help="re-measure --out's Precision section (fp32 and int8 on the card's test sets) and re-render its card",
    )
    ap.add_argument(
        "--src-lang", default="fr", help="the model's source language (an en→fr model: en, --out weights/en-fr)"
    )
    ap.add_argument("--tgt-lang", default="en", help="the model's target language")
    ap.add_argument(
        "--dev",
        type=Path,
        help="choose between the candidates on this prefix (P.fr, P.en; e.g. newstest2013) instead of Tatoeba's valid split",
    )
    ap.add_argument("--dev-lines", type=int, default=1000, help="lines of --dev scored (0 = all)")
    ap.add_argument(
        "--news", action="store_true", help="also score WMT newstest2012/2013 and FLORES-101 dev for the card"
    )
    ap.add_argument(
        "--interpolate",
        help="shares a,b,…: also the chosen candidate × a + the shipped model (weights/) × (1 − a), each a candidate",
    )
    ap.add_argument(
        "--keep-tatoeba",
        type=float,
        help="choose the best --dev candidate whose Tatoeba valid BLEU is at most this far below the shipped model's",
    )
    ap.add_argument(
        "--mixes-only",
        action="store_true",
        help="with --interpolate: choose among the mixes with the shipped model only (a run's own checkpoints are "
        "scored, never shipped; docs/model.md: sessions 29-31's dev-slice pick did not generalize, the mix did)",
    )
    ap.add_argument(
        "--select",
        help="ship this candidate (its name as the valid lines print it, e.g. 'average of last 5 ×0.5 + shipped "
        "×0.5') instead of the rule's pick; the card says it was named",
    )
    ap.add_argument(
        "--int8", action="store_true", help="also score every test set through --quantize int8 (the card's Precision)"
    )
    ap.add_argument(
        "--soup-with",
        type=Path,
        action="append",
        default=[],
        metavar="RUN",
        help="another run continued from the same model (repeatable; the same --init-from, holding the same "
        "weights when each run started: checked by the digest runs record, by path for runs from before it): its "
        "average of last --last is averaged with --run's into the candidate 'soup of N runs' averages' (at the "
        "shipped model's FFN width), the one mixed with --interpolate",
    )
    args = ap.parse_args()
    if args.mixes_only and not args.interpolate:
        sys.exit("ship_weights: --mixes-only needs --interpolate (the shares of the mixes to choose among)")
    LANGS[:] = [args.src_lang, args.tgt_lang]
    if args.promote:
        promote(args.promote, args.out, tt_git("rev-parse", "--short", "HEAD"))
        return
    if args.card_only:
        card = json.loads((args.out / "card.json").read_text(encoding="utf-8"))
        card["limits"] = measure_limits(args.out)
        card["alignment"] = measure_alignment(args.out, card.get("alignment", {}), args.reverse_model)
        write_card(args.out, card)
        return
    if args.precision_only:
        card = json.loads((args.out / "card.json").read_text(encoding="utf-8"))
        card["precision"] = measure_precision(args.out, card_results(args.out, card, Path(tempfile.mkdtemp())))
        write_card(args.out, card)
        return
    previous = (
        json.loads((args.out / "card.json").read_text(encoding="utf-8")) if (args.out / "card.json").exists() else {}
    )
    tmp = Path(tempfile.mkdtemp())
    vlo, vhi = map(int, args.valid_buckets.split(","))
    tlo, thi = map(int, args.test_buckets.split(","))
    vsrc, vref, _ = tatoeba_split(tmp, vlo, vhi, "valid")
    if args.dev:
        dsrc, dref = (Path(f"{args.dev}{suffix}") for suffix in suffixes())
        vsrc, vref = head_files(dsrc, dref, args.dev_lines, tmp, "dev") if args.dev_lines else (dsrc, dref)

    shares = [float(a) for a in args.interpolate.split(",")] if args.interpolate else []
    base = select(args.select, args.last, shares, len(args.soup_with)) if args.select else None
    checkpoints = list_checkpoints(args.run)  # listed once; the last holds the run's record, read once
    info = read_trainer_info(checkpoints[-1])
    soup_runs = {r: list_checkpoints(r) for r in args.soup_with}
    soup_infos = {r: read_trainer_info(c[-1]) for r, c in soup_runs.items()}
    refusal = start_refusal(args.run, info) or soup_refusal(args.run, info, soup_infos)  # before scoring
    if refusal:
        sys.exit(refusal)
    candidates, valid, chosen = choose(args.run, checkpoints, args.last, tmp / "averaged", vsrc, vref)
    if args.soup_with:  # the soup is the candidate the mixes start from
        shipped_d_ff = checkpoint_config(args.out).d_ff
        chosen = soup(candidates, valid, soup_runs, args.last, shipped_d_ff, tmp, vsrc, vref)
    pool = valid  # the candidates the rule may pick
    if args.interpolate:  # the named candidate's base is the one mixed, else the better of the two
        mixes = interpolate(candidates, valid, base or chosen, shares, tmp, vsrc, vref, args.out)
        pool = rule_pool(valid, mixes, args.mixes_only)
        chosen = max(pool, key=lambda n: pool[n]["bleu"])
    kept = None
    if args.keep_tatoeba is not None:  # the everyday sets' bar of the model issue, on Tatoeba's valid split
        tvs, tvr, _ = tatoeba_split(tmp, vlo, vhi, "kept")
        kept = {name: eval_json(path, tvs, tvr) for name, path in {**candidates, "shipped": args.out}.items()}
        chosen = choose_keeping(pool, kept, kept["shipped"]["bleu"] - args.keep_tatoeba)
    if args.select:
        chosen = args.select
    args.out.mkdir(exist_ok=True)
    loaded, placeholders = save_shipped(candidates[chosen], args.out, chosen)

    tsrc, tref, n_test = tatoeba_split(tmp, tlo, thi, "test")
    m30k = SHARED / "multi30k/test_2016_flickr"
    m30k_files = tuple(Path(str(m30k) + suffix) for suffix in suffixes())
    results = {
        "tatoeba-test": (
            {
                "source": "tatoeba-heldout",
                "file": "tatoeba-fra-eng/fra-eng.tsv",
                "buckets": [tlo, thi],
                "sentences": n_test,
            },
            eval_json(args.out, tsrc, tref),
            (tsrc, tref),
        ),
        "multi30k-test2016": (
            {
                "source": "files",
                "file": "multi30k/test_2016_flickr",
                "sentences": sum(1 for _ in open(str(m30k) + suffixes()[0], encoding="utf-8")),
            },
            eval_json(args.out, *m30k_files),
            m30k_files,
        ),
    }
    if args.news:
        results.update(news_results(args.out, tmp))
    samples_in = SAMPLES if LANGS[0] == "fr" else SAMPLES_EN
    samples = tt("translate", "--model", str(args.out), *samples_in).splitlines()
    fine_tune = info["train_config"].get("init_from")
    if fine_tune:  # the base model's record (the card of the model it started from) stays in the card
        # its card (start_refusal checked it is there); when it is --out, the card this ship replaces: the new one
        # is written last
        base_card = json.loads((ROOT / fine_tune / "card.json").read_text(encoding="utf-8"))
        base = base_card.get("base") or {
            k: base_card[k] for k in ("train_steps", "train_seconds", "train_config", "selected", "valid")
        }
        # the runs that made the starting model, earliest first (empty when it was trained from scratch)
        earlier = runs_before(base_card, info["train_config"])
    record = {
        "selected": chosen,
        "valid": valid,
        "valid_set": (
            f"{args.dev.name} (first {args.dev_lines} lines)" if args.dev and args.dev_lines else args.dev.name
        )
        if args.dev
        else f"Tatoeba valid split (buckets {vlo}-{vhi})",
        "train_steps": info["step"],
        "train_seconds": round(info["elapsed"]),
        "train_config": info["train_config"],
        "processes": read_run(args.run).processes if (args.run / METRICS).is_file() else 1,  # torchrun's world
    }
    if args.interpolate:
        record["interpolate"] = args.interpolate
    if args.select:
        record["select"] = True
    if args.mixes_only:
        record["mixes_only"] = True
    if args.int8:
        record["int8"] = True  # the card's ship command then carries --int8 (the Precision section's measurement)
    if args.soup_with:
        record["soup_with"] = [
            {
                "run": str(r),
                "train_steps": i["step"],
                "train_seconds": round(i["elapsed"]),
                "d_ff": checkpoint_config(soup_runs[r][-1]).d_ff,
            }
            for r, i in soup_infos.items()
        ]
        record["soup_d_ff"] = loaded.cfg.d_ff  # the shape the soup was kept at
    if kept is not None:
        record["tatoeba_valid"] = {name: {k: kept[name][k] for k in ("bleu", "chrf")} for name in kept}
        record["keep_tatoeba"] = args.keep_tatoeba
    card = {
        "model_config": loaded.cfg.to_dict(),
        **(base if fine_tune else record),
        # where the first training ran: a continued run keeps its base's line (this process's threads are the ship's)
        "hardware": (base_card.get("hardware") if fine_tune else None)
        or f"{platform.processor() or platform.machine()}, {info['train_config'].get('threads', 1)} threads, CPU only",
        "test_sets": {
            name: {
                **spec,
                "bleu": r["bleu"],
                "chrf": r["chrf"],
                "bleu_signature": r.get("bleu_signature"),
                "chrf_signature": r.get("chrf_signature"),
                "sentences_per_second": r.get("sentences_per_second"),
            }
            for name, (spec, r, _) in results.items()
        },
        "samples": list(zip(samples_in, samples)),
        "languages": list(LANGS),
        "size_bytes": (args.out / "model.safetensors").stat().st_size,
        "parameters": loaded.model.num_parameters(),
        "limits": measure_limits(args.out),
        **({PLACEHOLDER_KEY: list(placeholders)} if placeholders else {}),  # core.api's placeholders come first
    }
    if args.int8:
        card["precision"] = measure_precision(args.out, results)
    if fine_tune:
        card["base"], card["fine_tune"] = base, record
        if earlier:
            card["earlier_fine_tunes"] = earlier
        if args.control:
            _, ctrl_valid, ctrl_best = choose(
                args.control, list_checkpoints(args.control), args.last, tmp / "control", vsrc, vref
            )
            record["control"] = {
                "run": str(args.control.relative_to(ROOT) if args.control.is_absolute() else args.control),
                "selected": ctrl_best,
                "bleu": ctrl_valid[ctrl_best]["bleu"],
                "chrf": ctrl_valid[ctrl_best]["chrf"],
            }
    if replaces_shipped(args.out):  # the model being replaced goes into the card's history; git holds it at HEAD
        record_replaced(card, previous, tt_git("rev-parse", "--short", "HEAD"))
    earlier_rule = previous.get("alignment") or (base_card.get("alignment") if fine_tune else None) or {}
    card["alignment"] = measure_alignment(args.out, earlier_rule, args.reverse_model)
    write_card(args.out, card)
    print(json.dumps({k: card[k] for k in ("selected", "test_sets")}, indent=1), file=sys.stderr)
    worse = regressions(card, previous)
    if worse:
        print(
            f"ship_weights: worse than the model it replaces by over {SHIP_TOLERANCE} BLEU: {'; '.join(worse)}",
            file=sys.stderr,
        )
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
