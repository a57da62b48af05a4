"""Where a model's int8 BLEU loss comes from (docs/precision.md, session 25): the model on one test set in fp32, in
int8 as `--precision int8` runs it, and in int8 with some Linear layers put back in fp32 or one part of the
quantization changed. Beam 4, α 0.6, as `tt eval` scores the cards.

    python scripts/int8_ablation.py weights ../shared/data/multi30k/test_2016_flickr.fr \\
        ../shared/data/multi30k/test_2016_flickr.en int8 gen w2 ffn dec enc attn 8bit weights-only fp32

Variants: `int8` (the shipped scheme), `fp32`, a layer group back in fp32 (`gen`: the generator, `w2`: every
W_2, `ffn`: the feed-forward layers, `dec`: the decoder, `enc`: the encoder, `attn`: every attention
projection), `8bit` (fbgemm's activations over 8 bits rather than its reduced 7), `weights-only` (fp32 products on
the int8 model's own weights, dequantized: their rounding alone). One JSON line per variant.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import core.model.fast as fast  # noqa: E402
from core.checkpoint import load_model  # noqa: E402
from core.decode.translate import TranslateOptions, translate_lines  # noqa: E402
from core.evaluate import corpus_scores  # noqa: E402

# The layer groups put back in fp32: a Linear layer's name (as named_modules gives it) → back in fp32?
GROUPS = {
    "int8": lambda name: False,
    "fp32": lambda name: True,
    "gen": lambda name: name == "generator",
    "w2": lambda name: name.endswith("ffn.w_2"),
    "ffn": lambda name: ".ffn." in name,
    "dec": lambda name: name.startswith("decoder_layers."),
    "enc": lambda name: name.startswith("encoder_layers."),
    "attn": lambda name: "attn." in name,
}
VARIANTS = (*GROUPS, "8bit", "weights-only")


def put_back(int8_model: nn.Module, fp32_model: nn.Module, back) -> int:
    """Swap each int8 layer of `int8_model` whose name `back` accepts for a copy of `fp32_model`'s: how many."""
    fp32_layers, swapped = dict(fp32_model.named_modules()), 0
    for parent_name, parent in list(int8_model.named_modules()):
        for name, child in list(parent.named_children()):
            full = f"{parent_name}.{name}" if parent_name else name
            if type(child) is fast.Int8Linear and back(full):
                setattr(parent, name, copy.deepcopy(fp32_layers[full]))
                swapped += 1
    return swapped


def weights_rounded(model: nn.Module) -> nn.Module:
    """A copy of `model` whose Linear weights are the int8 weights `fast_model` makes of them (one scale per row),
    dequantized: fp32 products on them carry the weights' rounding alone."""
    rounded, int8 = copy.deepcopy(model), fast.fast_model(model, "int8")
    with torch.no_grad():
        for name, layer in rounded.named_modules():
            if type(layer) is nn.Linear:
                layer.weight = nn.Parameter(int8.get_submodule(name).weight().dequantize())
    return rounded


def variant_model(fp32_model: nn.Module, variant: str) -> tuple[nn.Module, int]:
    """The model `variant` names and how many of its Linear layers run in fp32."""
    linears = sum(type(m) is nn.Linear for m in fp32_model.modules())
    if variant == "weights-only":
        return weights_rounded(fp32_model), linears
    if variant == "fp32":
        return fp32_model, linears
    model = fast.fast_model(fp32_model, "int8")
    return model, put_back(model, fp32_model, GROUPS.get(variant, GROUPS["int8"]))


def score(loaded, model: nn.Module, sources: list[str], references: list[str]) -> tuple[float, float]:
    hypotheses = [t.text for t in translate_lines(replace(loaded, model=model), sources, TranslateOptions().validate())]
    scores = corpus_scores(hypotheses, [references])
    return scores.bleu, scores.chrf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("src", type=Path)
    ap.add_argument("ref", type=Path)
    ap.add_argument("variants", nargs="+", choices=VARIANTS)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    sources = args.src.read_text(encoding="utf-8").splitlines()
    references = args.ref.read_text(encoding="utf-8").splitlines()
    loaded = load_model(args.model, device="cpu", packed=False)
    for variant in args.variants:
        fast.REDUCE_RANGE = variant != "8bit"  # fbgemm's 7-bit activations, but for the 8-bit variant
        model, in_fp32 = variant_model(loaded.model, variant)
        bleu, chrf = score(loaded, model, sources, references)
        print(json.dumps({"variant": variant, "fp32_layers": in_fp32, "bleu": bleu, "chrf": chrf}), flush=True)


if __name__ == "__main__":
    main()
