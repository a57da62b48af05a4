"""Training-side robustness to how people really type: extra copies of some pairs in other casings
and without accents, so `JE SUIS ÉTUDIANT` and `je suis etudiant` read as `Je suis étudiant`.

Which pairs get a copy depends on a hash of the source and the seed, never on file order, so every
DDP rank and a resumed run add the same ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from core.data.readers import Pair
from core.text.accents import strip_accents


def draw(text: str, salt: str, seed: int) -> float:
    """A number in [0, 1) fixed by `text`, `salt` and `seed`: which pairs get a treatment, by hash."""
    digest = hashlib.blake2b(f"{salt}|{seed}|{text}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def augmented(pairs: Sequence[Pair], case_share: float, accent_share: float, seed: int) -> list[Pair]:
    """Extra pairs: for a `case_share` of the pairs an ALL-CAPS copy (both sides, as a shouted headline
    reads in either language) and another with the source in lower case; for an `accent_share` a copy
    whose source has lost its accents. The target keeps its case where only the source changed."""
    out: list[Pair] = []
    if case_share <= 0 and accent_share <= 0:
        return out
    for p in pairs:
        if case_share > 0 and draw(p.src, "upper", seed) < case_share:
            out.append(Pair(p.src.upper(), p.tgt.upper(), p.origin))
        if case_share > 0 and draw(p.src, "lower", seed) < case_share:
            out.append(Pair(p.src.lower(), p.tgt, p.origin))
        if accent_share > 0 and draw(p.src, "accents", seed) < accent_share:
            bare = strip_accents(p.src)
            if bare != p.src:
                out.append(Pair(bare, p.tgt, p.origin))
    return out
