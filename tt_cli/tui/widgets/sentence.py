"""The sentence being decoded: source pieces, the output so far (current step marked), and a branch."""

from __future__ import annotations

from difflib import SequenceMatcher

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from core.analysis.reference import RefComparison
from core.model.attention import Head
from tt_cli.tui.session import Decoding
from tt_cli.tui.widgets.heatmap import label


def pieces_line(name: str, pieces: list[str], *, current: int | None = None, forced: set[int] | None = None) -> Text:
    text = Text()
    text.append(f"{name:>8} ", style="bold")
    for i, piece in enumerate(pieces):
        style = "bold black on yellow" if i == current else ("bold magenta" if forced and i in forced else "")
        text.append(label(piece, 14), style=style)
        text.append(" ")
    return text


def head_name(head: Head) -> str:
    """The head's one name, the one `tt analyze heads` prints: "cross L3H2" (counted from 1)."""
    return str(Head(*head))


def changed(intact: list[str], ablated: list[str]) -> set[int]:
    """Positions of `ablated` that are not in its longest common matching with `intact`."""
    same = {
        j
        for block in SequenceMatcher(a=intact, b=ablated, autojunk=False).get_matching_blocks()
        for j in range(block.b, block.b + block.size)
    }
    return set(range(len(ablated))) - same


# Word confidence (core.text.confidence: exp of the mean log p of a word's pieces) below these is drawn
# yellow, below the second red: where to doubt the output, as `tt translate --flag-below` says per line.
DOUBTFUL, UNLIKELY = 0.5, 0.2


def confident_words(text: str, steps, style: str) -> Text:
    """“text”, each word coloured by the model's confidence in it: `style` when sure, yellow when
    doubtful, red when unlikely. The words are the output pieces joined at "▁" (EOS left out)."""
    from core.text.confidence import word_confidences

    pieces = [(s.piece, s.logprob) for s in steps if s.piece != "</s>"]
    words = word_confidences([p for p, _ in pieces], [lp for _, lp in pieces])
    out = Text("“", style=style)
    if " ".join(w for w, _ in words) != text:  # the text is not the pieces' words: nothing to colour by
        out.append(text, style=style)
    else:
        for i, (word, conf) in enumerate(words):
            if i:
                out.append(" ", style=style)
            doubt = "italic bold red" if conf < UNLIKELY else "italic yellow" if conf < DOUBTFUL else None
            out.append(word, style=doubt or style)
    out.append("”", style=style)
    return out


class SentenceView(Static):
    DEFAULT_CSS = """
    SentenceView { height: auto; padding: 0 1; }
    """

    def show(self, d: Decoding | None, compared: RefComparison | None = None) -> None:
        if d is None:
            self.update(Text("type a French sentence to inspect", style="dim italic"))
            return
        lines = [pieces_line("source", d.source.pieces)]
        for name, line in (("output", d.original), ("what-if", d.branch)):
            if line is None:
                continue
            active = line is d.active
            steps = line.steps
            current = len(steps) - 1 if active and steps else None
            lines.append(
                pieces_line(
                    name, [s.piece for s in steps], current=current, forced={s.index for s in steps if s.forced}
                )
            )
            # steps taken; the length limit is a ceiling, not the count the steps go to
            status = "done" if line.finished else f"step {len(steps)} · limit {d.limit}"
            summary = Text(" " * 9)
            summary.append_text(confident_words(line.text, steps, "italic green" if active else "italic"))
            summary.append(f"  {status} · log p {line.score:.2f}", style="dim")
            lines.append(summary)
        if d.ablated is not None:
            lines.extend(self._ablated(d))
        if compared is not None:
            lines.extend(self._reference(compared))
        self.update(Group(*lines))

    @staticmethod
    def _ablated(d: Decoding) -> list[Text]:
        """The whole greedy output with heads off, its changes against the intact output in red."""
        a = d.ablated
        intact, pieces = [s.piece for s in a.intact.steps], [s.piece for s in a.line.steps]
        line, diff = pieces_line("ablated", []), changed(intact, pieces)
        for i, piece in enumerate(pieces):
            line.append(label(piece, 14), style="bold red" if i in diff else "")
            line.append(" ")
        summary = Text(" " * 9)
        summary.append(f"“{a.line.text}”", style="italic")
        same = "same as intact" if pieces == intact else f"was “{a.intact.text}”"
        summary.append(
            f"  {same} · log p {a.line.score:.2f} · off: {', '.join(map(head_name, a.heads_off))} (o)", style="dim"
        )
        return [line, summary]

    @staticmethod
    def _reference(c: RefComparison) -> list[Text]:
        """The reference's pieces, the first one the model would not take in red (reference mode, c)."""
        from tt_cli.tui.widgets.reference import divergence_line

        line = pieces_line("ref", [])
        for s in c.steps:
            line.append(
                label(s.ref_piece, 14),
                style="bold red" if s.index == c.first_divergence else ("" if s.agrees else "yellow"),
            )
            line.append(" ")
        summary = Text(" " * 9)
        summary.append(divergence_line(c), style="dim")
        return [line, summary]
