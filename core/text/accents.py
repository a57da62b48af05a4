"""Accents: French typed without any (an English keyboard, a phone), given back where the word is clear.

"je suis etudiant" splits into pieces the model rarely saw accent-free and comes out wrong ("Thursday's
students"); "je suis étudiant" does not. The model's own vocabulary says which words it knows: a
SentencePiece piece that is a whole word ("▁étudiant"). A bare word of a sentence with no accented letter
gets the accented form of such a piece that strips to it, when
- the bare word is not a whole-word piece itself ("a" and "à", "ou" and "où", "sur" and "sûr" are both
  known, so "a", "ou", "sur" stay; so does "cafe", which the shared vocabulary knows as English);
- the accent is not only a final é that may be the verb's own -e ("accepte" is a word: "il accepte");
  such an é is given only right after a form of avoir or être ("j'ai mange" → "j'ai mangé", "il est
  fatigue" → "il est fatigué"), adverbs such as "pas" or "deja" between;
- "a" stays (avoir or à: the model reads it in context), but for "à côté", "à cause", "à partir", "à travers";
- of several forms, the most frequent (the unigram model's piece scores), the -e form before the -é one.
Measured on accent-stripped text (docs/text.md#accents): 97 % of the words it changes on newstest2013 and
FLORES-101 dev get their original spelling back; docs/everyday's sentences gain 3–14 BLEU, newstest2013 1.6.
A sentence that holds any accented letter was typed with accents and is left as it is.
"""

from __future__ import annotations

import re
import unicodedata
import weakref
from collections.abc import Callable, Iterable

_WORDS = re.compile(r"[^\W\d_]+")
# Forms of avoir and être (accents stripped) after which a -e / -é word is the past participle.
_AUXILIARIES = frozenset(
    """ai as a avons avez ont avais avait avions aviez avaient aurai auras aura aurons aurez auront aurais aurait
    aurions auriez auraient ait aie aies ayons ayez aient eu avoir suis es est sommes etes sont etais etait etions
    etiez etaient ete serai seras sera serons serez seront serais serait serions seriez seraient soit sois soient
    etre""".split()
)
_BETWEEN = frozenset(
    "pas plus jamais deja bien tres trop tout toujours encore vraiment souvent beaucoup mal rien".split()
)
# "a" before these is "à" with its accent lost ("a cause de", "a cote de"), not avoir.
_AFTER_A = frozenset({"de", "des", "du", "d"})
# "a" + these: the prepositions "à côté", "à cause", "à partir", "à travers".
_A_GRAVE = {"cote": "côté", "cause": "cause", "partir": "partir", "travers": "travers"}
# Bare forms that are French words the vocabulary happens to keep only accented (le vôtre, le nôtre).
_NEVER = frozenset({"votre", "notre"})


def strip_accents(text: str) -> str:
    """ "Élève à l'école" → "Eleve a l'ecole": combining marks dropped (œ, æ and ß are letters, kept)."""
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def _final_e(word: str) -> str | None:
    """The -e form of a word whose last vowel is a final é ("accepté" → "accepte", "acceptés" → "acceptes")."""
    if word.endswith("é"):
        return word[:-1] + "e"
    if word.endswith("és"):
        return word[:-2] + "es"
    return None


class AccentTable:
    """Bare word → accented word: `plain` anywhere, `participle` right after avoir or être.

    Made from a SentencePiece vocabulary's (piece, score) pairs, whole words being the pieces after "▁", on
    first use: ~15 ms that a cold `tt translate` of accented text never pays."""

    def __init__(self, pieces: Callable[[], Iterable[tuple[str, float]]]) -> None:
        self._pieces = pieces
        self._tables: tuple[dict[str, str], dict[str, str]] | None = None

    @classmethod
    def from_pieces(cls, pieces: Iterable[tuple[str, float]]) -> AccentTable:
        pieces = list(pieces)
        return cls(lambda: pieces)

    @property
    def plain(self) -> dict[str, str]:
        return self._built()[0]

    @property
    def participle(self) -> dict[str, str]:
        return self._built()[1]

    def _built(self) -> tuple[dict[str, str], dict[str, str]]:
        if self._tables is None:
            self._tables = _tables(self._pieces())
        return self._tables


def _tables(pieces: Iterable[tuple[str, float]]) -> tuple[dict[str, str], dict[str, str]]:
    score: dict[str, float] = {}
    for piece, s in pieces:
        if piece.startswith("▁") and len(piece) > 1:
            word = piece[1:].lower()
            score[word] = max(score.get(word, s), s)
    forms: dict[str, set[str]] = {}
    for word in score:
        bare = strip_accents(word)
        if bare != word and bare.isalpha():
            forms.setdefault(bare, set()).add(word)
    plain, participle = {}, {}
    for bare, accented in forms.items():
        if bare in _NEVER:
            continue
        finals = [w for w in accented if _final_e(w) is not None]
        if finals and len(bare) >= 2 and bare != "de":  # "il est ne" → né; "il a de la chance"
            participle[bare] = max(finals, key=lambda w: (score[w], w))
        if bare in score:
            continue
        # An é-final form whose -e form is the bare word or another known form may be that -e form.
        clear = [w for w in accented if _final_e(w) not in accented | {bare}]
        if clear:
            plain[bare] = max(clear, key=lambda w: (score[w], w))
    return plain, participle


_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer → its table, gone with it


def accent_table(tokenizer) -> AccentTable:
    """The table of a model's tokenizer (core.data.tokenizer.Tokenizer), one per tokenizer, made on first use."""
    table = _TABLES.get(tokenizer)
    if table is None:
        table = _TABLES[tokenizer] = AccentTable(tokenizer.scored_pieces)
    return table


def restore_accents(text: str, table: AccentTable, keep: frozenset[str] = frozenset()) -> str:  # noqa: C901 - one pass over the words with the cases of French accents side by side
    """`text` with its bare words accented by `table`; unchanged when it holds an accented letter.
    Words in `keep` (the placeholders of protected spans) are left as they are."""
    if strip_accents(text) != text:
        return text
    words = list(_WORDS.finditer(text))
    lower = [m.group().lower() for m in words]
    given: dict[int, str] = {}
    for i, bare in enumerate(lower):
        if words[i].group() in keep or i in given:
            continue
        after = lower[i + 1] if i + 1 < len(lower) else ""
        if bare == "a" and after in _A_GRAVE:  # "a cote de" is "à côté de"
            given[i], given[i + 1] = "à", _A_GRAVE[after]
            continue
        accented = None
        if bare in table.participle:
            k = i - 1
            while k >= 0 and lower[k] in _BETWEEN:
                k -= 1
            if k >= 0 and lower[k] in _AUXILIARIES and not (lower[k] == "a" and after in _AFTER_A):
                accented = table.participle[bare]
        accented = accented or table.plain.get(bare)
        if accented is not None:
            given[i] = accented
    out, last = [], 0
    for i, m in enumerate(words):
        word, accented = m.group(), given.get(i)
        if accented is not None:
            if word.isupper() and len(word) > 1:
                accented = accented.upper()
            elif word[0].isupper():
                accented = accented[0].upper() + accented[1:]
        out += [text[last : m.start()], accented or word]
        last = m.end()
    out.append(text[last:])
    return "".join(out)
