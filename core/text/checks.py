"""What is checked on every translated sentence, so that nothing is lost in silence.

- `follow_punctuation`: the output ends as the source does (none, . ! ? … : ;), in English spacing;
- `short_output`: an output far shorter than its source (a dropped clause) — the pipeline first takes
  the beam's next hypothesis of a fair length, and warns when none has one;
- `unaligned_runs`: runs of source words no output word is aligned to (content dropped mid-sentence);
- `missing_names`: a name (a capitalised word the model's vocabulary does not hold) that the translation lost;
- `empty_output`, `wrong_language`: an empty translation, or one still in French.

Each returns a warning's text (or None), which the pipeline puts on the sentence (stderr, --json).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from core.text.accents import strip_accents
from core.text.case import elided

_CLOSERS = "»”’\"')]}"
_FINAL = re.compile(r"(\.{3}|…|[.!?:;,])[\s\u00a0\u202f]*$")  # a comma: a long sentence's part
# An English output shorter than this share of its French source's characters has lost something: English
# runs 0.85–1.0 of French on news and Europarl; 0.45 leaves room for a terse but complete translation.
MIN_LENGTH_RATIO = 0.45
MIN_CHECKED_CHARS = 40  # shorter sources vary too much ("Merci beaucoup !" → "Thanks!")


def final_punctuation(text: str) -> str:
    """The final stop of `text` ("", ".", "!", "?", "…", "...", ":", ";", ","), closing quotes and brackets aside."""
    m = _FINAL.search(text.rstrip().rstrip(_CLOSERS))
    return m.group(1) if m else ""


# French subject pronouns: a line that has one is a sentence typed without its stop ("Je suis étudiant"), which
# ends with a period in English (follow_punctuation); a heading or a UI string ("Enregistrer les modifications") has
# none. A pronoun stands as a word of its own (`je`, `on`, `qu'il`) or elided onto the next word (`J'ai`, `C'est`).
_SUBJECT = re.compile(
    r"(?i)(?:^|[\s'’])(?:(?:je|tu|il|elle|on|nous|vous|ils|elles|ce|ça|cela)(?=[\s'’]|$)|[jc]['’](?=\w))"
)


def _a_sentence_without_its_stop(source: str) -> bool:
    return len(source.split()) >= 2 and _SUBJECT.search(source.strip()) is not None


def _opens_a_sentence(source: str) -> bool:
    """A sentence without its stop (`_a_sentence_without_its_stop`) that opens with a capital and its subject
    pronoun (`Je suis étudiant`, `Il fait froid`): a sentence from its start. Not a long sentence's later part
    (lower case), nor a UI string with "on" inside (`Click on Save`)."""
    text = source.lstrip()
    return text[:1].isupper() and _SUBJECT.match(text) is not None


def follow_punctuation(source: str, output: str) -> str:
    """`output` ending with `source`'s final punctuation, English spacing (no space before ! ? : ;):
    a heading, a URL or a UI string gains no period, `Merci !` keeps its `!`; a sentence typed without its
    stop (a subject pronoun in it: `Je suis étudiant`) keeps the model's period, and gains one where the model
    wrote none if it opens as a sentence (`_opens_a_sentence`; a line typed all in lower case stays as written).
    An output ending with a closing quote or bracket is left as the model wrote it."""
    stripped = output.rstrip()
    if not stripped or stripped[-1] in _CLOSERS or source.rstrip()[-1:] in _CLOSERS:
        return output
    want, have = final_punctuation(source), final_punctuation(stripped)
    if not want and _a_sentence_without_its_stop(source):
        if have == ".":
            return _lower_start(source, stripped)
        if not have and _opens_a_sentence(source):
            return stripped + "."
    if want == have:
        return _lower_start(source, stripped)
    body = stripped[: len(stripped) - len(have)].rstrip() if have else stripped
    if not body:
        return stripped
    return _lower_start(source, body + want)


def _lower_start(source: str, output: str) -> str:
    """A part of a sentence (a long line's clause) that starts in lower case starts so in English too."""
    first = source.lstrip()[:1]
    if first.isalpha() and first.islower() and output[:1].isupper() and not output[1:2].isupper():
        if not output.startswith(("I ", "I'")):
            return output[0].lower() + output[1:]
    return output


def short_output(source: str, output: str) -> str | None:
    """A warning when `output` is far shorter than `source` (a clause dropped), else None."""
    n_src, n_out = len(source.strip()), len(output.strip())
    if n_src < MIN_CHECKED_CHARS or n_out >= MIN_LENGTH_RATIO * n_src:
        return None
    return f"the translation is {n_out} characters for {n_src} in the source: content may be missing"


# French function words: a run of unaligned source words made only of these is no loss.
_FR_FUNCTION = frozenset(
    """le la les l un une des du de d au aux à a et ou mais donc or ni car que qu qui quoi dont où ce cet cette
    ces se s sa son ses mon ma mes ton ta tes notre nos votre vos leur leurs en y ne n pas plus il elle ils elles
    on nous vous je j tu me m te t lui est sont été être avoir ai as avons avez ont par pour sur sous dans avec
    sans chez vers très bien tout tous toute toutes même aussi si comme""".split()
)
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_EDGE = ".,;:!?…«»\"'()[]“”‘’-–—*_"


def _content(word: str) -> bool:
    letters = _WORD.findall(word.lower())
    return any(len(w) >= 4 and w not in _FR_FUNCTION for w in letters)


def unaligned_runs(source: str, links: Sequence[tuple[int, int]], keep: frozenset[str] = frozenset()) -> str | None:
    """A warning naming the first run of three or more source words (two of them content words) that no
    output word is aligned to, else None. `keep`: words that are not content (placeholders)."""
    words = source.split()
    aligned = {s for s, _ in links}
    run: list[str] = []
    for i, word in enumerate(words + [""]):
        if i < len(words) and i not in aligned:
            run.append(word)
            continue
        content = [w for w in run if _content(w) and w.strip(".,;:!?…«»\"'()") not in keep]
        if len(run) >= 3 and len(content) >= 2:
            return f"no part of the translation matches {' '.join(run)!r}: content may be missing"
        run = []
    return None


_OPENERS = '.!?:;«“"(…-–—'  # a word after one of these may be capitalised for its place, not as a name


def _plain(word: str) -> str:
    return strip_accents(word).lower()


def _after_elision(word: str) -> str:
    """A word without its edge punctuation and what an apostrophe elides before it (d'Éric → Éric, l'Union → Union)."""
    return elided(word.strip(_EDGE))[1]


def _capitalised_for(name: str, out: list[str], t: int) -> bool:
    """Whether output word `t` is capitalised as a name is: past the first word, or the first sharing the name's
    first letter (Le Brésil → "Brazil …", not Appeler Éric → "Specify …", capitalised for its place)."""
    if not 0 <= t < len(out):
        return False
    word = _after_elision(out[t])
    return word[:1].isupper() and (t > 0 or _plain(word)[:1] == _plain(name)[:1])


def known_by_pieces(pieces: Callable[[str], list[str]]) -> Callable[[str], bool]:
    """A `known` predicate from a vocabulary: a word is one of its words where it is one piece, as written or in
    lower case (a lone ▁ is no piece of it). `pieces`: the pieces a word encodes to."""

    def known(word: str) -> bool:
        return any(len([p for p in pieces(form) if p != "▁"]) == 1 for form in dict.fromkeys((word, word.lower())))

    return known


def missing_names(
    source: str,
    output: str,
    links: Sequence[tuple[int, int]],
    known: Callable[[str], bool],
    keep: frozenset[str] = frozenset(),
) -> str | None:
    """A warning naming the first name of `source` that the translation lost, else None. A name is a capitalised
    word inside the sentence (not its first, nor one after a stop, a colon or an opening quote) that is no word of
    the model's vocabulary (`known`: one piece as written or in lower case; Paris, Noël, Allemagne and français are,
    Hélène, Éric and Égypte are not), the word after an elision's apostrophe included (d'Éric, in the output too:
    l'Union). It is lost where no output word starts as it does (its first three letters, accents aside: Égypte → Egypt, Bruxelles → Brussels) and
    no output word linked to it is capitalised as a name is (Pékin → Beijing; `_capitalised_for`): "Rendez-vous chez
    Hélène." → "Make its place."."""
    words, out = source.split(), output.split()
    starts = {_plain(w)[:3] for word in out for w in (word.strip(_EDGE), _after_elision(word))}
    for i, word in enumerate(words):
        if i == 0 or words[i - 1][-1:] in _OPENERS or word in keep:
            continue
        name = _after_elision(word)
        if len(name) < 3 or not (name[0].isupper() and name[1:].islower()) or name in keep or known(name):
            continue
        if _plain(name)[:3] in starts:
            continue
        if any(_capitalised_for(name, out, t) for s, t in links if s == i):
            continue
        return f"the name {name!r} is not in the translation: it may be missing"
    return None


_NUMBER_RUN = re.compile(r"\d+(?:[ \u00a0\u202f.,:]\d+)*")
_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve".split()
    + "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split()
)
_FRENCH_NUMBER_WORDS = (
    "zéro un deux trois quatre cinq six sept huit neuf dix onze douze".split()
    + "premier deuxième troisième quatrième cinquième sixième septième huitième neuvième dixième onzième douzième".split()
)
_ONE = {
    "en": {"a", "an", "one", "once", "single"},
    "fr": {"un", "une", "première", "premiers", "premières", "seul", "seule"},
}


def missing_numbers(
    source: str, output: str, target: str = "en", rendered: Iterable[tuple[str, str]] = ()
) -> str | None:
    """A warning naming the numbers of `source` that `output` does not hold (its digits, however grouped
    — 1 000, 1,000 — or, up to twelve, its word in the target language), else None: a check that does not depend on
    what the pipeline protected, so a number the model dropped or garbled (-5 → -55) is seen. `rendered`: (source
    text, how the pipeline wrote it) of spans written with other digits (2:30 pm → 14 h 30), each found by the digits
    of what it was written as."""
    found = {re.sub(r"\D", "", m) for m in _NUMBER_RUN.findall(output)}
    found |= set(re.findall(r"\d+", output))
    words = {w.lower() for w in re.findall(r"[^\W\d_]+", output)}
    table = _FRENCH_NUMBER_WORDS if target == "fr" else _NUMBER_WORDS
    written = [(text, out, [re.sub(r"\D", "", m) for m in _NUMBER_RUN.findall(out)]) for text, out in rendered]
    missing = []
    for run in _NUMBER_RUN.findall(source):
        digits = re.sub(r"\D", "", run)
        if digits in found or _found_in_parts(run, found):
            continue
        # 2:30 pm as 14 h 30, 21st century as XXIe siècle (no digits: the words themselves)
        if any(
            run in text and (all(d in found for d in runs) if runs else out in output) for text, out, runs in written
        ):
            continue
        if int(digits) <= 12 and (table[int(digits)] in words or table[12 + int(digits)] in words):
            continue
        if int(digits) == 1 and words & _ONE.get(target, _ONE["en"]):
            continue
        if target == "fr" and int(digits) == 2 and words & {"second", "seconde", "seconds", "secondes"}:
            continue
        missing.append(run)
    if not missing:
        return None
    return f"the number(s) {', '.join(map(repr, missing))} are missing from the translation"


def _found_in_parts(run: str, found: set[str]) -> bool:
    """Whether a run of groups is in the output as numbers of consecutive groups, each found: "2024 12 500" in "In
    2024, 12,500 workers" (the source's two numbers read as one run)."""
    groups = [re.sub(r"\D", "", g) for g in re.split(r"[ \u00a0\u202f]", run)]
    i = 0
    while i < len(groups):
        j = next((j for j in range(len(groups), i, -1) if "".join(groups[i:j]) in found), None)
        if j is None:
            return False
        i = j
    return len(groups) > 1


def empty_output(source: str, output: str) -> str | None:
    if output.strip() or not any(ch.isalnum() for ch in source):
        return None
    return "the translation is empty"


def wrong_language(source: str, output: str, languages: tuple[str, str] = ("fr", "en")) -> str | None:
    """A warning when the translation reads as the source language (core.text.language: py3langid, sure at
    SURE or more) or is the source unchanged, else None. `languages`: the model's (source, target)."""
    from core.text.language import SURE, identify, name, plainly

    src, tgt = languages
    unchanged = len(source.split()) >= 4 and output.strip() == source.strip()
    asked = len(output.split()) >= 3 and not plainly(output, tgt)
    best = identify(output, languages)[0] if asked else None
    if unchanged or (best is not None and best.language == src and best.confidence >= SURE):
        return f"the translation looks like {name(src)}, not {name(tgt)}"
    return None
