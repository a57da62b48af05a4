"""How fast `tt inspect` shows the new screen after each key that changes the view (issue 11: "the
new screen within 150 ms after the computation").

Every key of the app's BINDINGS that changes what is shown is pressed through Textual's Pilot in a
headless app at 120×40, on the shipped model (weights/) with the whole greedy output on screen.
A press is timed from the key event to the last frame it caused, read off Textual itself:

- a frame is one `Screen._compositor_refresh` (layout if needed, every dirty widget's render, the
  compositor's update) ending in `App._display`; the headless driver writes nothing, so the hook also
  encodes the update for a terminal (`render_segments`), which a real terminal pays;
- the computation is what the key queued on the app's model thread (a re-decode with a head off,
  attribution, the logit lens, beam search, Eq. 1, the sink flags), timed on that thread;
- "redraw" is what the target is about: from the end of the computation (from the key press when
  there is none) to the last frame. Its CPU is the UI thread's own (`time.thread_time`).

    nice -n 10 python bench/bench_tui_toggle.py --repeat 10 [--profile]

One warm-up round goes first, and a new Decoding (same content) starts each round so that every
computation runs again; the warm-up round is printed on its own (each key's first press in a
session: first builds of a screen, first imports). Not measured: writing to a real terminal and
the terminal's own drawing. --profile adds, per key, where the UI thread spent the redraw: the
app's watchers, layout, each widget's render and the terminal encoding (inclusive times; nested
ones overlap). Without the shipped model, a random-init `small` model with bench_inspect's
tokenizer stands in (said in the output).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import gc
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_inspect import SENTENCE, load_tokenizer

from core.checkpoint import LoadedModel, load_model
from core.model.config import preset
from core.model.transformer import Transformer

REFERENCE = "The cat sat on the rug while the children watched the rain fall on the city."
BUDGET = 0.150  # seconds, after the computation
SIZE = (120, 40)


@dataclass(frozen=True)
class Toggle:
    key: str
    name: str
    shown: Callable[[Any], bool] = lambda app: True  # the new view is what the app now shows
    timed: bool = True  # False: a setup press (selects a head for `o`), not a row


def heatmap_title(app) -> str:
    from tt_cli.tui.widgets.heatmap import Heatmap

    return app.query_one(Heatmap).data.title


def toggles(h: int, n_dec: int, n_enc: int) -> list[Toggle]:
    """One round through every key that changes the view, back to the starting view at the end;
    each with what must be on screen after it (a press that did not do its job stops the benchmark)."""
    from tt_cli.tui.screens.help import HelpScreen
    from tt_cli.tui.screens.views import ViewsScreen
    from tt_cli.tui.widgets.distribution import Distribution

    def mode(m: str) -> Callable[[Any], bool]:
        return lambda app: app.view.mode == m

    def titled(*parts: str, unless: str = "") -> Callable[[Any], bool]:
        return lambda app: all(p in heatmap_title(app) for p in parts) and not (unless and unless in heatmap_title(app))

    def layer(app) -> bool:
        return f"layer {app.view.layer}/" in heatmap_title(app)

    def head(app) -> bool:
        return ("mean of heads" if app.view.head is None else f"head {app.view.head}") in heatmap_title(app)

    def candidates(app) -> bool:
        title = app.query_one(Distribution).border_title
        return f"top-{app.view.top_k} · temperature {app.view.temperature:.2f}" in title

    def main_screen(app) -> bool:
        return app.screen is app.screen_stack[0]

    return [
        Toggle("f", "f family → masked decoder self", titled("masked decoder")),
        Toggle("f", "f family → encoder self", titled("encoder")),
        *[Toggle("l", "l next layer", layer)] * n_enc,
        Toggle("f", "f family → cross", lambda app: app.view.family == "cross" and layer(app)),
        *[Toggle("l", "l next layer", layer)] * n_dec,
        *[Toggle("L", "L previous layer", layer)] * n_dec,
        *[Toggle("h", "h next head", head)] * (h + 1),
        *[Toggle("H", "H previous head", head)] * (h + 1),
        Toggle("a", "a links on (word links of the rule)", titled("links")),
        Toggle("a", "a links off (raw weights)", titled(unless="links")),
        Toggle(
            "g",
            "g grid on (+ sink flags computed)",
            lambda app: titled("all layers × heads")(app) and app.sinks.key is not None,
        ),
        Toggle("g", "g grid off", titled(unless="all layers")),
        Toggle("i", "i attribution: input×gradient", titled("input × gradient", unless="computing")),
        Toggle("i", "i attribution: integrated gradients", titled("integrated gradients", unless="computing")),
        Toggle("i", "i back to attention", titled(unless="attribution")),
        Toggle("y", "y logit lens on", lambda app: mode("lens")(app) and app.lensed.key is app.decoding),
        Toggle("y", "y logit lens off", mode("dist")),
        Toggle("c", "c reference mode on", mode("ref")),  # teacher-forced once, when the app opened (--ref)
        Toggle("c", "c reference mode off", mode("dist")),
        Toggle("b", "b beam mode on (beam search)", lambda app: mode("beam")(app) and app.beam_steps is not None),
        Toggle("b", "b beam mode off", mode("dist")),
        Toggle("e", "e explain mode on (Eq. 1)", lambda app: mode("explain")(app) and app.explained is not None),
        Toggle("e", "e explain mode off", mode("dist")),
        Toggle("h", "h (setup: head 0)", timed=False),
        Toggle("o", "o head off (greedy re-decoded)", lambda app: app.decoding.ablated is not None),
        Toggle("o", "o head on again", lambda app: app.decoding.ablated is None),
        Toggle("H", "H (setup: mean of heads)", timed=False),
        Toggle("t", "t temperature up", candidates),
        Toggle("T", "T temperature down", candidates),
        Toggle("k", "k one more candidate", candidates),
        Toggle("K", "K one fewer candidate", candidates),
        Toggle("m", "m masks screen (+ positions computed)", lambda app: isinstance(app.screen, ViewsScreen)),
        Toggle("escape", "escape back from masks", main_screen),
        Toggle("question_mark", "? help screen", lambda app: isinstance(app.screen, HelpScreen)),
        Toggle("escape", "escape back from help", main_screen),
    ]


@dataclass
class Sample:
    first: float  # key press → first frame
    compute: float  # model-thread wall s of the jobs the key queued
    compute_cpu: float
    redraw: float  # end of the computation (else the key press) → last frame, wall s
    redraw_cpu: float  # UI-thread CPU s over the same span
    frames: int
    collecting: float  # s of cyclic garbage collection (any thread) within the redraw span


@dataclass
class Clock:
    """Hooks on one app: frames (UI thread), jobs (model thread) and when their results came back."""

    frames: list[tuple[float, float]] = field(default_factory=list)  # (wall, UI-thread CPU) at each frame's end
    jobs: list[tuple[float, float, float]] = field(default_factory=list)  # (wall start, wall end, CPU s)
    returns: list[tuple[float, float]] = field(default_factory=list)  # (wall, UI-thread CPU) when a result arrives
    collections: list[tuple[float, float]] = field(default_factory=list)  # (wall start, wall end)

    def install(self, app) -> None:
        from textual._compositor import CompositorUpdate

        display, submit = app._display, app.submit

        def frame(screen, renderable) -> None:
            display(screen, renderable)
            if renderable is not None and app.is_headless and isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)  # what the terminal driver would encode and write
            self.frames.append((time.perf_counter(), time.thread_time()))

        def timed_submit(job, then) -> None:
            def run():
                w, c = time.perf_counter(), time.thread_time()
                try:
                    return job()
                finally:
                    self.jobs.append((w, time.perf_counter(), time.thread_time() - c))

            def back(result) -> None:
                self.returns.append((time.perf_counter(), time.thread_time()))
                then(result)

            submit(run, back)

        def collected(phase: str, info: dict) -> None:
            if phase == "start":
                collected.start = time.perf_counter()
            else:
                self.collections.append((collected.start, time.perf_counter()))

        app._display, app.submit = frame, timed_submit
        gc.callbacks.append(collected)

    def reset(self) -> None:
        for kept in (self.frames, self.jobs, self.returns, self.collections):
            kept.clear()

    def sample(self, t0: float, c0: float) -> Sample | None:
        if not self.frames:
            return None
        last, last_cpu = self.frames[-1]
        if self.jobs:  # the redraw starts when the last computation ends
            since, since_cpu = max(end for _, end, _ in self.jobs), self.returns[-1][1]
        else:
            since, since_cpu = t0, c0
        return Sample(
            first=self.frames[0][0] - t0,
            compute=sum(end - begin for begin, end, _ in self.jobs),
            compute_cpu=sum(c for *_, c in self.jobs),
            redraw=last - since,
            redraw_cpu=last_cpu - since_cpu,
            frames=len(self.frames),
            collecting=sum(max(min(end, last) - max(begin, since), 0.0) for begin, end in self.collections),
        )


class Profile:
    """Inclusive UI-thread time per part of a redraw, switched on around one key press (--profile)."""

    def __init__(self) -> None:
        self.on = False
        self.spent: dict[str, float] = defaultdict(float)

    def wrap(self, cls: type, method: str, name: Callable[[Any], str]) -> None:
        original = cls.__dict__[method]

        @functools.wraps(original)  # Textual counts a watcher's parameters through __wrapped__
        def timed(obj, *args, **kwargs):
            if not self.on:
                return original(obj, *args, **kwargs)
            start = time.perf_counter()
            try:
                return original(obj, *args, **kwargs)
            finally:
                self.spent[name(obj)] += time.perf_counter() - start

        setattr(cls, method, timed)

    def install(self) -> None:
        from textual._compositor import ChopsUpdate, Compositor, LayoutUpdate
        from textual.screen import Screen
        from textual.widget import Widget

        from tt_cli.tui.app import InspectApp

        for method in ("watch_view", "watch_decoding", "watch_beam_steps", "watch_explained", "watch_compared"):
            self.wrap(InspectApp, method, lambda app, m=method: f"app.{m}")
        self.wrap(Screen, "_refresh_layout", lambda s: "screen layout (reflow)")
        self.wrap(Compositor, "render_update", lambda c: "compositor render_update")
        self.wrap(Widget, "render_lines", lambda w: f"render {type(w).__name__}")
        for cls in (ChopsUpdate, LayoutUpdate):  # a partial and a full frame
            self.wrap(cls, "render_segments", lambda u: "terminal encoding")

    def take(self) -> dict[str, float]:
        spent, self.spent = dict(self.spent), defaultdict(float)
        return spent


def make_loaded() -> tuple[LoadedModel, str]:
    shipped = ROOT / "weights"
    if (shipped / "model.safetensors").is_file():  # loaded as tt inspect loads it
        return load_model(shipped, packed=True), "shipped model (weights/, packed as tt inspect loads it)"
    tokenizer, origin = load_tokenizer(None)
    torch.manual_seed(0)
    model = Transformer(preset("small", vocab_size=tokenizer.vocab_size)).eval()
    return LoadedModel(model, tokenizer, shipped, {}), f"random-init small (weights/ absent), tokenizer {origin}"


Samples = dict[str, list[Sample]]  # toggle name → its presses


def bench(loaded: LoadedModel, repeat: int, profile: Profile | None) -> tuple[Samples, Samples, dict, str]:  # noqa: C901 - a benchmark's measurement loop over every key, read top to bottom
    """(the timed rounds' presses, each key's first press of the warm-up round, the profile, about)."""
    from tt_cli.tui.app import make_app
    from tt_cli.tui.kept import Kept

    samples: Samples = defaultdict(list)
    first: Samples = {}
    spent: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    about: list[str] = []

    async def main() -> None:  # noqa: C901 - a benchmark's measurement loop over every key, read top to bottom
        app = make_app(loaded, SENTENCE, reference=REFERENCE)
        clock = Clock()
        async with app.run_test(size=SIZE) as pilot:

            async def settle() -> None:
                """The model thread idle and two quiet frames' time with nothing left to draw."""
                quiet, start = 0, time.perf_counter()
                while quiet < 2:
                    if time.perf_counter() - start > 900:  # IG on the random-init fallback takes minutes
                        raise SystemExit(
                            f"bench_tui_toggle: the app did not settle ({app.pending} jobs queued, "
                            f"{len(clock.frames)} frames)"
                        )
                    frames = len(clock.frames)
                    await pilot.pause()
                    quiet = quiet + 1 if app.pending == 0 and len(clock.frames) == frames else 0

            await settle()
            await pilot.press("r")  # the whole greedy output on screen: the largest matrices
            await settle()
            clock.install(app)
            d = app.decoding
            cfg = loaded.cfg
            about.append(f"source {len(d.source.tokens)} pieces, output {len(d.steps)} pieces (“{d.original.text}”)")
            rounds = toggles(cfg.h, cfg.n_decoder_layers, cfg.n_encoder_layers)
            for r in range(-1, repeat):  # round -1 warms up (first draws, imports) and is not kept
                # a new Decoding (same content) makes the attribution, lens and explanation be
                # computed again; the sink flags and the beam are asked for once per app: reset them
                app.decoding = dataclasses.replace(app.decoding)
                app.sinks, app._beam_asked = Kept(), False
                await settle()
                for toggle in rounds:
                    clock.reset()
                    if profile is not None:
                        profile.on = toggle.timed and r >= 0
                    t0, c0 = time.perf_counter(), time.thread_time()
                    await pilot.press(toggle.key)
                    await settle()
                    if profile is not None:
                        profile.on = False
                        for part, s in profile.take().items():
                            spent[toggle.name][part] += s
                    if not toggle.shown(app):
                        raise SystemExit(f"bench_tui_toggle: after {toggle.name!r} the app does not show it")
                    s = clock.sample(t0, c0)
                    if s is None:
                        raise SystemExit(f"bench_tui_toggle: {toggle.name!r} drew no frame")
                    if toggle.timed and r >= 0:
                        samples[toggle.name].append(s)
                    elif toggle.timed:
                        first.setdefault(toggle.name, [s])
                print(f"round {r + 1}/{repeat} done", file=sys.stderr)

    asyncio.run(main())
    return samples, first, spent, about[0]


def ms(x: float) -> str:
    return f"{x * 1e3:.1f}"


def report(samples: Samples, spent: dict) -> None:
    print(
        "| key → view | n | computation ms, median (max) | comp. CPU ms | first frame ms | redraw after the "
        "computation ms, median | max | redraw CPU ms, median | max | GC in the redraw ms, max | frames | ≤ 150 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for name, ss in samples.items():
        comp, redraw, cpu = ([getattr(s, f) for s in ss] for f in ("compute", "redraw", "redraw_cpu"))
        med = statistics.median
        met = "yes" if max(redraw) <= BUDGET else ("median only" if med(redraw) <= BUDGET else "**no**")
        computed = f"{ms(med(comp))} ({ms(max(comp))}) | {ms(med(s.compute_cpu for s in ss))}" if max(comp) else "– | –"
        print(
            f"| {name} | {len(ss)} | {computed} | {ms(med(s.first for s in ss))} | {ms(med(redraw))} | "
            f"{ms(max(redraw))} | {ms(med(cpu))} | {ms(max(cpu))} | {ms(max(s.collecting for s in ss))} | "
            f"{med(s.frames for s in ss):.0f} | {met} |"
        )
    if spent:
        print()
        print("Profile: UI-thread ms per press (mean), inclusive; the largest parts")
        print()
        print("| key → view | parts |")
        print("|---|---|")
        for name, parts in spent.items():
            n = len(samples[name])
            top = sorted(parts.items(), key=lambda kv: -kv[1])[:6]
            print(f"| {name} | " + ", ".join(f"{part} {ms(s / n)}" for part, s in top) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="rounds through every key (after one warm-up round)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="also break each redraw down by widget and phase")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    loaded, origin = make_loaded()
    profile = None
    if args.profile:
        profile = Profile()
        profile.install()
    samples, first, spent, about = bench(loaded, args.repeat, profile)
    cfg = loaded.cfg
    print(
        f"{origin}: d_model {cfg.d_model}, h {cfg.h}, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers; "
        f"{about}; {SIZE[0]}×{SIZE[1]}; threads {args.threads}; {args.repeat} rounds"
    )
    print()
    report(samples, spent)
    print()
    print("The warm-up round: each key's first press in the session (first builds of a screen, first imports)")
    print()
    report(first, {})


if __name__ == "__main__":
    main()
